"""``geplug profile plot``: a timeline and a top-ops chart of one ``PROF_*`` directory.

Needs matplotlib (the optional extra ``geplug[plot]``); imported only here.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from geplug import vocab
from geplug.atomic import create_temp
from geplug.errors import ProfilingError
from geplug.limits import escape_controls, iter_csv
from geplug.profiling.reader import _SUMMARY_NEEDS, _float, output_files, summarize

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


MAX_LANES = 16
"""Op types drawn as their own timeline lane; the rest share an ``other`` lane."""
_TYPE_COLOURS = dict(zip(vocab.TASK_TYPES, ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b",
                                             "#d62728", "#ff7f0e"), strict=True))
"""A colour per task type (:data:`geplug.vocab.TASK_TYPES`, in its order)."""


def _read_tasks(summary: str) -> list[tuple[str, str, float, float]]:
    """(lane key, task type, start, duration) of the first :data:`MAX_TIMELINE_TASKS` tasks."""
    tasks = []
    rows = iter_csv(summary, what="op_summary file", required=_SUMMARY_NEEDS,
                    fail=lambda m: ProfilingError(m, path=summary))
    for i, row in enumerate(rows):
        if i >= MAX_TIMELINE_TASKS:
            break
        start = _float(row["Task Start Time(us)"])
        duration = _float(row["Task Duration(us)"])
        if start is None or duration is None or duration < 0:
            continue  # N/A or damaged times: nothing to draw (the summary counts the task)
        key = row["OP Type"] if row["OP Type"] != "N/A" else row["Op Name"]
        tasks.append((escape_controls(key)[:64], row["Task Type"], start, duration))
    return sorted(tasks, key=lambda t: t[2])


def _collapse_idle(tasks: list[tuple[str, str, float, float]]) -> tuple[
        list[tuple[str, str, float, float]], list[float], float]:
    """Shift tasks so that idle gaps longer than a threshold shrink to it.

    Between steps the simulated device waits for the host for milliseconds while tasks last
    microseconds; drawn to scale, the tasks would be invisible. Returns the shifted tasks, the
    x positions where a gap was collapsed, and the threshold (µs).
    """
    if not tasks:
        return tasks, [], 0.0
    durations = sorted(t[3] for t in tasks)
    gap = max(1.0, 4 * durations[len(durations) // 2])
    shifted, cuts = [], []
    origin = tasks[0][2]
    shift = 0.0
    busy_until = tasks[0][2]
    for key, kind, start, dur in tasks:
        idle = start - busy_until
        if idle > gap:
            shift += idle - gap
            cuts.append(busy_until - origin - shift + idle - gap / 2)
        shifted.append((key, kind, start - origin - shift, dur))
        busy_until = max(busy_until, start + dur)
    return shifted, cuts, gap


def plot(prof_dir: str, out: str, top: int = 15) -> str:
    """Draw the first tasks on a timeline (one lane per op type, idle gaps collapsed) and the
    ops with the most device time; returns ``out``."""
    plt = _matplotlib()
    result = summarize(prof_dir, top=top)
    summary = output_files(prof_dir, "op_summary")[0]  # the first slice holds the first tasks
    tasks, cuts, gap = _collapse_idle(_read_tasks(summary))
    per_lane: dict[str, float] = {}
    for key, _kind, _start, dur in tasks:
        per_lane[key] = per_lane.get(key, 0.0) + dur
    lanes = sorted(per_lane, key=lambda k: -per_lane[k])[:MAX_LANES]
    if len(per_lane) > MAX_LANES:
        lanes.append("other")
    index = {k: i for i, k in enumerate(lanes)}
    bars: dict[tuple[int, str], list[tuple[float, float]]] = {}
    for key, kind, start, dur in tasks:
        lane = index.get(key, len(lanes) - 1)
        bars.setdefault((lane, kind), []).append((start, dur))
    height = max(3.0, 0.35 * len(lanes) + 1.5)
    fig, (ax1, ax2) = plt.subplots(
        2, 1, figsize=(12, height + max(3.0, 0.35 * len(result["top_ops"]) + 1.5)),
        gridspec_kw={"height_ratios": [height, max(3.0, 0.35 * len(result["top_ops"]) + 1.5)]},
        constrained_layout=True)
    span = max((s + d for _k, _t, s, d in tasks), default=1.0)
    min_width = span / 1500  # keep sub-pixel tasks visible
    kinds_seen: set[str] = set()
    for (lane, kind), spans in bars.items():
        colour = _TYPE_COLOURS.get(kind, "#7f7f7f")
        label = kind if kind not in kinds_seen else None
        kinds_seen.add(kind)
        ax1.broken_barh([(s, max(d, min_width)) for s, d in spans], (lane - 0.4, 0.8),
                        facecolors=colour, label=label)
    for x in cuts:
        ax1.axvline(x, color="#999999", linestyle=":", linewidth=0.8)
    ax1.set_yticks(range(len(lanes)))
    ax1.set_yticklabels(lanes)
    ax1.invert_yaxis()
    ax1.set_xlim(0, span * 1.01)
    ax1.set_xlabel(f"device time since the first task (us); dotted lines: idle gaps longer "
                   f"than {gap:.0f} us collapsed")
    ax1.set_title(f"Timeline of the first {len(tasks)} of {result['tasks']} tasks "
                  f"({result['product'] or 'unknown product'})")
    if kinds_seen:
        ax1.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small",
                   title="task type")
    names = [escape_controls(f"{o['name'][:48]} ({o['op_type'][:24]})")
             for o in result["top_ops"]][::-1]
    totals = [o["total_us"] for o in result["top_ops"]][::-1]
    colours = [_TYPE_COLOURS.get(o["task_type"], "#7f7f7f") for o in result["top_ops"]][::-1]
    ax2.barh(names, totals, color=colours)
    for y, (o, total) in enumerate(zip(result["top_ops"][::-1], totals, strict=True)):
        ax2.text(total, y, f" {total:.1f} us, {o['ratio_pct']:.1f}%, x{o['count']}",
                 va="center", fontsize="small")
    ax2.set_xlim(0, max(totals, default=1.0) * 1.3)
    ax2.set_xlabel("total device time (us)")
    ax2.set_title(f"Top {len(names)} ops by device time - {os.path.basename(prof_dir)}")
    folder = os.path.dirname(os.path.abspath(out))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = create_temp(folder, os.path.basename(out))
    try:
        with os.fdopen(fd, "wb") as fh:
            fig.savefig(fh, dpi=100, format="png")
    except (OSError, ValueError) as exc:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise ProfilingError(f"cannot write the plot {out!r}: {exc}", path=out) from None
    finally:
        plt.close(fig)
    os.replace(tmp, out)
    return out
