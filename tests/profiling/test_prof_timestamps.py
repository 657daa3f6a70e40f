"""Profiling timestamps are exact to the printed ns: no float64 rounding of absolute µs."""

from __future__ import annotations

import itertools
from decimal import Decimal

from prof_helpers import OPS, make_system, manager, read_csv, timeline  # noqa: F401

from geplug.events import GraphEvent, RunInfo, StepEvent, TaskEvent
from geplug.profiling.layout import fmt_ns, us_to_ns

EPOCH_US = 1_795_985_285_095_680.75
"""A realistic start (µs since the epoch, where a float64's step is 0.25 µs)."""


def _drive(system, starts_durs):  # type: ignore[no-untyped-def]
    system.emit_profile(GraphEvent(run=RunInfo(system=system, model_name="net", model_id=1,
                                               step=-1), ops=OPS))
    run = RunInfo(system=system, model_name="net", model_id=1, step=0)
    system.emit_profile(StepEvent(run=run, phase="begin", time_us=starts_durs[0][0]))
    for op, (start, dur) in zip(OPS[:2] + OPS[4:], starts_durs, strict=False):
        system.emit_profile(TaskEvent(run=run, op=op, start_us=start, duration_us=dur))
    last = starts_durs[-1]
    system.emit_profile(StepEvent(run=run, phase="end", time_us=last[0] + last[1]))
    system.shutdown()


def test_start_plus_duration_equals_stop_at_epoch_magnitude(manager, tmp_path):  # noqa: F811
    system = make_system(manager, tmp_path, task_time="on")
    _drive(system, [(EPOCH_US, 3.361), (EPOCH_US + 4.0, 3.655), (EPOCH_US + 8.0, 3.41)])
    _, rows = read_csv(tmp_path, "task_time")
    assert len(rows) == 3
    for r in rows:
        assert Decimal(r[6].strip()) + Decimal(r[5]) == Decimal(r[7].strip())
    assert rows[0][7] == "1795985285095684.111"


def test_consecutive_tasks_on_a_stream_never_overlap(manager, tmp_path):  # noqa: F811
    base = 1_000_000.0
    durs = [3.361, 3.655, 3.41]
    starts = [base, base + 3.361, base + 3.361 + 3.655]
    system = make_system(manager, tmp_path, task_time="on")
    _drive(system, list(zip(starts, durs, strict=True)))
    _, rows = read_csv(tmp_path, "task_time")
    for a, b in itertools.pairwise(rows):
        assert Decimal(a[7].strip()) <= Decimal(b[6].strip())
    kernels = sorted((e for e in timeline(tmp_path) if e.get("cat") == "kernel"),
                     key=lambda e: Decimal(e["ts"]))
    assert len(kernels) == 3
    for a, b in itertools.pairwise(kernels):
        stop = Decimal(a["ts"]) + Decimal(str(a["dur"]))
        assert stop <= Decimal(b["ts"])


def test_times_keep_sub_quarter_microsecond_precision(manager, tmp_path):  # noqa: F811
    system = make_system(manager, tmp_path, task_time="on")
    _drive(system, [(1_000_000.123, 2.0)])
    _, rows = read_csv(tmp_path, "task_time")
    assert rows[0][6] == "1000000.123"
    _, summary = read_csv(tmp_path, "op_summary")
    assert summary[0][8].strip() == "1000000.123"


def test_fmt_ns_prints_exact_epoch_microseconds():
    assert fmt_ns(1_700_000_000_000_123) == "1700000000000.123"
    assert fmt_ns(-1_500) == "-1.500"


def test_us_to_ns_is_exact_for_quarter_microsecond_floats():
    assert us_to_ns(EPOCH_US) == 1_795_985_285_095_680_750
