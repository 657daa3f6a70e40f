"""Turn the declarations collected from plugins into products: conflicts, ``extends``, validation.

Pure functions over ``(plugin name, Declaration)`` pairs; the plugin manager applies the
policy (skip the plugin at fault with a warning, raise one conflict error naming both
distributions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from geplug.errors import CapabilityError
from geplug.products.coherence import did_you_mean
from geplug.products.load import Declaration, build_product, merge_over_base
from geplug.products.schema import Product

__all__ = ["Assembly", "assemble", "find_conflict", "find_conflicts"]

Collected = Sequence[tuple[str, Declaration]]
"""(plugin name, declaration) pairs, in hook call order."""


@attrs.frozen(kw_only=True)
class Assembly:
    """The outcome of :func:`assemble`: the products, or the first plugin that failed."""

    products: Mapping[str, Product] = attrs.field(factory=dict)
    declared: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)
    """plugin name -> the products it declares."""
    failed_plugin: str = ""
    reason: str = ""
    error: CapabilityError | None = None
    """The error that made :attr:`failed_plugin` fail (every key path in ``errors``)."""


def find_conflict(collected: Collected) -> tuple[str, str, str] | None:
    """``(product, first plugin, second plugin)`` for the first product two plugins declare."""
    seen: dict[str, str] = {}
    for plugin_name, decl in collected:
        first = seen.setdefault(decl.name, plugin_name)
        if first != plugin_name:
            return decl.name, first, plugin_name
    return None


def find_conflicts(collected: Collected) -> list[tuple[str, str, str]]:
    """``(product, first plugin, second plugin)`` for every product two plugins declare."""
    seen: dict[str, str] = {}
    found: dict[str, tuple[str, str, str]] = {}
    for plugin_name, decl in collected:
        first = seen.setdefault(decl.name, plugin_name)
        if first != plugin_name and decl.name not in found:
            found[decl.name] = (decl.name, first, plugin_name)
    return list(found.values())


def assemble(collected: Collected, providers: Mapping[str, str]) -> Assembly:
    """Validate every declaration, bases before the cards extending them.

    ``providers`` maps a plugin name to ``"distribution version"``, stored on its products.
    Stops at the first invalid declaration (or unresolvable ``extends``) and names its plugin
    in :attr:`Assembly.failed_plugin`; the caller drops that plugin and assembles again.
    """
    by_name = {d.name: d for _, d in collected}
    merged: dict[str, Declaration] = {}

    def resolve(decl: Declaration, chain: tuple[str, ...]) -> Declaration:
        if decl.name in merged:
            return merged[decl.name]
        if decl.extends:
            if decl.extends in chain or decl.extends == decl.name:
                cycle = " -> ".join((*chain, decl.name, decl.extends))
                raise CapabilityError(
                    f"{decl.path!r}: product.extends: expected a chain ending in a family, "
                    f"got a cycle {cycle}; remove one of the extends",
                    path=decl.path, key="product.extends",
                )
            if decl.extends not in by_name:
                raise CapabilityError(
                    f"{decl.path!r}: product.extends: expected an installed product, got "
                    f"{decl.extends!r} (not installed, or its plugin was skipped)"
                    f"{did_you_mean(decl.extends, by_name)} Install the plugin that declares "
                    "it, or name an installed product (`geplug products`)",
                    path=decl.path, key="product.extends",
                )
            base = resolve(by_name[decl.extends], (*chain, decl.name))
            decl = attrs.evolve(decl, raw=merge_over_base(decl, base), extends="")
        merged[decl.name] = decl
        return decl

    products: dict[str, Product] = {}
    declared: dict[str, list[str]] = {}
    for plugin_name, decl in collected:
        try:
            product = build_product(resolve(decl, ()))
        except CapabilityError as exc:
            return Assembly(failed_plugin=plugin_name, reason=f"invalid capabilities: {exc}",
                            error=exc)
        products[decl.name] = attrs.evolve(
            product, extends=decl.extends, source_path=decl.path,
            distribution=providers.get(plugin_name, ""),
        )
        declared.setdefault(plugin_name, []).append(decl.name)
    return Assembly(products=products, declared={k: tuple(v) for k, v in declared.items()})
