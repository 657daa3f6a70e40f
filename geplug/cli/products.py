"""``geplug products``, ``geplug describe PRODUCT`` and ``geplug plugins``.

Cheap to import (only argparse at module level): the CLI imports every command module at
start, and ``geplug products`` must start fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from geplug.plugin import PluginManager

__all__ = ["NO_PRODUCTS", "add_parser", "no_products_message"]

NO_PRODUCTS = (
    "no product plugin is installed (or enabled), so geplug knows no product. Install one, e.g. "
    "`pip install geplug-atlas-a2` (from a checkout: `pip install -e plugins/atlas_a2`); "
    "`geplug plugins` shows what was found and why anything was skipped"
)
"""What every product command says when discovery finds no product."""

EXIT_OK, EXIT_FINDING, EXIT_USAGE = 0, 1, 2
SOC_WIDTH = 40
"""``geplug products`` wraps the SoC versions column at this width."""


def add_parser(subparsers: Any) -> None:
    """Register the three commands on the CLI's sub-parser set."""
    p = subparsers.add_parser(
        "products", help="list the installed products",
        description="List the products declared by the installed plugins.",
    )
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(func=cmd_products)

    p = subparsers.add_parser(
        "describe", help="show every capability of a product",
        description="Show every capability of a product, grouped by capabilities.toml "
                    "section. PRODUCT is a product name or a SoC version string.",
    )
    p.add_argument("product", metavar="PRODUCT", nargs="?", default=None,
                   help="e.g. atlas_a2 or Ascend910B3 (without it: the installed ones are "
                        "listed)")
    p.add_argument("--json", action="store_true", help="print the full record as JSON")
    p.add_argument("--diff", action="store_true",
                   help="for a card that extends a family: only the keys it overrides, with "
                        "the base's and the card's value")
    p.set_defaults(func=cmd_describe)

    p = subparsers.add_parser(
        "plugins", help="show loaded, skipped and disabled plugins",
        description="Show every plugin found (built-in and entry point): loaded, skipped "
                    "(and why) or disabled by GEPLUG_DISABLE_PLUGINS. Exits 1 when a plugin "
                    "was skipped or two plugins conflict.",
    )
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(func=cmd_plugins)


