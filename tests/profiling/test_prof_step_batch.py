"""A StepBatchEvent (deferred whole-step records as columns) gives the same profile as the
whole-step records it stands for, on the vectorised path (l0) and on the per-step one."""

from __future__ import annotations

import glob
import os
import re
import sqlite3
from contextlib import closing

import numpy as np
import pytest
from prof_helpers import make_system, prof_dir

from geplug.events import (
    GraphEvent,
    OpRecord,
    RunInfo,
    StepBatchEvent,
    StepTasksEvent,
    TaskEvent,
    TaskTable,
)

BASE_US = 1_700_000_000_000_000
CALLS = (("aclrtMemcpy(H2D:x)", 3.5, "H2D", 4096), ("aclrtMemcpy(D2H:y)", 0.0625, "D2H", 1024))


def _batches(system, steps: int, chunk: int) -> list[StepBatchEvent]:  # type: ignore[no-untyped-def]
    """``steps`` steps of a 7-op model (one table) in batches of ``chunk``: begins that are
    not on whole ns, copies before and after the tasks, as a backend's template walks them."""
    ops = [OpRecord(name=f"op{i}", op_type="MatMulV2" if i % 2 else "Add", task_id=i + 1,
                    block_dim=8, stream_id=0) for i in range(7)]
    graph = RunInfo(system=system, model_name="m", model_id=1, step=-1, time_base_us=BASE_US)
    system.emit_profile(GraphEvent(run=graph, ops=ops))
    table = TaskTable.sequential(TaskEvent(
        run=graph, op=op, start_us=0.0, duration_us=3.0 + 0.3 * i, wait_us=0.0, flops=1e6,
        bytes_moved=1e4, cube_fraction=0.5) for i, op in enumerate(ops))
    out = []
    for first in range(0, steps, chunk):
        ks = list(range(first, min(steps, first + chunk)))
        begins, starts, ends, call_starts = [], [], [], []
        for k in ks:
            t = begin = 1000.0 + 51.123456789 * k
            at = [t]
            t += CALLS[0][1]
            start_ns = round(t * 1000)
            t = (start_ns + table.span_ns) / 1000
            at.append(t)
            t += CALLS[1][1]
            begins.append(begin)
            starts.append(start_ns)
            ends.append(t)
            call_starts.append(at)
        out.append(StepBatchEvent(
            run=RunInfo(system=system, model_name="m", model_id=1, step=ks[0],
                        time_base_us=BASE_US),
            table=table, steps=ks, begin_us=begins, start_ns=starts, end_us=ends,
            calls=CALLS, call_start_us=call_starts))
    return out


def _profile(manager, out, steps: int, *, batched: bool, **options: str):  # type: ignore[no-untyped-def]
    """Every text file and the task, copy and step rows of the database."""
    system = make_system(manager, out, **options)
    for batch in _batches(system, steps, chunk=37):
        if batched:
            system.emit_profile(batch)
        else:
            for record in batch.records():
                system.emit_profile(record)
    system.shutdown()
    root = os.path.join(prof_dir(out), "mindstudio_profiler_output")
    files: dict[str, object] = {}
    for name in os.listdir(root):
        with open(os.path.join(root, name), "rb") as fh:
            files[re.sub(r"_\d{14}", "", name)] = fh.read()
    (db,) = glob.glob(os.path.join(prof_dir(out), "msprof_*.db"))
    with closing(sqlite3.connect(db)) as con:
        for table in ("TASK", "STEP_TIME", "MEMCPY_INFO"):
            files[table] = con.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
    return files


@pytest.mark.parametrize("options", [{"task_time": "l0"},
                                     {"task_time": "l1", "training_trace": "on"}],
                         ids=["l0-vectorised", "l1-step-by-step"])
def test_a_batch_gives_the_profile_of_its_records(manager, tmp_path, options):
    batched = _profile(manager, tmp_path / "batched", 100, batched=True, **options)
    records = _profile(manager, tmp_path / "records", 100, batched=False, **options)
    assert sorted(batched) == sorted(records)
    for name in batched:
        assert batched[name] == records[name], name
    assert len(batched["STEP_TIME"]) == 100  # type: ignore[arg-type]
    assert len(batched["MEMCPY_INFO"]) == 200  # type: ignore[arg-type]


def test_records_carry_each_steps_times_and_calls(manager, tmp_path):
    system = make_system(manager, tmp_path, task_time="l0")
    (batch,) = _batches(system, 3, chunk=3)
    records = list(batch.records())
    assert all(isinstance(r, StepTasksEvent) for r in records)
    assert [r.run.step for r in records] == [0, 1, 2]
    assert [r.run.model_name for r in records] == ["m"] * 3
    assert [r.begin_us for r in records] == batch.begin_us.tolist()
    assert [r.end_us for r in records] == batch.end_us.tolist()
    assert [r.start_ns for r in records] == batch.start_ns.tolist()
    second = records[1].calls
    assert second == ((CALLS[0][0], batch.call_start_us[1, 0], *CALLS[0][1:]),
                      (CALLS[1][0], batch.call_start_us[1, 1], *CALLS[1][1:]))
    system.shutdown()


def test_a_batch_whose_columns_disagree_is_refused(manager, tmp_path):
    system = make_system(manager, tmp_path, task_time="l0")
    (batch,) = _batches(system, 2, chunk=2)
    with pytest.raises(ValueError, match="2 steps but 1 begins"):
        StepBatchEvent(run=batch.run, table=batch.table, steps=[0, 1], begin_us=[0.0],
                       start_ns=[0, 1], end_us=[1.0, 2.0])
    with pytest.raises(ValueError, match=r"call_start_us has shape \(2, 1\), expected \(2, 2\)"):
        StepBatchEvent(run=batch.run, table=batch.table, steps=[0, 1], begin_us=[0.0, 1.0],
                       start_ns=[0, 1], end_us=[1.0, 2.0], calls=CALLS,
                       call_start_us=np.zeros((2, 1)))
    system.shutdown()


def test_a_block_of_records_lands_as_the_records_one_by_one_in_rotated_slices(tmp_path):
    from geplug.profiling.layout import new_prof_name
    from geplug.profiling.records import RecordLog
    from geplug.profiling.storage import StorageGuard

    def log(name: str) -> RecordLog:
        root = os.path.join(str(tmp_path), name, new_prof_name(index=1)[0])
        os.makedirs(root)
        # a slice of 40 records of 5 fields: a 300-record block spans several slices
        return RecordLog(root, "task", 0, StorageGuard(str(tmp_path / name), root, 0),
                         fields=5, slice_bytes=40 * 40)

    rows = np.arange(300 * 5, dtype=np.int64).reshape(300, 5)
    one, block = log("one"), log("block")
    one.append((-1, -2, -3, -4, -5))
    block.append((-1, -2, -3, -4, -5))  # a buffered record before the block goes first
    for row in rows:
        one.append(tuple(int(v) for v in row))
    block.extend_block(rows)
    one.close()
    block.close()
    assert list(block.records()) == list(one.records())
    assert len(list(block.records())) == 301
    assert len(block.paths()) > 5
    assert all(os.path.getsize(p) <= 40 * 40 for p in block.paths())
