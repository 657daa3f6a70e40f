"""The block-formatted export writers equal a straightforward per-record reference."""

from __future__ import annotations

import csv
import io
import json
import sqlite3

from geplug.profiling import step_trace
from geplug.profiling.rawlog import RawLog
from geplug.profiling.step_trace import HEADER, StepTraceCollector, write_track
from geplug.profiling.storage import StorageGuard
from geplug.profiling.timeline import TimelineWriter

T0 = 1_700_000_000_000_000_123


def _steps(tmp_path, count: int = 9, every: int = 3, drift: int = 7) -> StepTraceCollector:
    """Two models, steps with and without fp/bp tasks (``every``-th step: none) and with a
    communication task; step ``s`` lasts ``20_000 + drift * s`` ns."""
    guard = StorageGuard(str(tmp_path), str(tmp_path), 0)
    log = RawLog(str(tmp_path), "training_trace", 0, guard, slice_bytes=1 << 20)
    steps = StepTraceCollector(log, "", "")
    t = T0
    for step in range(count):
        for model in (1, 2):
            steps.on_bound(model, step, "begin", t)
            if step % every:  # every third step has no task: FP/BP are N/A
                steps.on_task(model, "a", t + 1001, 2_345, False)
                steps.on_task(model, "ar", t + 4_000, 777, True)
                steps.on_task(model, "b", t + 5_003, 10_001 + drift * step, False)
            t += 20_000 + drift * step
            steps.on_bound(model, step, "end", t)
    log.close()
    return steps


def _reference_track(timeline: TimelineWriter, steps: StepTraceCollector) -> None:
    """One TimelineWriter.span per event (the dict-and-json path)."""
    for s in steps.spans():
        n, model = s["step"] + 1, int(s["model"])
        fp, bp, end, prev = s["fp"], s["bp"], s["end"], s["prev"]
        first = prev if prev is not None else (fp if fp is not None else s["begin"])
        args = {"Iteration ID": n, "Model ID": model}
        span = timeline.span
        span("Step Trace", model, f"Model {model}", f"Iteration {n}", first, end, args)
        if prev is not None and fp is not None and fp >= prev:
            span("Step Trace", model, f"Model {model}", f"Data_aug Bound {n}", prev, fp, args)
        if fp is not None and bp is not None and bp >= fp:
            span("Step Trace", model, f"Model {model}", f"FP_BP Time {n}", fp, bp, args)
        if bp is not None and end >= bp:
            span("Step Trace", model, f"Model {model}", f"Iteration Refresh {n}", bp, end,
                 args)


def _track(writer) -> str:
    fh = io.StringIO()
    timeline = TimelineWriter(fh)
    writer(timeline)
    fh.write("\n]")
    return fh.getvalue()


def test_step_trace_track_is_byte_identical_to_per_event_spans(tmp_path, monkeypatch):
    monkeypatch.setattr(step_trace, "_BLOCK", 4)  # several blocks, a boundary mid-step
    steps = _steps(tmp_path)
    got = _track(lambda tl: write_track(tl, steps))
    assert got == _track(lambda tl: _reference_track(tl, steps))
    assert len([e for e in json.loads(got) if e["ph"] == "X"]) > 40


def test_step_trace_track_of_many_steps_is_byte_identical_to_per_event_spans(tmp_path):
    steps = _steps(tmp_path, 150, every=1000, drift=0)  # equal steps: rendered by numpy
    got = _track(lambda tl: write_track(tl, steps))
    assert got == _track(lambda tl: _reference_track(tl, steps))


def _csv_and_reference(steps: StepTraceCollector, device: int) -> tuple[str, str]:
    """The step_trace CSV ``steps`` writes for ``device``, and the same rows through
    ``csv.writer`` (the per-row reference the block formatting must equal byte for byte)."""
    got = io.StringIO()
    steps.write_csv(got, device)
    want = io.StringIO()
    w = csv.writer(want, lineterminator="\n")
    w.writerow(HEADER)
    w.writerows(steps.rows(device))
    return got.getvalue(), want.getvalue()


def test_step_trace_csv_of_many_steps_is_byte_identical_to_the_csv_module(tmp_path):
    steps = _steps(tmp_path, 150, every=1000, drift=0)
    got, want = _csv_and_reference(steps, 3)
    assert got == want


def test_step_trace_csv_with_negative_refresh_times_is_byte_identical(tmp_path):
    guard = StorageGuard(str(tmp_path), str(tmp_path), 0)
    log = RawLog(str(tmp_path), "training_trace", 0, guard, slice_bytes=1 << 20)
    steps = StepTraceCollector(log, "", "")
    t = T0
    for step in range(120):  # the step ends 128 ns (or 1.5 µs) before its last task does
        steps.on_bound(1, step, "begin", t)
        steps.on_task(1, "a", t + 1_000, 3_000, False)
        steps.on_task(1, "b", t + 17_000, 3_000, False)
        t += 20_000
        steps.on_bound(1, step, "end", t - (128 if step % 50 else 1_500))
    log.close()
    got, want = _csv_and_reference(steps, 0)
    assert got == want
    assert ",-0.128," in got and ",-1.500," in got


