"""Plugin loading and the process-wide default manager."""

from __future__ import annotations

from typing import TYPE_CHECKING

from geplug.plugin.manager import (
    BUILTIN_PLUGINS,
    DISABLE_ENV,
    PluginManager,
    PluginNameWarning,
    PluginRecord,
    PluginSkippedWarning,
)

if TYPE_CHECKING:
    from geplug.products.query import ProductRegistry
    from geplug.products.schema import Product

__all__ = [
    "BUILTIN_PLUGINS",
    "DISABLE_ENV",
    "PluginManager",
    "PluginNameWarning",
    "PluginRecord",
    "PluginSkippedWarning",
    "get_manager",
    "get_product",
    "installed_products",
    "plugin_report",
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


def installed_products() -> ProductRegistry:
    """The products of the installed plugins (``geplug.installed_products()``).

    A :class:`~geplug.products.ProductRegistry`: iterate it for the products in name order;
    ``len``, ``in``, ``.names()``, ``.get(name)`` and ``.supporting(capability, value)`` work
    on it. Raises :class:`~geplug.errors.PluginConflictError` when two plugins declare one
    product.
    """
    return get_manager().products()


def get_product(name: str) -> Product:
    """The installed product called ``name``, or declaring the SoC version string ``name``.

    ``geplug.get_product("atlas_a2")`` and ``geplug.get_product("Ascend910B3")`` are the same
    product. Raises :class:`~geplug.errors.UnknownProductError` naming the closest names (or
    saying how to install a product plugin when there is none), or the
    :class:`~geplug.errors.PluginConflictError` when two plugins declare ``name`` (every
    other product stays available).
    """
    return get_manager().products(strict=False).get(name)


def plugin_report() -> list[PluginRecord]:
    """The load report (``geplug plugins``): every plugin loaded, skipped or disabled, why.

    Each :class:`PluginRecord` has the plugin name, its distribution and version, its origin
    (``builtin`` / ``entry point`` / ``registered``), its status, the reason when it was not
    loaded, and the products it declares. Never raises: a product conflict is in
    ``get_manager().conflict``.
    """
    return get_manager().report()