def _dump_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def _table(rows: Sequence[tuple[str, ...]], wrap: Mapping[int, int] | None = None) -> str:
    """Aligned columns; ``wrap`` maps a column index to a width its cells wrap at (on ", ")."""
    lines: list[tuple[str, ...]] = []
    for row in rows:
        cells = [_wrap(c, (wrap or {}).get(i)) for i, c in enumerate(row)]
        height = max(len(c) for c in cells)
        lines += [tuple(c[k] if k < len(c) else "" for c in cells) for k in range(height)]
    widths = [max(len(r[i]) for r in lines) for i in range(len(lines[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in lines
    ) + "\n"


def _wrap(text: str, width: int | None) -> list[str]:
    """``text`` as lines of at most ``width`` characters, broken after ", " (never inside)."""
    if width is None or len(text) <= width:
        return [text]
    lines = [""]
    for part in text.split(", "):
        candidate = f"{lines[-1]}, {part}" if lines[-1] else part
        if lines[-1] and len(candidate) + 1 > width:
            lines[-1] += ","
            lines.append(part)
        else:
            lines[-1] = candidate
    return lines


def no_products_message(manager: PluginManager) -> str:
    """:data:`NO_PRODUCTS`, naming the plugins ``GEPLUG_DISABLE_PLUGINS`` blocked, if any."""
    from geplug.plugin import DISABLE_ENV

    disabled = sorted(r.name for r in manager.report() if r.status == "disabled")
    if not disabled:
        return NO_PRODUCTS
    return (f"{NO_PRODUCTS}. Note: {DISABLE_ENV} blocks {', '.join(disabled)}; unset it, or "
            "remove names from it, to load them")


def cmd_products(args: argparse.Namespace) -> int:
    """``geplug products [--json]``: one line per product; exit 1 when there is none, a
    plugin was skipped (its warning says why) or two plugins declare one product (that one
    is left out and named in an error; every other product is listed)."""
    from geplug.plugin import get_manager
    from geplug.products.jsonable import product_summary

    manager = get_manager()
    products = list(manager.products(strict=False))
    if args.json:
        _dump_json([product_summary(p) for p in products])
    if manager.conflict is not None:  # the others are listed; the conflicting one is not
        print(f"geplug: error: {manager.conflict}", file=sys.stderr)
    if not products and manager.conflict is None:
        print(f"geplug: {no_products_message(manager)}", file=sys.stderr)
        return EXIT_FINDING
    if not args.json and products:
        rows = [("NAME", "DISPLAY NAME", "FAMILY", "SOC VERSIONS", "INITIALIZE_SYSTEM",
                 "DISTRIBUTION")]
        rows += [
            (p.name, p.display_name, p.family_id, ", ".join(p.soc_versions),
             "yes" if p.runtime.initialize_system else "no", p.distribution or "—")
            for p in products
        ]
        sys.stdout.write(_table(rows, wrap={3: SOC_WIDTH}))
    skipped = [r for r in manager.report() if r.status == "skipped"]
    findings = skipped or manager.conflict is not None
    return EXIT_FINDING if findings else EXIT_OK  # the products listed, and a finding


def cmd_describe(args: argparse.Namespace) -> int:
    """``geplug describe PRODUCT [--json]``: every capability of one product."""
    from geplug.plugin import get_manager
    from geplug.products.describe import describe_product
    from geplug.products.jsonable import to_jsonable

    manager = get_manager()
    registry = manager.products(strict=False)
    if not len(registry):
        print(f"geplug: error: {no_products_message(manager)}", file=sys.stderr)
        return EXIT_USAGE
    if args.product is None:
        print("geplug: error: name a product: geplug describe PRODUCT (installed: "
              f"{', '.join(registry.names())})", file=sys.stderr)
        return EXIT_USAGE
    product = registry.get(args.product)  # UnknownProductError -> exit 2 with close names
    if getattr(args, "diff", False):
        from geplug.products.describe import describe_diff

        if not product.extends:
            print(f"geplug: error: {product.name!r} extends no product (it is a family); "
                  "--diff shows what a card overrides of its base", file=sys.stderr)
            return EXIT_USAGE
        sys.stdout.write(describe_diff(product, registry.get(product.extends)))
        return EXIT_OK
    if args.json:
        _dump_json(to_jsonable(product))
    else:
        sys.stdout.write(describe_product(product, registry))
    return EXIT_OK


def cmd_plugins(args: argparse.Namespace) -> int:
    """``geplug plugins [--json]``: the load report; exit 1 if a plugin was skipped, two
    plugins conflict, or ``GEPLUG_DISABLE_PLUGINS`` names a plugin that does not exist."""
    import warnings

    from geplug.plugin import get_manager
    from geplug.plugin.timing import SlowPluginWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # the report below names every skipped plugin
        manager = get_manager()
        report = manager.report()
    slow = [str(w.message) for w in caught if isinstance(w.message, SlowPluginWarning)]
    conflict = manager.conflict
    skipped = [r for r in report if r.status == "skipped"]
    if args.json:
        _dump_json({
            "plugins": [r.to_json() for r in report],
            "conflict": str(conflict) if conflict else None,
            "warnings": list(manager.unknown_disabled),
        })
    else:
        rows = [("NAME", "STATUS", "ORIGIN", "DISTRIBUTION", "VERSION", "LOAD", "PROVIDES")]
        for r in report:
            provides = ", ".join(r.products) or ", ".join(
                h.removeprefix("geplug_") for h in r.hooks) or "—"
            load = f"{r.load_seconds * 1000:.0f} ms" if r.status == "loaded" else "—"
            rows.append((r.name, r.status, r.origin, r.distribution or "—", r.version or "—",
                         load, provides))
        sys.stdout.write(_table(rows))
        for r in report:
            if r.reason:
                print(f"\n{r.name} ({r.provider}) {r.status}: {r.reason}")
        if not any(r.products for r in report):
            print(f"\n{no_products_message(manager)}")
        for message in slow:  # names the plugin, the time and the threshold
            print(f"\n{message}")
    if conflict is not None:
        print(f"geplug: error: {conflict}", file=sys.stderr)
    for message in manager.unknown_disabled:  # a typo in GEPLUG_DISABLE_PLUGINS
        print(f"geplug: warning: {message}", file=sys.stderr)
    findings = skipped or conflict is not None or manager.unknown_disabled
    return EXIT_FINDING if findings else EXIT_OK
