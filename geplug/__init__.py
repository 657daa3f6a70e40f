"""geplug: check, resolve and rehearse Ascend NPU configurations on any machine.

The top level stays cheap to import (``geplug products`` must start fast): heavy parts are
loaded on first use through module ``__getattr__``.
"""

from __future__ import annotations

from typing import Any

from geplug.hookspecs import PLUGIN_API, hookimpl

__version__ = "0.1.0"

__all__ = [
    "PLUGIN_API",
    "ConfigError",
    "GeplugError",
    "SessionConfig",
    "__version__",
    "check",
    "current_system",
    "export",
    "get_local_rank_id",
    "get_local_rank_size",
    "get_rank_id",
    "get_rank_size",
    "hookimpl",
    "initialize_system",
    "load_config",
    "mstx",
    "products",
    "resolve",
    "shutdown_system",
]

_LAZY = {
    "ConfigError": "geplug.errors",
    "GeplugError": "geplug.errors",
    "SessionConfig": "geplug.config.model",
    "check": "geplug.config",
    "resolve": "geplug.config",
    "export": "geplug.config",
    "load_config": "geplug.config",
    "initialize_system": "geplug.runtime.api",
    "shutdown_system": "geplug.runtime.api",
    "current_system": "geplug.runtime.api",
    "get_rank_id": "geplug.runtime.rank",
    "get_rank_size": "geplug.runtime.rank",
    "get_local_rank_id": "geplug.runtime.rank",
    "get_local_rank_size": "geplug.runtime.rank",
    "products": "geplug.plugin",
}


def __getattr__(name: str) -> Any:
    if name == "mstx":
        import importlib

        return importlib.import_module("geplug.profiling.mstx")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'geplug' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
