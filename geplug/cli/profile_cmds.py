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
    summary = sub.add_parser(
        "summary", help="top ops, per-type statistics and step times",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Summarise one PROF_* directory: top ops, per-type statistics, step "
                    "times, and device vs host time per step. A directory holding several "
                    "PROF_* directories is refused with the list (name one).",
        epilog="example:\n  geplug profile summary ./prof_out/PROF_000001_20260101000000000_ABCD"
               "EFGHIJKLMNOP\n  geplug profile summary ./prof_out --format json")
    summary.add_argument("dir", metavar="DIR",
                         help="a PROF_* directory or the output containing it")
    summary.add_argument("--format", choices=("text", "json"), default="text",
                         help="text for people, json for scripts (default: text)")
    summary.add_argument("--top", type=_positive, default=10,
                         help="how many ops to list (default: 10)")
    summary.set_defaults(func=_summary)
    plot = sub.add_parser(
        "plot", help="timeline and top-ops chart as a PNG (needs matplotlib)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Draw the device timeline and the top ops of one PROF_* directory.",
        epilog="example:\n  geplug profile plot ./prof_out --out timeline.png")
    plot.add_argument("dir", metavar="DIR",
                      help="a PROF_* directory or the output containing it")
    plot.add_argument("--out", required=True, metavar="FILE.png", help="the image to write")
    plot.add_argument("--top", type=_positive, default=15,
                      help="how many ops the top-ops chart shows (default: 15)")
    plot.set_defaults(func=_plot)
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])


def _one_dir(path: str) -> str:
    """The one ``PROF_*`` directory under ``path``; several is an error listing them (never
    a guess: the newest is not necessarily the run the user means)."""
    from geplug.errors import ProfilingError
    from geplug.profiling.reader import find_prof_dirs

    dirs = find_prof_dirs(path)
    if len(dirs) > 1:
        listing = "\n  ".join(dirs)
        raise ProfilingError(f"{path!r} holds {len(dirs)} PROF_* directories; name the one to "
                             f"read:\n  {listing}", path=path)
    return dirs[0]


def device_host_split(result: dict[str, Any]) -> dict[str, float] | None:
    """Device time per step (sum of task durations / steps) and the rest of the iteration
    time (host: Python, copies, launches), when the directory has step times."""
    times = [s["iteration_time_us"] for s in result.get("steps", [])
             if s.get("iteration_time_us") is not None]
    if not times:
        return None
    per_step = round(result["total_time_us"] / len(times), 3)
    iteration = round(sum(times) / len(times), 3)
    return {"device_time_per_step_us": per_step, "iteration_time_us": iteration,
            "host_time_per_step_us": round(max(iteration - per_step, 0.0), 3)}


def _summary(args: argparse.Namespace) -> int:
    from geplug.profiling.reader import render_text, summarize

    prof_dir = _one_dir(args.dir)
    result = summarize(prof_dir, top=args.top)
    split = device_host_split(result)
    if args.format == "json":
        print(json.dumps({**result, **(split or {})}, indent=1))
        return 0
    print(f"read {prof_dir}")
    print(render_text(result))
    if split:
        print(f"\nDevice vs host, per step: device {split['device_time_per_step_us']:.3f} us "
              f"(the ops' simulated task time; `geplug run` prints this), host "
              f"{split['host_time_per_step_us']:.3f} us (the rest of the iteration time "
              f"{split['iteration_time_us']:.3f} us: Python, copies, launches)")
    return 0


def _plot(args: argparse.Namespace) -> int:
    from geplug.profiling.plot import plot

    out = plot(_one_dir(args.dir), args.out, top=args.top)
    print(f"wrote {out}")
    return 0
