"""The vectorised template filling of the export writes exactly what Python's ``%`` writes."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from prof_helpers import make_system, prof_dir

from geplug.events import (
    GraphEvent,
    OpRecord,
    RunInfo,
    StepEvent,
    StepTasksEvent,
    TaskEvent,
    TaskTable,
)
from geplug.profiling import textfill
from geplug.profiling.textfill import BlockFormatter, percent_fill

TEMPLATES = [
    ',\n{"ts":"%d.%03d","dur":%d.%03d%.0s,"id":%d,"n":"Ünïcode %%"}',
    "row,%d,%06d,%d,%d,%d,%d\n",
    ',"t":"%d.%03d","a":%d,"b":%d,"c":%d,"d":%d}',
]


def _steps(rng: np.random.Generator, steps: int, seq: list[int]) -> tuple[np.ndarray, ...]:
    idx = np.tile(np.array(seq), steps)
    n = len(idx)
    vals = np.empty((n, 6), dtype=np.int64)
    vals[:, 0] = 1_700_000_000_000 + np.arange(n) * 7
    vals[:, 1] = rng.integers(0, 1000, n)
    vals[:, 2] = np.tile(rng.integers(0, 50, len(seq)), steps)  # the same every step
    vals[:, 3] = rng.integers(0, 1000, n)
    vals[:, 4] = rng.integers(0, 10**9, n)
    vals[:, 5] = 95 + np.arange(n)  # a counter gaining digits (99 -> 100 -> ...)
    starts = np.arange(0, n, len(seq))
    return idx, vals, starts


def test_steps_of_one_template_sequence_fill_as_percent_does():
    rng = np.random.default_rng(0)
    idx, vals, starts = _steps(rng, 40, [0, 2, 2, 1, 0])
    assert BlockFormatter(list(TEMPLATES)).fill(idx, vals, starts) == \
        percent_fill(TEMPLATES, idx, vals)


def test_a_step_with_other_templates_among_equal_steps_fills_as_percent_does():
    rng = np.random.default_rng(1)
    idx, vals, starts = _steps(rng, 30, [0, 1, 2])
    idx[3 * 17 + 1] = 0  # one step's second row uses another template (other durations)
    idx[3 * 29:] = 2  # and the last step has a third sequence
    assert BlockFormatter(list(TEMPLATES)).fill(idx, vals, starts) == \
        percent_fill(TEMPLATES, idx, vals)


def test_rows_of_varying_widths_without_steps_fill_as_percent_does():
    rng = np.random.default_rng(2)
    n = 500
    vals = np.column_stack([rng.integers(0, 10 ** rng.integers(1, 16), n) for _ in range(6)])
    idx = np.zeros(n, dtype=np.int64)
    assert BlockFormatter(list(TEMPLATES)).fill(idx, vals) == percent_fill(TEMPLATES, idx, vals)


def test_negative_values_and_unknown_conversions_fall_back_to_percent():
    idx = np.zeros(100, dtype=np.int64)
    vals = np.arange(-300, 300, dtype=np.int64).reshape(100, 6)
    assert BlockFormatter(list(TEMPLATES)).fill(idx, vals) == percent_fill(TEMPLATES, idx, vals)
    other = ["%x,%d,%d,%d,%d,%d\n"]
    vals = np.abs(vals)
    assert BlockFormatter(other).fill(idx, vals) == percent_fill(other, idx, vals)


def test_a_template_replaced_after_use_is_filled_with_its_new_text():
    fmt = BlockFormatter(list(TEMPLATES))
    idx, vals, starts = _steps(np.random.default_rng(3), 20, [1, 1])
    fmt.fill(idx, vals, starts)
    fmt.put(1, "new,%d,%d,%d,%d,%d,%d\n")
    assert fmt.fill(idx, vals, starts) == percent_fill(fmt.templates, idx, vals)


def _profile(manager, out, steps: int) -> dict[str, bytes]:
    """A bench-shaped run (one batched record per step) whose durations change on a few steps
    and whose task ids and step numbers gain digits; returns every text file's bytes."""
    system = make_system(manager, out, task_time="l1", training_trace="on")
    ops = [OpRecord(name=f"op{i}", op_type="MatMulV2" if i % 2 else "Add", task_id=i + 1,
                    block_dim=8, stream_id=i % 2) for i in range(7)]
    graph = RunInfo(system=system, model_name="m", model_id=1, step=-1)
    system.emit_profile(GraphEvent(run=graph, ops=ops))

    def table(scale: float) -> TaskTable:
        return TaskTable.sequential(TaskEvent(
            run=graph, op=op, start_us=0.0, duration_us=(3.0 + 0.2 * i) * scale,
            wait_us=1.0 if i % 3 else 0.0, flops=1e6, bytes_moved=1e4, cube_fraction=0.5)
            for i, op in enumerate(ops))

    tables = [table(1.0), table(1.5), table(0.25)]
    t = 1.7e15
    for step in range(steps):
        tb = tables[step % 3] if step in (4, 5, 30, 31, 77) else tables[0]
        run = RunInfo(system=system, model_name="m", model_id=1, step=step)
        system.emit_profile(StepEvent(run=run, phase="begin", time_us=t))
        system.emit_profile(StepTasksEvent(run=run, table=tb, start_ns=round(t * 1000)))
        t += tb.span_ns / 1000 + (3.5 if step % 4 else 0.0)
        system.emit_profile(StepEvent(run=run, phase="end", time_us=t))
    system.shutdown()
    root = os.path.join(prof_dir(out), "mindstudio_profiler_output")
    files = {}
    for name in os.listdir(root):
        with open(os.path.join(root, name), "rb") as fh:
            files[re.sub(r"_\d{14}", "", name)] = fh.read()
    return files


def test_the_export_text_equals_the_per_row_percent_export(manager, tmp_path, monkeypatch):
    fast = _profile(manager, tmp_path / "fast", 160)
    monkeypatch.setattr(textfill, "MIN_RUN_ROWS", 10**9)  # every row through %
    slow = _profile(manager, tmp_path / "slow", 160)
    assert sorted(fast) == sorted(slow)
    for name in fast:
        assert fast[name] == slow[name], name


@pytest.mark.parametrize("rows", [1, 47, 48])
def test_blocks_at_the_size_limits_fill_as_percent_does(rows):
    idx = np.zeros(rows, dtype=np.int64)
    vals = np.arange(rows * 6, dtype=np.int64).reshape(rows, 6) * 997
    assert BlockFormatter(list(TEMPLATES)).fill(idx, vals) == percent_fill(TEMPLATES, idx, vals)
