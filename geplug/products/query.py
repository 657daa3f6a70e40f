"""Queries over the installed products: by name, by SoC version string, by capability."""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from geplug.errors import CapabilityError, GeplugError, UnknownProductError
from geplug.products.schema import Product

__all__ = ["ProductRegistry", "capability_value"]


def capability_value(product: Product, capability: str) -> Any:
    """The value at the dotted ``capability`` path of ``product`` (``profiling.aic_metrics``).

    Raises :class:`CapabilityError` naming the path when it does not exist.
    """
    current: Any = product
    walked: list[str] = []
    for part in capability.split("."):
        walked.append(part)
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif attrs.has(type(current)) and part in attrs.fields_dict(type(current)):
            current = getattr(current, part)
        else:
            raise CapabilityError(
                f"unknown capability {capability!r}: {'.'.join(walked)!r} does not exist; "
                "see `geplug describe PRODUCT --json` for the capability paths",
                key=capability,
            )
    return current


def _loose(text: str) -> str:
    return text.lower().replace("-", "_")


@attrs.frozen
class ProductRegistry:
    """The products declared by the loaded plugins, in name order."""

    products: Mapping[str, Product]
    unavailable: Mapping[str, str] = attrs.field(factory=dict)
    """Product name or SoC string -> why it is missing although a plugin declaring it is
    installed (disabled by GEPLUG_DISABLE_PLUGINS, or skipped); filled by the plugin manager."""
    conflicts: Mapping[str, GeplugError] = attrs.field(factory=dict)
    """Product name -> the :class:`~geplug.errors.PluginConflictError` of the two plugins that
    both declare it; such a product is left out and looking it up raises that error."""

    def __iter__(self) -> Iterator[Product]:
        return iter(self.products[name] for name in sorted(self.products))

    def __len__(self) -> int:
        return len(self.products)

    def __contains__(self, name: object) -> bool:
        return name in self.products

    def names(self) -> list[str]:
        """Product names, sorted."""
        return sorted(self.products)

    def get(self, name: str) -> Product:
        """The product called ``name``, or whose SoC version string is ``name``.

        Lookup order: the exact product name, the exact SoC version string (``Ascend910B3``
        is Atlas A2; ``Ascend910B`` without a digit is the old training family, options.md
        §13.1), then the same ignoring case and ``-``/``_`` (``Atlas-A2``, ``ascend910b3``,
        torch's ``Ascend910B4_1``) when that is unambiguous. Unknown names raise
        :class:`UnknownProductError` with the closest names, or saying that the plugin
        declaring it is installed but disabled (``GEPLUG_DISABLE_PLUGINS``) or skipped.
        """
        if not isinstance(name, str):
            raise UnknownProductError(repr(name), [], self.names())
        if name in self.products:
            return self.products[name]
        if name in self.conflicts:
            raise self.conflicts[name]
        owners = [p for p in self if name in p.soc_versions]
        if len(owners) > 1:
            raise UnknownProductError(name, [p.name for p in owners], self.names(),
                                      note=_ambiguous(name, owners))
        if owners:
            return owners[0]
        loose = _loose(name)
        matches = {p.name for p in self.products.values() if _loose(p.name) == loose}
        matches |= {p.name for p in self.products.values()
                    for s in p.soc_versions if _loose(s) == loose}
        if len(matches) == 1:
            return self.products[matches.pop()]
        soc_matches = {s for p in self.products.values() for s in p.soc_versions
                       if _loose(s) == loose}
        if len(soc_matches) == 1 and len(matches) > 1:
            soc = soc_matches.pop()
            owners = [p for p in self if soc in p.soc_versions]
            raise UnknownProductError(name, sorted(matches), self.names(),
                                      note=_ambiguous(soc, owners))
        candidates = list(self.products) + [s for p in self.products.values()
                                            for s in p.soc_versions]
        close = sorted(matches) or difflib.get_close_matches(name, candidates, n=3, cutoff=0.5)
        raise UnknownProductError(name, close, self.names(), note=self._why_missing(name))

    def _why_missing(self, name: str) -> str:
        """Why ``name`` is missing when an installed plugin declares it ("" otherwise)."""
        if name in self.unavailable:
            return self.unavailable[name]
        loose = _loose(name)
        notes = {why for key, why in self.unavailable.items() if _loose(key) == loose}
        return notes.pop() if len(notes) == 1 else ""

    def by_soc_version(self, soc: str) -> Product | None:
        """The product declaring the exact SoC version string ``soc`` (case-sensitive);
        ``None`` when none does. Several declaring it is an :class:`UnknownProductError`
        naming them (the SoC is ambiguous; name the product instead)."""
        found = [p for p in self if soc in p.soc_versions]
        if len(found) > 1:
            raise UnknownProductError(soc, [p.name for p in found], self.names(),
                                      note=_ambiguous(soc, found))
        return found[0] if found else None

    def soc_owners(self) -> dict[str, list[str]]:
        """SoC version string -> the products declaring it (more than one is a conflict)."""
        owners: dict[str, list[str]] = {}
        for product in self:
            for soc in product.soc_versions:
                owners.setdefault(soc, []).append(product.name)
        return owners

    def supporting(self, capability: str, value: Any = True) -> list[Product]:
        """The products that support ``value`` of ``capability``."""
        return [p for p in self if p.supports(capability, value)]


def _ambiguous(soc: str, owners: list[Product]) -> str:
    """The note of an ambiguous SoC lookup: who declares it and what to do."""
    who = " and ".join(f"{p.name} ({p.distribution or 'unknown distribution'})" for p in owners)
    return (f"SoC version {soc!r} is declared by several products: {who}; name the product "
            "instead (e.g. --product " + owners[0].name + "), and have one plugin drop the "
            "SoC string")
