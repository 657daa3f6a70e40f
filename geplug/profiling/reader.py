"""Read a ``PROF_*`` directory back: locate its files and summarise them (``geplug profile``).

Everything is streamed (op_summary rows are aggregated per op name, bounded by the graph), so
a summary of a million-task run needs no more memory than a small one.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Iterator
from typing import Any

from geplug.errors import ProfilingError
from geplug.limits import MAX_JSON_SIDE_BYTES, escape_controls, iter_csv, read_bytes
from geplug.profiling.layout import OUTPUT_DIR, PATTERNS

__all__ = ["find_prof_dirs", "output_file", "output_files", "render_text", "summarize"]


def find_prof_dirs(path: str) -> list[str]:
    """``path`` itself when it is a ``PROF_*`` directory, else the ones directly inside it."""
    path = os.path.abspath(path)
    if not os.path.isdir(path):
        what = "is not a directory" if os.path.exists(path) else "does not exist"
        raise ProfilingError(
            f"profiling directory {path!r} {what}; pass a PROF_* directory or the "
            "profiling output directory that contains one", path=path,
        )
    if PATTERNS["prof_dir"].match(os.path.basename(path)):
        return [path]
    found = sorted(
        os.path.join(path, d) for d in os.listdir(path)
        if PATTERNS["prof_dir"].match(d) and os.path.isdir(os.path.join(path, d))
    )
    if not found:
        raise ProfilingError(
            f"no PROF_* directory in {path!r}: run with profiling_mode on (and its output set "
            "to this directory) first, or pass the PROF_* directory itself", path=path,
        )
    return found


def output_file(prof_dir: str, stem: str, ext: str = "csv") -> str | None:
    """The ``mindstudio_profiler_output/{stem}_{ts14}.{ext}`` file, or ``None``."""
    out = os.path.join(prof_dir, OUTPUT_DIR)
    if not os.path.isdir(out):
        return None
    prefix = stem + "_"
    for name in sorted(os.listdir(out)):
        rest = name[len(prefix):]
        if name.startswith(prefix) and rest.endswith("." + ext) and rest[:-len(ext) - 1].isdigit():
            return os.path.join(out, name)
    return None


def output_files(prof_dir: str, stem: str) -> list[str]:
    """Every part of a CSV that msprof may slice (op_summary): the single
    ``{stem}_{ts14}.csv``, or its ``{stem}_slice_{n}_{ts14}.csv`` slices in slice order
    (formats.md §6.1); ``[]`` when there is neither."""
    single = output_file(prof_dir, stem)
    if single is not None:
        return [single]
    out = os.path.join(prof_dir, OUTPUT_DIR)
    if not os.path.isdir(out):
        return []
    pattern = re.compile(re.escape(stem) + r"_slice_(\d+)_\d{14}\.csv")
    found = [(int(m[1]), name) for name in os.listdir(out) if (m := pattern.fullmatch(name))]
    return [os.path.join(out, name) for _, name in sorted(found)]


_SUMMARY_NEEDS = ("Op Name", "OP Type", "Task Type", "Task Start Time(us)", "Task Duration(us)")
"""The op_summary columns the summary and the plot read (formats.md §6.4)."""
_STATISTIC_NEEDS = ("OP Type", "Core Type", "Count", "Total Time(us)", "Avg Time(us)",
                    "Ratio(%)")
_STEP_NEEDS = ("Iteration ID", "Model ID", "Iteration Time(us)", "FP to BP Time(us)")
MAX_SUMMARY_OPS = 1_000_000
"""Distinct op names one op_summary may hold (bounded by the graph; bounds memory)."""


def _summary_rows(paths: list[str]) -> Iterator[dict[str, str]]:
    """The rows of op_summary, slice after slice."""
    for path in paths:
        yield from iter_csv(path, what="op_summary file", fail=_fail(path),
                            required=_SUMMARY_NEEDS)


def _float(value: str) -> float | None:
    """A finite number, or ``None`` (``N/A``, text, ``inf``/``nan``)."""
    try:
        number = float(value.strip())
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _fail(path: str) -> Callable[[str], ProfilingError]:
    def fail(message: str) -> ProfilingError:
        return ProfilingError(f"{message}; pass a PROF_* directory written by geplug or msprof",
                              path=path)
    return fail


def _read_rows(path: str | None, required: tuple[str, ...],
               convert: Callable[[dict[str, str]], dict[str, Any]]) -> list[dict[str, Any]]:
    """Every row of an optional summary CSV, converted; a malformed file is a clear error."""
    if path is None:
        return []
    rows = iter_csv(path, what="summary file", fail=_fail(path), required=required)
    try:
        return [convert(row) for row in rows]
    except (KeyError, ValueError, TypeError, OverflowError) as exc:
        raise ProfilingError(
            f"{escape_controls(path)!r} is not a readable msprof summary "
            f"({type(exc).__name__}: {escape_controls(str(exc))[:200]}); "
            "pass a PROF_* directory written by geplug or msprof", path=path,
        ) from None


def summarize(prof_dir: str, top: int = 10) -> dict[str, Any]:
    """Top ops, per-type statistics and step times of one ``PROF_*`` directory."""
    info: dict[str, Any] = {}
    for dev in sorted(os.listdir(prof_dir)):
        if PATTERNS["device_dir"].match(dev) and os.path.isdir(os.path.join(prof_dir, dev)):
            for name in os.listdir(os.path.join(prof_dir, dev)):
                if PATTERNS["device_info"].match(name):
                    path = os.path.join(prof_dir, dev, name)
                    try:
                        info = json.loads(read_bytes(path, limit=MAX_JSON_SIDE_BYTES,
                                                     what="device info", fail=_fail(path)))
                    except (ProfilingError, ValueError, RecursionError):
                        info = {}  # the product name is only shown; the summary still works
                    if not isinstance(info, dict) or not isinstance(info.get("product"), str):
                        info = {}
    result: dict[str, Any] = {"dir": prof_dir, "product": info.get("product", ""),
                              "tasks": 0, "total_time_us": 0.0, "top_ops": [], "op_types": [],
                              "steps": []}
    summaries = output_files(prof_dir, "op_summary")
    summary = summaries[0] if summaries else None
    dbs = sorted(n for n in os.listdir(prof_dir) if PATTERNS["db"].match(n))
    if summary is None and dbs:
        raise ProfilingError(
            f"{escape_controls(prof_dir)!r} holds the msprof database "
            f"{escape_controls(dbs[0])!r} but no mindstudio_profiler_output/op_summary_*.csv "
            "(a DB-only export): geplug profile reads the CSV summaries of a text export; "
            "export those with msprof, or read the database with msprof-analyze",
            path=prof_dir,
        )
    if summary is None:
        raise ProfilingError(
            f"{prof_dir!r} has no mindstudio_profiler_output/op_summary_*.csv: the run had "
            "task_time off, or collection stopped before the summaries were written",
            path=prof_dir,
        )
    ops: dict[str, list[Any]] = {}
    for row in _summary_rows(summaries):
        d = _float(row["Task Duration(us)"]) or 0.0
        entry = ops.get(row["Op Name"])
        if entry is None:
            if len(ops) >= MAX_SUMMARY_OPS:
                raise ProfilingError(
                    f"{escape_controls(summary)!r} names more than {MAX_SUMMARY_OPS} distinct "
                    "ops (the limit, docs/limits.md); this is not an op_summary of one model",
                    path=summary)
            ops[row["Op Name"]] = [row["OP Type"], row["Task Type"], 1, d, d]
        else:
            entry[2] += 1
            entry[3] += d
            entry[4] = max(entry[4], d)
        result["tasks"] += 1
        result["total_time_us"] += d
    total = result["total_time_us"] or 1.0
    result["total_time_us"] = round(result["total_time_us"], 3)  # printed like every time
    result["top_ops"] = [
        {"name": name, "op_type": t, "task_type": k, "count": n, "total_us": round(tot, 3),
         "avg_us": round(tot / n, 3), "max_us": round(mx, 3),
         "ratio_pct": round(100 * tot / total, 2)}
        for name, (t, k, n, tot, mx) in sorted(ops.items(), key=lambda kv: -kv[1][3])[:top]
    ]
    result["op_types"] = _read_rows(output_file(prof_dir, "op_statistic"), _STATISTIC_NEEDS,
                                    lambda r: {
        "op_type": r["OP Type"], "core_type": r["Core Type"], "count": int(r["Count"]),
        "total_us": float(r["Total Time(us)"]), "avg_us": float(r["Avg Time(us)"]),
        "ratio_pct": float(r["Ratio(%)"])})
    result["steps"] = _read_rows(output_file(prof_dir, "step_trace"), _STEP_NEEDS, lambda r: {
        "iteration": int(r["Iteration ID"]), "model_id": int(r["Model ID"]),
        "iteration_time_us": _float(r["Iteration Time(us)"]),
        "fp_to_bp_us": _float(r["FP to BP Time(us)"])})
    return result


def render_text(result: dict[str, Any]) -> str:
    """The human-readable form of :func:`summarize`."""
    lines = [f"{os.path.basename(result['dir'])}  product={result['product'] or '?'}  "
             f"tasks={result['tasks']}  device time={result['total_time_us']:.3f} us", ""]
    lines.append("Top ops by total device time")
    lines.append(f"  {'op':<28} {'type':<16} {'count':>7} {'total(us)':>12} {'avg(us)':>10} "
                 f"{'ratio':>7}")
    for o in result["top_ops"]:
        lines.append(f"  {o['name'][:28]:<28} {o['op_type'][:16]:<16} {o['count']:>7} "
                     f"{o['total_us']:>12.3f} {o['avg_us']:>10.3f} {o['ratio_pct']:>6.2f}%")
    if result["op_types"]:
        lines += ["", "Per op type"]
        lines.append(f"  {'op type':<20} {'core':<16} {'count':>7} {'total(us)':>12} "
                     f"{'avg(us)':>10} {'ratio':>7}")
        for t in result["op_types"]:
            lines.append(f"  {t['op_type'][:20]:<20} {t['core_type'][:16]:<16} {t['count']:>7} "
                         f"{t['total_us']:>12.3f} {t['avg_us']:>10.3f} {t['ratio_pct']:>6.2f}%")
    if result["steps"]:
        times = [s["iteration_time_us"] for s in result["steps"]
                 if s["iteration_time_us"] is not None]
        lines += ["", f"Steps: {len(result['steps'])}"]
        if times:
            lines.append(f"  iteration time (us): min {min(times):.3f}  "
                         f"avg {sum(times) / len(times):.3f}  max {max(times):.3f}")
        for s in result["steps"][:10]:
            fb = "N/A" if s["fp_to_bp_us"] is None else f"{s['fp_to_bp_us']:.3f}"
            it = "N/A" if s["iteration_time_us"] is None else f"{s['iteration_time_us']:.3f}"
            lines.append(f"  iteration {s['iteration']:>4} (model {s['model_id']}): "
                         f"{it} us, FP to BP {fb} us")
        if len(result["steps"]) > 10:
            lines.append(f"  ... {len(result['steps']) - 10} more")
    return "\n".join(escape_controls(line) for line in lines)  # names from the files
