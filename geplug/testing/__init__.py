"""Test support for geplug and for plugin authors.

``geplug.testing`` is an opt-in pytest plugin (``pytest -p geplug.testing`` or
``pytest_plugins = ["geplug.testing"]``); the hooks and fixtures live in
:mod:`geplug.testing.plugin`, which this module pulls in through ``pytest_plugins`` so that
importing ``geplug.testing`` itself needs no pytest (``check_product`` runs without it).
"""

from typing import Any

__all__ = [
    "check_product",
    "installed_products",
    "pytest_plugins",
    "require_product",
    "selected_products",
    "write_distribution",
]

pytest_plugins = ["geplug.testing.plugin"]

_LAZY = {
    "check_product": "geplug.testing.conformance",
    "write_distribution": "geplug.testing.fakedist",
    "installed_products": "geplug.testing.plugin",
    "require_product": "geplug.testing.plugin",
    "selected_products": "geplug.testing.plugin",
}
"""Public name -> its module, imported on first use (``geplug.testing.plugin`` needs pytest;
``check_product`` and ``write_distribution`` do not)."""


def __getattr__(name: str) -> Any:
    import importlib

    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'geplug.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
