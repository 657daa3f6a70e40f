"""``geplug profile summary DIR`` and ``geplug profile plot DIR --out FILE.png``."""

from __future__ import annotations

import argparse
import json
from typing import Any

__all__ = ["add_parser"]


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of ops >= 1, got {text!r}")
    return value


def add_parser(subparsers: Any) -> None:
    """Add the ``profile`` command and its sub-commands."""
    parser = subparsers.add_parser(
        "profile", help="read a PROF_* profiling directory: summary, plot",
        description="Summarise or plot the PROF_* directory a profiled run wrote.",
    )
    sub = parser.add_subparsers(dest="profile_command", metavar="SUBCOMMAND")
    summary = sub.add_parser("summary", help="top ops, per-type statistics and step times")
    summary.add_argument("dir", metavar="DIR",
                         help="a PROF_* directory or the output containing it")
    summary.add_argument("--format", choices=("text", "json"), default="text")
    summary.add_argument("--top", type=_positive, default=10,
                         help="how many ops to list (10)")
    summary.set_defaults(func=_summary)
    plot = sub.add_parser("plot", help="timeline and top-ops chart as a PNG (needs matplotlib)")
    plot.add_argument("dir", metavar="DIR",
                      help="a PROF_* directory or the output containing it")
    plot.add_argument("--out", required=True, metavar="FILE.png", help="the image to write")
    plot.add_argument("--top", type=_positive, default=15,
                      help="how many ops the top-ops chart shows (15)")
    plot.set_defaults(func=_plot)
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])


def _summary(args: argparse.Namespace) -> int:
    from geplug.profiling.reader import find_prof_dirs, render_text, summarize

    results = [summarize(d, top=args.top) for d in find_prof_dirs(args.dir)]
    if args.format == "json":
        print(json.dumps(results[0] if len(results) == 1 else results, indent=1))
    else:
        print("\n\n".join(render_text(r) for r in results))
    return 0


def _plot(args: argparse.Namespace) -> int:
    from geplug.profiling.plot import plot
    from geplug.profiling.reader import find_prof_dirs

    dirs = find_prof_dirs(args.dir)
    out = plot(dirs[-1], args.out, top=args.top)
    print(f"wrote {out}" + (f" (newest of {len(dirs)} PROF_* directories)" if len(dirs) > 1
                            else ""))
    return 0