def test_step_trace_csv_is_byte_identical_to_the_csv_module(tmp_path, monkeypatch):
    monkeypatch.setattr(step_trace, "_BLOCK", 5)
    steps = _steps(tmp_path)
    got, want = _csv_and_reference(steps, 3)
    assert got == want
    assert "N/A" in got


def _task_db(tmp_path, blocks, pmu_keys):
    """The four per-task tables written through TemplateRows from ``blocks`` of rows
    (gid, sig, start, end, launch start, launch end, pmu key, step), as committed."""
    import numpy as np

    from geplug.profiling.msprof_db import MsprofDb
    from geplug.profiling.task_templates import TemplateRows

    db = MsprofDb(str(tmp_path / "t.db"))
    db.begin_pmu()
    db.begin_task_rows()
    for sig in range(3):  # signature 2 is a communication task (no COMPUTE_TASK_INFO row)
        compute = (None,) * 14 if sig == 2 else tuple(100 + sig * 20 + c for c in range(14))
        db.add_task_sig(sig, (int(sig == 2), 7 + sig, sig, 40 + sig, 1, *compute))
    db.pmu_keys(pmu_keys)
    rows = TemplateRows(db)
    for block in blocks:
        rows.add(*np.asarray(block, dtype=np.int64).T)
    rows.finish()
    db.end_task_rows(device_id=3, pid=9, launch_tid=11, launch_type=10000, launch_name=5)
    db.end_pmu()
    conn = sqlite3.connect(db.commit())  # TASK_PMU_INFO is written on commit
    try:
        tables = {t: conn.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall()
                  for t in ("TASK", "COMPUTE_TASK_INFO", "CANN_API", "TASK_PMU_INFO")}
    finally:
        conn.close()
    return tables, rows.templates


def _reference(tasks, pmu_keys):
    """The same tables, one row per task and metric, in plain Python."""
    task, compute, api, pmu = [], [], [], []
    for gid, sig, st, en, ls, le, k, _step in tasks:
        task.append((st, en, 3, gid, gid, 9, 7 + sig, 0, sig, 40 + sig, 1))
        if sig != 2:
            values = [100 + sig * 20 + c for c in range(14)]
            compute.append((values[0], gid, *values[1:]))
        api.append((ls, le, 10000, 11, gid, 5))
        pmu.extend((gid, name, value) for key, name, value in pmu_keys if key == k >= 0)
    return {"TASK": task, "COMPUTE_TASK_INFO": compute, "CANN_API": api,
            "TASK_PMU_INFO": pmu}


def _steps_of_tasks(durations_of_step):
    """Task rows of consecutive steps (three tasks each; ``durations_of_step(step)``)."""
    tasks, gid, t = [], 0, 1_700_000_000_000_000_000
    for step in range(6):
        for i, d in enumerate(durations_of_step(step)):
            tasks.append((gid, i, t, t + d, t - 900, t, i if i != 2 else -1, step))
            gid += 1
            t += d + 50
        t += 10_000
    return tasks


PMU_KEYS = [(0, 1, 2.5), (0, 2, 7), (1, 1, 0.125), (1, 2, 3)]


def test_task_tables_from_templates_equal_one_row_per_task(tmp_path):
    tasks = _steps_of_tasks(lambda step: (100, 200, 300))
    got, templates = _task_db(tmp_path, [tasks[:4], tasks[4:11], tasks[11:]], PMU_KEYS)
    assert got == _reference(tasks, PMU_KEYS)
    assert templates == 1  # six equal steps, cut mid-step by the blocks: one template


def test_a_step_with_different_timing_keeps_its_own_exact_rows(tmp_path):
    tasks = _steps_of_tasks(lambda step: (100, 200 + (step == 3), 300))
    got, templates = _task_db(tmp_path, [tasks], PMU_KEYS)
    assert got == _reference(tasks, PMU_KEYS)
    assert templates == 2


def test_pmu_rows_beyond_the_page_writer_limit_are_the_same_rows(tmp_path, monkeypatch):
    from geplug.profiling import msprof_db

    monkeypatch.setattr(msprof_db, "PAGE_PMU_MAX_ROWS", 0)  # SQLite expands them instead
    tasks = _steps_of_tasks(lambda step: (100, 200 + (step == 3), 300))
    got, _ = _task_db(tmp_path, [tasks[:5], tasks[5:]], PMU_KEYS)
    assert got == _reference(tasks, PMU_KEYS)
    assert got["TASK_PMU_INFO"]
