"""The shutdown pass: raw data -> ``mindstudio_profiler_output/`` CSVs, timeline and ``analyze/``.

One streaming pass over the task records writes op_summary, task_time, aicpu, l2_cache and the
device part of the timeline together, while op_statistic is aggregated per (OP Type, Core Type)
- bounded by the number of op types. Every file is written under a temporary name and renamed
(complete or absent). Column lists and value conventions: formats.md §6.4-6.7.
"""

from __future__ import annotations

import contextlib
import csv
import os
import socket
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from geplug.errors import ProfilingError
from geplug.profiling import aicpu, l2, overlap, step_trace
from geplug.profiling import api_collector as api_mod
from geplug.profiling import hccl as hccl_mod
from geplug.profiling import markers as markers_mod
from geplug.profiling.analyzer_db import write_analyzer_db
from geplug.profiling.export_samples import CsvFile, host_files, sampler_files
from geplug.profiling.forked import ForkedJob, can_fork
from geplug.profiling.layout import (
    ANALYZE,
    OUTPUT_DIR,
    AtomicFile,
    dtype_name,
    fmt,
    fmt_list,
    format_name,
    quoted_shapes,
    us_to_ns,
    write_json,
)
from geplug.profiling.memcpy import write_copies
from geplug.profiling.memory_records import write_memory
from geplug.profiling.msprof_db import API_TYPES, MSTX_EVENT_TYPES, MsprofDb
from geplug.profiling.pmu import PmuModel, pmu_columns
from geplug.profiling.sliced_csv import SlicedCsv
from geplug.profiling.task_collector import OpSig
from geplug.profiling.task_export import TaskPass, csv_line
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
        quoted_shapes(op.input_shapes),
        fmt_list([dtype_name(d) for d in op.input_dtypes]) or NA,
        fmt_list([format_name(f) for f in op.input_formats]) or NA,
        quoted_shapes(op.output_shapes),
        fmt_list([dtype_name(d) for d in op.output_dtypes]) or NA,
        fmt_list([format_name(f) for f in op.output_formats]) or NA,
    ]


def export(session: ProfilingSession) -> list[str]:
    """Write every summary file of ``session`` and its msprof database; returns the paths."""
    eff = session.eff
    product = session.product
    out = os.path.join(session.root, OUTPUT_DIR)
    ts = session.ts14
    written: list[str] = []

    def path(stem: str, ext: str = "csv") -> str:
        return os.path.join(out, f"{stem}_{ts}.{ext}")

    level = eff.task_level
    pmu_cols = pmu_columns(product, eff)
    pmu = PmuModel(product, pmu_cols) if pmu_cols else None
    db_path = os.path.join(session.root, f"msprof_{ts}.db")
    job: ForkedJob | None = None
    db: MsprofDb | None = None
    if _parallel(session):
        # the database in a child process, the text files here: the same rows either way
        job = ForkedJob("the msprof database", db_path,
                        lambda: _write_db(session, db_path, pmu, pmu_cols))
    else:
        db = MsprofDb(db_path, device_id=session.device_id)
    try:
        with ExitStack() as stack:
            timeline = TimelineWriter(stack.enter_context(AtomicFile(path("msprof", "json"))),
                                      clock_mhz=product.compute.clock_mhz)
            written.append(path("msprof", "json"))
            summary = task_time = None
            if level != "off":
                summary = stack.enter_context(SlicedCsv(
                    out, "op_summary", ts, csv_line(op_summary_header(pmu_cols)) + "\n",
                    written))
                task_time = CsvFile(stack, path("task_time"), TASK_TIME_HEADER, written)
            tasks = TaskPass(session, summary=summary,
                             task_time=task_time.handle if task_time else None,
                             timeline=timeline, db=db, pmu=pmu, pmu_cols=pmu_cols)
            if eff.aicpu:
                aicpu_csv = CsvFile(stack, path("aicpu"), aicpu.HEADER, written)
                tasks.extra.append(lambda t: aicpu_csv.writerow(aicpu.row(session.device_id, t))
                                   if aicpu.is_aicpu(t) else None)
            if eff.l2:
                l2_csv = CsvFile(stack, path("l2_cache"), l2.header(product.profiling.l2),
                                 written)
                mode = product.profiling.l2
                tasks.static.append((l2_csv.handle, lambda t: l2.row(session.device_id, t, mode)
                                     if l2.wants(t) else None))
            tasks.run()
            _copies(session, db, timeline, tasks)
            overlap.write_track(timeline, tasks.compute, tasks.comm)
            _api(session, db, timeline)
            if session.markers is not None:
                _markers(session, db, timeline)
            if session.steps is not None:
                step_trace.write_track(timeline, session.steps)
            sampler_files(session, stack, path, timeline, written)
            write_memory(session, stack, path, timeline, db, written)
            host_files(session, stack, path, timeline, written)
            timeline.close()
        if db is not None:
            _finish_db(session, db, tasks)
            written.append(db.commit())
        _summaries(session, tasks, path, written)
    except BaseException:
        if db is not None:
            db.abort()
        if job is not None:
            with contextlib.suppress(ProfilingError):
                job.wait()  # never leave the child running (it finishes or cleans up)
        raise
    failure: ProfilingError | None = None
    if job is not None:
        try:
            written.append(job.wait())
        except ProfilingError as exc:
            failure = exc  # the text files are complete: register them, then report
    for p in written:
        session.guard.register(p, ageable=False)
    if failure is not None:
        raise failure
    return written


