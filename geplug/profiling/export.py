"""The shutdown pass: raw data -> ``mindstudio_profiler_output/`` CSVs, timeline and ``analyze/``.

One streaming pass over the task records writes op_summary, task_time, aicpu, l2_cache and the
device part of the timeline together, while op_statistic is aggregated per (OP Type, Core Type)
- bounded by the number of op types. Every file is written under a temporary name and renamed
(complete or absent). Column lists and value conventions: formats.md §6.4-6.7.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from geplug.profiling import aicpu, l2, step_trace
from geplug.profiling import api_collector as api_mod
from geplug.profiling import hccl as hccl_mod
from geplug.profiling import markers as markers_mod
from geplug.profiling.export_samples import CsvFile, host_files, sampler_files
from geplug.profiling.layout import (
    ANALYZE,
    OUTPUT_DIR,
    AtomicFile,
    dtype_name,
    fmt,
    fmt_list,
    fmt_ns,
    format_name,
    shapes_text,
    write_json,
)
from geplug.profiling.pmu import PmuModel, TaskWork, pmu_columns
from geplug.profiling.task_collector import OpSig, TaskRow
from geplug.profiling.timeline import TimelineWriter

if TYPE_CHECKING:
    from geplug.profiling.session import ProfilingSession

__all__ = ["OP_STATISTIC_HEADER", "TASK_TIME_HEADER", "export", "op_summary_header"]

_SUMMARY_BASE = [
    "Device_id", "Model ID", "Task ID", "Stream ID", "Op Name", "OP Type", "OP State",
    "Task Type", "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)", "Block Dim",
    "Mix Block Dim", "HF32 Eligible", "Input Shapes", "Input Data Types", "Input Formats",
    "Output Shapes", "Output Data Types", "Output Formats", "Context ID",
]
OP_STATISTIC_HEADER = ["Device_id", "OP Type", "Core Type", "Count", "Total Time(us)",
                       "Min Time(us)", "Avg Time(us)", "Max Time(us)", "Ratio(%)"]
TASK_TIME_HEADER = ["Device_id", "kernel_name", "kernel_type", "stream_id", "task_id",
                    "task_time(us)", "task_start(us)", "task_stop(us)"]
NA = "N/A"


def op_summary_header(pmu: list[str]) -> list[str]:
    """op_summary columns: the base list (Model Name / Infer ID omitted) then the PMU block."""
    return [*_SUMMARY_BASE, *pmu]


def _static_cols(op: OpSig, level: str) -> list[str]:
    """OP Type .. Task Type (l1), with l0 and communication N/A conventions."""
    if level != "l1":
        return [NA, NA, NA]
    return [op.op_type, NA if op.comm else "static", op.task_type]


def _shape_cols(op: OpSig, level: str) -> list[str]:
    """HF32 Eligible .. Output Formats (l1 only; N/A for l0 and communication rows)."""
    if level != "l1" or op.comm:
        return [NA] * 7
    return [
        "NO",  # HF32 Eligible: the simulator never runs float32 matmuls as HF32
        shapes_text(op.input_shapes) or NA,
        fmt_list([dtype_name(d) for d in op.input_dtypes]) or NA,
        fmt_list([format_name(f) for f in op.input_formats]) or NA,
        shapes_text(op.output_shapes) or NA,
        fmt_list([dtype_name(d) for d in op.output_dtypes]) or NA,
        fmt_list([format_name(f) for f in op.output_formats]) or NA,
    ]


_CACHE_MAX = 65536
"""Bound of the per-(signature, duration) caches of the export pass."""


class _RowMaker:
    """op_summary rows with the parts that repeat per op signature cached (bounded)."""

    def __init__(self, dev: str, level: str, pmu: PmuModel | None) -> None:
        self.dev = dev
        self.level = level
        self.pmu = pmu
        self._head: dict[int, tuple[list[str], list[str]]] = {}
        self._pmu: dict[tuple[int, float], list[str]] = {}

    def row(self, t: TaskRow) -> list[str]:
        """One op_summary row."""
        op = t.op
        parts = self._head.get(op.sig)
        if parts is None:
            comm = op.comm
            head = [self.dev, str(op.model_id), NA if comm else str(op.task_id),
                    NA if comm else str(op.stream_id), op.name, *_static_cols(op, self.level)]
            tail = [str(op.block_dim) if self.level == "l1" else "0",
                    NA,  # Mix Block Dim: no mixed sub-tasks in the model
                    *_shape_cols(op, self.level),
                    NA]  # Context ID: no sub-tasks
            parts = self._head[op.sig] = (head, tail)
        row = [*parts[0], fmt_ns(t.start_ns) + "\t", fmt_ns(t.duration_ns), fmt_ns(t.wait_ns),
               *parts[1]]
        if self.pmu is not None:
            key = (op.sig, t.duration_us)
            values = self._pmu.get(key)
            if values is None:
                if len(self._pmu) >= _CACHE_MAX:
                    self._pmu.clear()
                values = self._pmu[key] = self.pmu.values(TaskWork(
                    task_type=op.task_type, duration_us=t.duration_us, flops=op.flops,
                    bytes_moved=op.bytes_moved, cube_fraction=op.cube_fraction,
                    block_dim=op.block_dim, dtype=op.dtype,
                ))
            row.extend(values)
        return row


def export(session: ProfilingSession) -> list[str]:
    """Write every summary file of ``session``; returns the paths written."""
    eff = session.eff
    product = session.product
    out = os.path.join(session.root, OUTPUT_DIR)
    ts = session.ts14
    dev = str(session.device_id)
    written: list[str] = []

    def path(stem: str, ext: str = "csv") -> str:
        return os.path.join(out, f"{stem}_{ts}.{ext}")

    level = eff.task_level
    pmu_cols = pmu_columns(product, eff)
    pmu = PmuModel(product, pmu_cols) if pmu_cols else None
    stats: dict[tuple[str, str], list[float]] = {}
    with ExitStack() as stack:
        timeline = TimelineWriter(stack.enter_context(AtomicFile(path("msprof", "json"))),
                                  clock_mhz=product.compute.clock_mhz)
        written.append(path("msprof", "json"))
        summary = task_time = aicpu_csv = l2_csv = None
        if level != "off":
            summary = CsvFile(stack, path("op_summary"), op_summary_header(pmu_cols), written)
            task_time = CsvFile(stack, path("task_time"), TASK_TIME_HEADER, written)
        if eff.aicpu:
            aicpu_csv = CsvFile(stack, path("aicpu"), aicpu.HEADER, written)
        if eff.l2:
            l2_csv = CsvFile(stack, path("l2_cache"), l2.header(product.profiling.l2), written)
        maker = _RowMaker(dev, level, pmu)
        if session.record_tasks:
            sigs = session.tasks.load_sigs()
            for t in session.tasks.rows(sigs, session.base_ns):
                op = t.op
                if summary is not None and task_time is not None:
                    summary.writerow(maker.row(t))
                    task_time.writerow([
                        dev, op.name, op.task_type if level == "l1" else NA,
                        NA if op.comm else str(op.stream_id), NA if op.comm else str(op.task_id),
                        fmt_ns(t.duration_ns), fmt_ns(t.start_ns), fmt_ns(t.stop_ns),
                    ])
                    key = (op.op_type if level == "l1" else NA,
                           op.task_type if level == "l1" else NA)
                    s = stats.get(key)
                    d = t.duration_us
                    if s is None:
                        stats[key] = [1, d, d, d]
                    else:
                        s[0] += 1
                        s[1] += d
                        s[2] = min(s[2], d)
                        s[3] = max(s[3], d)
                if aicpu_csv is not None and aicpu.is_aicpu(t):
                    aicpu_csv.writerow(aicpu.row(session.device_id, t))
                if l2_csv is not None and l2.wants(t):
                    l2_csv.writerow(l2.row(session.device_id, t, product.profiling.l2))
                if op.comm:
                    if eff.hccl or eff.task_level != "off":
                        timeline.comm_task(t, session.device_id)
                elif level != "off":
                    timeline.kernel(t, session.device_id, level)
        if session.api is not None:
            for level_name, name, start, dur in session.api.calls():
                timeline.api(level_name, name, start, dur)
        if session.markers is not None:
            for m in session.markers.markers():
                timeline.marker(m)
        sampler_files(session, stack, path, timeline, written)
        host_files(session, stack, path, timeline, written)
        timeline.close()
    if stats:
        total = sum(s[1] for s in stats.values()) or 1.0
        _write_rows(path("op_statistic"), OP_STATISTIC_HEADER, (
            [dev, k[0], k[1], str(int(n)), fmt(tot), fmt(lo), fmt(tot / n), fmt(hi),
             fmt(100 * tot / total)]
            for k, (n, tot, lo, hi) in sorted(stats.items(), key=lambda kv: -kv[1][1])
        ), written)
    if session.steps is not None:
        _write_rows(path("step_trace"), step_trace.HEADER, session.steps.rows(session.device_id),
                    written)
    if session.api is not None:
        _write_rows(path("api_statistic"), api_mod.HEADER, session.api.rows(), written)
    if session.markers is not None:
        _write_rows(path("msprof_tx"), markers_mod.HEADER,
                    session.markers.rows(session.device_id), written)
    if session.comm is not None and (eff.hccl or session.comm.ops):
        _write_rows(path("communication_statistic"), hccl_mod.HEADER,
                    session.comm.statistic_rows(session.device_id), written)
        link = _link(session)
        rank, size = _rank(session)
        analyze = os.path.join(session.root, ANALYZE)
        _write_json(os.path.join(analyze, "communication.json"),
                    session.comm.communication(link), written)
        _write_json(os.path.join(analyze, "communication_matrix.json"),
                    session.comm.matrix(link, rank, size), written)
    for p in written:
        session.guard.register(p, ageable=False)
    return written


def _write_rows(path: str, header: list[str], rows: Iterator[list[str]],
                written: list[str]) -> None:
    with AtomicFile(path, newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    written.append(path)


def _write_json(path: str, data: Any, written: list[str]) -> None:
    write_json(path, data)
    written.append(path)


def _link(session: ProfilingSession) -> str:
    targets = [t.upper() for t in session.product.profiling.interconnect_targets]
    return "HCCS" if "HCCS" in targets else "PCIE"


def _rank(session: ProfilingSession) -> tuple[int, int]:
    info = session.system.rank
    rank = getattr(info, "rank_id", 0) or 0
    size = getattr(info, "rank_size", 1) or 1
    return int(rank), int(size)
