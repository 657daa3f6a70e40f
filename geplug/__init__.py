"""geplug: check, resolve and rehearse Ascend NPU configurations on any machine.

The top level stays cheap to import (``geplug products`` must start fast): heavy parts are
loaded on first use through module ``__getattr__``. Product queries are
:func:`get_product` (by name or SoC version string), :func:`installed_products` (the
:class:`~geplug.products.ProductRegistry`) and :func:`plugin_report` (what was loaded or
skipped, and why); ``geplug.products`` is the subpackage of product records, not a function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from geplug.hookspecs import PLUGIN_API, hookimpl

if TYPE_CHECKING:  # the static view of the lazy names below
    from geplug import mstx
    from geplug.config import load_config
    from geplug.config.check import check
    from geplug.config.export import export
    from geplug.config.model import SessionConfig
    from geplug.config.problems import Problem
    from geplug.config.resolve import resolve
    from geplug.errors import (
        BackendError,
        ConfigError,
        ConfigWarning,
        GeplugError,
        NotInitializedError,
    )
    from geplug.plugin import get_product, installed_products, plugin_report
    from geplug.products.schema import Product
    from geplug.runtime.api import (
        current_system,
        initialize_system,
        open_device,
        shutdown_system,
    )
    from geplug.runtime.rank import (
        get_local_rank_id,
        get_local_rank_size,
        get_rank_id,
        get_rank_size,
    )
    from geplug.runtime.system import System

__version__: str
"""The installed distribution's version, read once from its metadata (``importlib.metadata``:
the one place the version is written is ``pyproject.toml``)."""

__all__ = [
    "PLUGIN_API",
    "PUBLIC_MODULES",
    "BackendError",
    "ConfigError",
    "ConfigWarning",
    "GeplugError",
    "NotInitializedError",
    "Problem",
    "Product",
    "SessionConfig",
    "System",
    "__version__",
    "check",
    "current_system",
    "export",
    "get_local_rank_id",
    "get_local_rank_size",
    "get_product",
    "get_rank_id",
    "get_rank_size",
    "hookimpl",
    "initialize_system",
    "installed_products",
    "load_config",
    "mstx",
    "open_device",
    "plugin_report",
    "resolve",
    "shutdown_system",
]

PUBLIC_MODULES = (
    "geplug",
    "geplug.hookspecs",
    "geplug.events",
    "geplug.errors",
    "geplug.products",
    "geplug.backend",
    "geplug.testing",
)
"""The public API, declared once: these modules and the names in their ``__all__``. Every
other module of geplug (``geplug.config.*``, ``geplug.plugin.*``, ``geplug.dump.*``, ...) is
internal: usable, but without a compatibility promise between releases; a name it offers
that users need is re-exported here first (docs/architecture.md, "Public API")."""

_LAZY = {
    "BackendError": "geplug.errors",
    "ConfigError": "geplug.errors",
    "ConfigWarning": "geplug.errors",
    "GeplugError": "geplug.errors",
    "NotInitializedError": "geplug.errors",
    "Problem": "geplug.config.problems",
    "Product": "geplug.products.schema",
    "System": "geplug.runtime.system",
    "SessionConfig": "geplug.config.model",
    "check": "geplug.config",
    "resolve": "geplug.config",
    "export": "geplug.config",
    "load_config": "geplug.config",
    "initialize_system": "geplug.runtime.api",
    "shutdown_system": "geplug.runtime.api",
    "open_device": "geplug.runtime.api",
    "current_system": "geplug.runtime.api",
    "get_rank_id": "geplug.runtime.rank",
    "get_rank_size": "geplug.runtime.rank",
    "get_local_rank_id": "geplug.runtime.rank",
    "get_local_rank_size": "geplug.runtime.rank",
    "get_product": "geplug.plugin",
    "installed_products": "geplug.plugin",
    "plugin_report": "geplug.plugin",
}
"""Public name -> the module defining it (imported on first access)."""


def __getattr__(name: str) -> Any:
    """Import a public name on first use (PEP 562), keeping ``import geplug`` cheap."""
    import importlib

    if name == "__version__":
        from importlib import metadata

        try:
            version = metadata.version("geplug")
        except metadata.PackageNotFoundError:  # a source tree that is not installed
            version = "0+unknown"
        globals()["__version__"] = version
        return version
    if name == "mstx":  # the submodule geplug/mstx.py: ``import geplug.mstx`` gives the same
        return importlib.import_module("geplug.mstx")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'geplug' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
