"""``geplug run`` / ``compile`` without --product: a usage error (exit 2) naming the installed
products when several are installed and the config names none, as ``geplug check`` does."""

from __future__ import annotations

import onnx
import pytest
from sim_helpers import overflow_model

from geplug.cli.main import main
from geplug.testing.plugin import installed_products


@pytest.fixture
def model_path(tmp_path):
    if len(installed_products()) < 2:
        pytest.skip("needs several installed products (one is used without --product)")
    path = tmp_path / "m.onnx"
    onnx.save(overflow_model(), path)
    return str(path)


@pytest.mark.parametrize("command", ["run", "compile"])
def test_without_product_is_a_usage_error_listing_the_installed_products(
        command, model_path, capsys):
    assert main([command, model_path]) == 2
    err = capsys.readouterr().err
    assert "name a product with --product P (installed: " in err
    assert all(p.name in err for p in installed_products())
    assert "initialize_system needs product" not in err


def test_soc_version_in_the_config_names_the_product(model_path, tmp_path, capsys):
    product = installed_products()[0]
    config = tmp_path / "s.toml"
    config.write_text(f'soc_version = "{product.soc_versions[0]}"\n')
    assert main(["compile", model_path, "--config", str(config)]) == 0
    assert f"({product.name})" in capsys.readouterr().out
