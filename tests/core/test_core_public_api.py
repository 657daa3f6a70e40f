"""The top-level Python API, used the way a user does: ``import geplug``."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import geplug
from geplug.errors import UnknownProductError
from geplug.plugin import PluginRecord
from geplug.products import Product, ProductRegistry
from geplug.testing.samples import declaring_plugin, minimal_toml


@pytest.fixture
def one_product(use_manager, write_toml) -> None:
    use_manager(cardplug=declaring_plugin(write_toml(minimal_toml("my_card", ("MySoC1",)))))


def test_get_product_by_name(one_product) -> None:
    product = geplug.get_product("my_card")
    assert isinstance(product, Product) and product.name == "my_card"


def test_get_product_by_soc_version_string(one_product) -> None:
    assert geplug.get_product("MySoC1").name == "my_card"


def test_get_product_unknown_name_names_the_closest(one_product) -> None:
    with pytest.raises(UnknownProductError, match="did you mean 'my_card'"):
        geplug.get_product("my_crad")


def test_get_product_without_products_says_how_to_install(use_manager) -> None:
    use_manager()
    with pytest.raises(UnknownProductError, match="pip install"):
        geplug.get_product("atlas_a2")


def test_installed_products_is_the_registry(one_product) -> None:
    registry = geplug.installed_products()
    assert isinstance(registry, ProductRegistry)
    assert [p.name for p in registry] == ["my_card"]


def test_plugin_report_names_plugins_with_distribution_and_products(one_product) -> None:
    report = geplug.plugin_report()
    assert all(isinstance(r, PluginRecord) for r in report)
    card = next(r for r in report if r.name == "cardplug")
    assert (card.status, card.distribution, card.products) == ("loaded", "dist-cardplug",
                                                               ("my_card",))


def test_products_is_the_subpackage_not_a_function() -> None:
    importlib.import_module("geplug.products")
    assert "products" not in geplug.__all__
    assert geplug.products.__name__ == "geplug.products"


@pytest.mark.parametrize("name", geplug.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(geplug, name) is not None


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'get_prodcut'"):
        geplug.get_prodcut  # noqa: B018


def test_import_geplug_mstx_and_the_attribute_are_one_module() -> None:
    module = importlib.import_module("geplug.mstx")
    assert geplug.mstx is module
    assert module.mark is importlib.import_module("geplug.profiling.mstx").mark


def test_mstx_attribute_in_a_fresh_interpreter_is_the_submodule() -> None:
    code = ("import geplug; lazy = geplug.mstx; import geplug.mstx as m; "
            "assert lazy is m and callable(m.range_start), m")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stderr


def test_import_geplug_loads_no_plugin_and_no_numpy() -> None:
    code = ("import sys, geplug; print(sorted(m for m in ('numpy', 'geplug.plugin', "
            "'geplug.products') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "[]"


def test_version_comes_from_the_distribution_metadata() -> None:
    from importlib import metadata

    assert geplug.__version__ == metadata.version("geplug")
    source = (importlib.import_module("geplug").__file__ or "")
    assert '__version__ = "' not in Path(source).read_text(encoding="utf-8")