def _summaries(session: ProfilingSession, tasks: TaskPass, path: Callable[..., str],
               written: list[str]) -> None:
    """The files written after the task pass: op_statistic, step_trace, api_statistic,
    msprof_tx, communication_statistic and ``analyze/``."""
    eff = session.eff
    dev = str(session.device_id)
    stats = tasks.stats
    if stats:
        total = sum(s[1] for s in stats.values()) or 1.0
        _write_rows(path("op_statistic"), OP_STATISTIC_HEADER, (
            [dev, k[0], k[1], str(int(n)), fmt(tot), fmt(lo), fmt(tot / n), fmt(hi),
             fmt(100 * tot / total)]
            for k, (n, tot, lo, hi) in sorted(stats.items(), key=lambda kv: -kv[1][1])
        ), written)
    if session.steps is not None:
        with AtomicFile(path("step_trace"), newline="") as fh:
            session.steps.write_csv(fh, session.device_id)
        written.append(path("step_trace"))
    if session.api is not None:
        _write_rows(path("api_statistic"), api_mod.HEADER, session.api.rows(), written)
    if session.markers is not None:
        _write_rows(path("msprof_tx"), markers_mod.HEADER,
                    session.markers.rows(session.device_id), written)
    analyze = os.path.join(session.root, ANALYZE)
    comm_json = matrix_json = None
    comm_files = session.comm is not None and (eff.hccl or bool(session.comm.ops))
    if session.comm is not None and comm_files:
        link = session.link_type()
        rank, size = session.rank_info()
        comm_json = session.comm.communication(link)
        matrix_json = session.comm.matrix(link, rank, size)
    written.append(write_analyzer_db(
        os.path.join(analyze, "communication_analyzer.db"),
        overlap.per_step(tasks.compute, tasks.comm, session.step_times), comm_json,
        matrix_json))
    if session.comm is not None and comm_files:
        _write_rows(path("communication_statistic"), hccl_mod.HEADER,
                    session.comm.statistic_rows(session.device_id), written)
        _write_json(os.path.join(analyze, "communication.json"), comm_json, written)
        _write_json(os.path.join(analyze, "communication_matrix.json"), matrix_json, written)


PARALLEL_MIN_TASKS = 100_000
"""Task records from which the database is written by a forked worker beside the text files
(smaller exports are quicker in one process). Tests lower it to check both paths agree."""


