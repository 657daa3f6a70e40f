"""``geplug profile plot``: a timeline and a top-ops chart of one ``PROF_*`` directory.

Needs matplotlib (the optional extra ``geplug[plot]``); imported only here.
"""

from __future__ import annotations

import csv
import os
from typing import Any

from geplug.errors import ProfilingError
from geplug.profiling.reader import output_file, summarize

__all__ = ["MAX_TIMELINE_TASKS", "plot"]

MAX_TIMELINE_TASKS = 5000
"""The timeline panel shows the first tasks only (a picture of a million bars helps no one)."""


def _matplotlib() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise ProfilingError(
            "geplug profile plot needs matplotlib, which is not installed: "
            "pip install 'geplug[plot]'"
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot(prof_dir: str, out: str, top: int = 15) -> str:
    """Draw the first tasks per op type on a timeline and the top ops; returns ``out``."""
    plt = _matplotlib()
    result = summarize(prof_dir, top=top)
    summary = output_file(prof_dir, "op_summary")
    assert summary is not None
    bars: dict[str, list[tuple[float, float]]] = {}
    origin: float | None = None
    with open(summary, encoding="utf-8", newline="") as fh:
        for i, row in enumerate(csv.DictReader(fh)):
            if i >= MAX_TIMELINE_TASKS:
                break
            start = float(row["Task Start Time(us)"].strip())
            origin = start if origin is None else min(origin, start)
            key = row["OP Type"] if row["OP Type"] != "N/A" else row["Op Name"]
            bars.setdefault(key, []).append((start, float(row["Task Duration(us)"])))
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(12, 8), constrained_layout=True)
    lanes = sorted(bars)
    for lane, key in enumerate(lanes):
        ax1.broken_barh([(s - (origin or 0.0), d) for s, d in bars[key]], (lane - 0.4, 0.8))
    ax1.set_yticks(range(len(lanes)))
    ax1.set_yticklabels(lanes)
    ax1.set_xlabel("device time since first task (us)")
    ax1.set_title(f"Timeline (first {min(MAX_TIMELINE_TASKS, result['tasks'])} tasks)")
    names = [o["name"] for o in result["top_ops"]][::-1]
    totals = [o["total_us"] for o in result["top_ops"]][::-1]
    ax2.barh(names, totals)
    ax2.set_xlabel("total device time (us)")
    ax2.set_title(f"Top {len(names)} ops - {os.path.basename(prof_dir)}")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    folder = os.path.dirname(os.path.abspath(out))
    tmp = os.path.join(folder, "." + os.path.basename(out) + ".tmp.png")
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.replace(tmp, out)
    return out
