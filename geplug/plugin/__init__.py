"""Plugin loading and the process-wide default manager."""

from __future__ import annotations

from typing import TYPE_CHECKING

from geplug.plugin.manager import (
    BUILTIN_PLUGINS,
    DISABLE_ENV,
    PluginManager,
    PluginRecord,
    PluginSkippedWarning,
)

if TYPE_CHECKING:
    from geplug.products.query import ProductRegistry

__all__ = [
    "BUILTIN_PLUGINS",
    "DISABLE_ENV",
    "PluginManager",
    "PluginRecord",
    "PluginSkippedWarning",
    "get_manager",
    "products",
    "reset_manager",
]

_default: PluginManager | None = None


def get_manager() -> PluginManager:
    """The process-wide manager, loaded on first use (built-ins, then entry points)."""
    global _default
    if _default is None:
        _default = PluginManager().load()
    return _default


def reset_manager(manager: PluginManager | None = None) -> None:
    """Replace (or drop, to reload on next use) the process-wide manager; used by tests."""
    global _default
    _default = manager


def products() -> ProductRegistry:
    """The installed products (a :class:`~geplug.products.ProductRegistry`)."""
    return get_manager().products()