def _parallel(session: ProfilingSession) -> bool:
    """Whether to write the database in a forked worker (a large run, fork safe here)."""
    if not session.record_tasks or not can_fork():
        return False
    log = session.tasks.tasks
    log.flush()
    return log.flushed >= PARALLEL_MIN_TASKS


def _write_db(session: ProfilingSession, db_path: str, pmu: PmuModel | None,
              pmu_cols: list[str]) -> str:
    """The whole msprof database of ``session`` (the worker's part); returns its path."""
    db = MsprofDb(db_path, device_id=session.device_id)
    try:
        tasks = TaskPass(session, summary=None, task_time=None, timeline=None, db=db, pmu=pmu,
                         pmu_cols=pmu_cols)
        tasks.run()
        _copies(session, db, None, tasks)
        _api(session, db, None)
        if session.markers is not None:
            _markers(session, db, None)
        write_memory(session, None, lambda stem: "", None, db, [])
        _finish_db(session, db, tasks)
        return db.commit()
    except BaseException:
        db.abort()
        raise


def _api(session: ProfilingSession, db: MsprofDb | None,
         timeline: TimelineWriter | None) -> None:
    """The host API calls: CANN timeline events and CANN_API rows (either may be None)."""
    if session.api is None:
        return
    api_rows = []
    for level_name, name, start, dur in session.api.calls():
        if timeline is not None:
            timeline.api(level_name, name, start, dur)
        if db is not None:
            api_rows.append((start, start + dur, API_TYPES.get(level_name, 5000),
                             (session.pid << 32) | 2, None, db.sid(name)))
            if len(api_rows) >= 65536:
                db.add_api_rows(api_rows)
                api_rows = []
    if db is not None:
        db.add_api_rows(api_rows)


def _copies(session: ProfilingSession, db: MsprofDb | None, timeline: TimelineWriter | None,
            tasks: TaskPass) -> None:
    """The host<->device copies (MEMCPY_ASYNC tasks after every other task's globalTaskId);
    the session's device time span then covers them too."""
    write_copies(session.copies, first_gid=tasks.count, device_id=session.device_id,
                 pid=session.pid, db=db, timeline=timeline)
    span = session.copies.span()
    if span is not None:
        tasks.first_ns = span[0] if tasks.first_ns is None else min(tasks.first_ns, span[0])
        tasks.last_ns = max(tasks.last_ns, span[1])


def _finish_db(session: ProfilingSession, db: MsprofDb, tasks: TaskPass) -> None:
    """STEP_TIME and the session / device / host tables."""
    product = session.product
    start_ns = tasks.first_ns if tasks.first_ns is not None else int(
        session.start_time * 1e9)
    st = session.step_times.tolist()
    db.add_steps((st[i], st[i + 1], st[i + 2]) for i in range(0, len(st), 3))
    db.add_info(npu_name=(product.soc_versions or (product.name,))[0],
                host_uid=str(uuid.getnode()), host_name=socket.gethostname(),
                rank_id=session.rank_id(), start_ns=start_ns,
                end_ns=max(tasks.last_ns, start_ns), freq_mhz=product.compute.clock_mhz)


def _markers(session: ProfilingSession, db: MsprofDb | None,
             timeline: TimelineWriter | None) -> None:
    """Every marker: its MsTx timeline event and its MSTX_EVENTS row (either may be None)."""
    assert session.markers is not None
    rows: list[tuple[Any, ...]] = []
    for m in session.markers.markers():
        if timeline is not None:
            timeline.marker(m)
        if db is None:
            continue
        start = us_to_ns(m["start"])
        is_range = m["end"] is not None
        end = us_to_ns(m["end"]) if is_range else start
        tid = (int(m["pid"]) << 32) | int(m["tid"])
        rows.append((start, end, MSTX_EVENT_TYPES["start/end" if is_range else "marker"],
                     int(m["id"]), 0, db.sid(m["message"]), tid, tid, db.sid(m["domain"]),
                     4294967295))
        if len(rows) >= 65536:
            db.add_mstx(rows)
            rows = []
    if db is not None:
        db.add_mstx(rows)


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


