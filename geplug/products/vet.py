"""Vet a card's ``capabilities.toml`` before it is installed (``geplug validate-card PATH``).

The card is validated exactly as the plugin manager would validate it once installed (the
same :func:`~geplug.products.assemble.assemble` over the installed declarations plus this
one), so what this accepts loads, and what it refuses is refused at load with the same
words. On top: a name or SoC string that clashes with an installed product (also ignoring
case), and the plausibility warnings of :func:`~geplug.products.coherence.plausibility`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import attrs

from geplug.errors import CapabilityError
from geplug.products.assemble import assemble
from geplug.products.coherence import plausibility
from geplug.products.load import Declaration, read_declaration
from geplug.products.schema import Product

__all__ = ["CardReport", "vet_card"]

CARD_PLUGIN = "<card under validation>"


@attrs.frozen(kw_only=True)
class CardReport:
    """What :func:`vet_card` found: ``errors`` and ``warnings`` as (key path, message)."""

    path: str
    name: str = ""
    product: Product | None = None
    errors: tuple[tuple[str, str], ...] = ()
    warnings: tuple[tuple[str, str], ...] = ()

    @property
    def ok(self) -> bool:
        """No error: the card would load once installed."""
        return not self.errors


def _strip_prefix(message: str, path: str, key: str) -> str:
    """``message`` without a leading ``'PATH': KEY: `` (the report names both already)."""
    for prefix in (f"{path!r}: {key}: ", f"{path!r}: "):
        if message.startswith(prefix):
            return message[len(prefix):]
    return message


def _same_file(a: str, b: str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def vet_card(path: str | Path, installed: Iterable[Product]) -> CardReport:
    """Every error and warning of the card at ``path`` against the ``installed`` products.

    A card that is itself installed (same file) is compared with the others only.
    """
    path = str(path)
    try:
        decl = read_declaration(path)
    except CapabilityError as exc:
        return CardReport(path=path, errors=exc.errors)
    others = [p for p in installed if not _same_file(p.source_path, path)]
    errors: list[tuple[str, str]] = []
    clash = next((p for p in others if p.name == decl.name), None)
    if clash is not None:
        errors.append(("product.name", f"{decl.name!r} is already declared by "
                       f"{clash.distribution or clash.source_path}; choose another name "
                       "(two plugins declaring one product are refused together)"))
    collected: list[tuple[str, Declaration]] = []
    for other in others:
        if other.name != decl.name and other.source_path:
            collected.append((other.name, read_declaration(other.source_path)))
    collected.append((CARD_PLUGIN, decl))
    assembly = assemble(collected, {})
    if assembly.failed_plugin == CARD_PLUGIN:
        cause = assembly.error
        found = list(cause.errors) if cause is not None else [("", assembly.reason)]
        errors += [(key, _strip_prefix(message, decl.path, key)) for key, message in found]
        return CardReport(path=path, name=decl.name, errors=tuple(dict.fromkeys(errors)))
    product = assembly.products.get(decl.name)
    if product is None:  # an installed declaration failed first: say so, do not guess
        return CardReport(path=path, name=decl.name, errors=(
            ("", f"an installed plugin's declaration is invalid ({assembly.reason}); "
                 "see `geplug plugins`"),))
    base = next((p for p in others if p.name == decl.extends), None)
    for other in others:
        exact = sorted(set(other.soc_versions) & set(product.soc_versions))
        if exact:
            errors.append(("product.soc_versions", f"{exact} also declared by {other.name}: "
                           "SoC strings must be unique across installed products"))
    folded = [w for w in plausibility(decl.raw, product, base, others)
              if "differs only in case" in w[1]]
    if folded:  # lookups ignore case: an ambiguous SoC is an error, not a style note
        errors += folded
    warnings = [w for w in plausibility(decl.raw, product, base, others) if w not in folded]
    return CardReport(path=path, name=decl.name, product=product if not errors else None,
                      errors=tuple(dict.fromkeys(errors)), warnings=tuple(warnings))
