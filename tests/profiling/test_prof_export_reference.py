"""The block-formatted export writers equal a straightforward per-record reference."""

from __future__ import annotations

import csv
import io
import json

from geplug.profiling import step_trace
from geplug.profiling.rawlog import RawLog
from geplug.profiling.step_trace import HEADER, StepTraceCollector, write_track
from geplug.profiling.storage import StorageGuard
from geplug.profiling.timeline import TimelineWriter

T0 = 1_700_000_000_000_000_123


def _steps(tmp_path, count: int = 9) -> StepTraceCollector:
    """Two models, steps with and without fp/bp tasks and with a communication task."""
    guard = StorageGuard(str(tmp_path), str(tmp_path), 0)
    log = RawLog(str(tmp_path), "training_trace", 0, guard, slice_bytes=1 << 20)
    steps = StepTraceCollector(log, "", "")
    t = T0
    for step in range(count):
        for model in (1, 2):
            steps.on_bound(model, step, "begin", t)
            if step % 3:  # every third step has no task: FP/BP are N/A
                steps.on_task(model, "a", t + 1001, 2_345, False)
                steps.on_task(model, "ar", t + 4_000, 777, True)
                steps.on_task(model, "b", t + 5_003, 10_001 + step, False)
            t += 20_000 + 7 * step
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


def test_step_trace_csv_is_byte_identical_to_the_csv_module(tmp_path, monkeypatch):
    monkeypatch.setattr(step_trace, "_BLOCK", 5)
    steps = _steps(tmp_path)
    got = io.StringIO()
    steps.write_csv(got, 3)
    want = io.StringIO()
    w = csv.writer(want, lineterminator="\n")
    w.writerow(HEADER)
    w.writerows(steps.rows(3))
    assert got.getvalue() == want.getvalue()
    assert "N/A" in got.getvalue()
