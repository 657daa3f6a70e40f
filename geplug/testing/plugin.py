"""pytest plugin: fixtures over the installed products, shared by geplug and vendors.

- ``product``: parametrised over every installed product (tests run once per product that
  the environment has; skipped when none is installed).
- ``@pytest.mark.product_capability("profiling.aic_metrics", "MemoryAccess")``: limits the
  ``product`` parametrisation to products supporting that value.
- ``fresh_manager``: a freshly loaded :class:`~geplug.plugin.PluginManager`, installed as the
  process-wide manager for the test and dropped afterwards.
- :func:`require_product`: the named product, or a skip when it is not installed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

__all__ = ["require_product"]


def _installed_products() -> list[Any]:
    import warnings

    from geplug.plugin import PluginManager

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(PluginManager().load().products())


def require_product(name: str) -> Any:
    """The installed product ``name``; skips the calling test when it is not installed."""
    for product in _installed_products():
        if product.name == name:
            return product
    pytest.skip(f"product {name!r} is not installed in this environment")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "product_capability(capability, value=True): parametrise `product` only over products "
        "supporting value of the dotted capability",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "product" not in metafunc.fixturenames:
        return
    products = _installed_products()
    for marker in metafunc.definition.iter_markers("product_capability"):
        capability = marker.args[0]
        value = marker.args[1] if len(marker.args) > 1 else marker.kwargs.get("value", True)
        products = [p for p in products if p.supports(capability, value)]
    if not products:
        metafunc.parametrize(
            "product",
            [pytest.param(None, marks=pytest.mark.skip(reason="no matching product installed"))],
        )
        return
    metafunc.parametrize("product", products, ids=[p.name for p in products])


@pytest.fixture
def fresh_manager() -> Iterator[Any]:
    """A newly loaded plugin manager, also the process-wide one for this test."""
    from geplug.plugin import PluginManager, reset_manager

    manager = PluginManager().load()
    reset_manager(manager)
    yield manager
    reset_manager(None)
