"""``geplug new-card`` and ``geplug validate-card``: the card vendor's kit.

``new-card NAME --extends FAMILY`` writes an installable plugin package; ``validate-card
PATH`` checks a ``capabilities.toml`` before it is installed, exactly as loading would, and
prints every error once (with did-you-mean) and every plausibility warning.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_parser"]

EXIT_OK, EXIT_FINDING, EXIT_USAGE = 0, 1, 2


def add_parser(subparsers: Any) -> None:
    """Register ``new-card`` and ``validate-card``."""
    p = subparsers.add_parser(
        "new-card", help="write a new card plugin package that extends a product family",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Write a complete, installable geplug plugin package for a card that "
                    "extends an installed product: pyproject.toml, capabilities.toml (every "
                    "key of the base listed, commented, with its value and the base's PMU "
                    "column blocks), hooks, README and a conformance test.",
        epilog="example:\n  geplug new-card acme_b9 --extends atlas_a2\n"
               "  pip install -e ./acme_b9 && geplug products && pytest acme_b9/tests",
    )
    p.add_argument("name", metavar="NAME", help="the card's product name (lower case, digits, "
                   "'_'), e.g. acme_b9")
    p.add_argument("--extends", metavar="FAMILY",
                   help="the installed product the card is a variant of, e.g. atlas_a2 "
                        "(required; without it the installed families are listed)")
    p.add_argument("--dir", metavar="DIR", help="where to write the package (default: ./NAME); "
                   "must not exist")
    p.set_defaults(func=_new_card)

    p = subparsers.add_parser(
        "validate-card", help="check a card's capabilities.toml before installing it",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Validate a capabilities.toml against the installed products exactly as "
                    "loading it would (its base must be installed): every error at once, each "
                    "once, with did-you-mean for keys and values; then plausibility warnings "
                    "(per-core counts changed but whole-chip peaks inherited, SoC strings "
                    "colliding ignoring case, inherited text naming the base). Exits 1 on an "
                    "error.",
        epilog="example:\n  geplug validate-card acme_b9/geplug_acme_b9/capabilities.toml",
    )
    p.add_argument("path", metavar="PATH", help="the capabilities.toml to check")
    p.set_defaults(func=_validate_card)


def _new_card(args: argparse.Namespace) -> int:
    from geplug.cli.products import no_products_message
    from geplug.plugin import get_manager
    from geplug.products.scaffold import write_card

    manager = get_manager()
    registry = manager.products(strict=False)
    if not len(registry):
        print(f"geplug: error: {no_products_message(manager)}", file=sys.stderr)
        return EXIT_USAGE
    if args.extends is None:
        families = [p.name for p in registry if not p.extends]
        print("geplug: error: name the family the card extends with --extends FAMILY "
              f"(installed: {', '.join(families)})", file=sys.stderr)
        return EXIT_USAGE
    base = registry.get(args.extends)  # UnknownProductError: exit 2 with close names
    if args.name in registry:
        print(f"geplug: error: {args.name!r} is already an installed product "
              f"({registry.get(args.name).distribution}); choose another NAME", file=sys.stderr)
        return EXIT_USAGE
    written = write_card(args.name, base, args.dir or args.name)
    root = written[0].parent
    print(f"wrote {len(written)} files into {root}/:")
    for path in written:
        print(f"  {path.relative_to(root)}")
    print(f"next: pip install -e {root} && geplug products && pytest {root}/tests")
    return EXIT_OK


def _validate_card(args: argparse.Namespace) -> int:
    import warnings

    from geplug.plugin import get_manager
    from geplug.products.vet import vet_card

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an installed plugin's trouble is not this card's
        registry = get_manager().products(strict=False)
    report = vet_card(args.path, list(registry))
    label = report.name or args.path
    for key, message in report.errors:
        print(f"  error: {key}: {message}" if key else f"  error: {message}")
    for key, message in report.warnings:
        print(f"  warning: {key}: {message}")
    verdict = "valid" if report.ok else "invalid"
    print(f"{label}: {verdict} ({len(report.errors)} error(s), {len(report.warnings)} "
          f"warning(s)) in {args.path}")
    return EXIT_OK if report.ok else EXIT_FINDING
