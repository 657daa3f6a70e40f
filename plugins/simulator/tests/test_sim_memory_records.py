"""msprof's memory records (task_memory, sys_hardware_mem) come from the memory plan."""

from __future__ import annotations

import csv
import glob
import json
import os
import sqlite3

import numpy as np
import pytest
from geplug_simulator import netbuild as nb

import geplug
from geplug.profiling.layout import fmt_ns
from geplug.profiling.memory_records import (
    MEMORY_RECORD_HEADER,
    NPU_MODULE_MEM_HEADER,
    OPERATOR_MEMORY_HEADER,
)

pytestmark = pytest.mark.requires_products("atlas_a2")

STEPS = 3


def _run(tmp_path, **extra: str):
    options = {"output": str(tmp_path), "task_time": "l1", **extra}
    cfg = {"profiling_mode": True, "profiling_options": json.dumps(options)}
    with geplug.initialize_system("atlas_a2", cfg) as system:
        compiled = system.compile(nb.mlp(batch=64, width=256))
        for _ in range(STEPS):
            compiled.run({"x": np.ones((64, 256), np.float32)})
    (prof,) = glob.glob(os.path.join(str(tmp_path), "PROF_*"))
    return compiled.memory, prof


def _csv(prof: str, stem: str) -> tuple[list[str], list[list[str]]]:
    (path,) = glob.glob(os.path.join(prof, "mindstudio_profiler_output", f"{stem}_*.csv"))
    with open(path, newline="") as f:
        header, *rows = list(csv.reader(f))
    return header, rows


def _db(prof: str, sql: str) -> list[tuple]:
    (path,) = glob.glob(os.path.join(prof, "msprof_*.db"))
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


_OP_MEM = ("SELECT n.value, m.addr, t.value, m.size, m.timestampNs, m.totalAllocate, "
           "m.totalReserve, c.value, m.deviceId FROM NPU_OP_MEM m "
           "JOIN STRING_IDS n ON n.id = m.operatorName JOIN STRING_IDS t ON t.id = m.type "
           "JOIN STRING_IDS c ON c.id = m.component ORDER BY m.rowid")


@pytest.fixture(scope="module")
def task_memory(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("taskmem"), task_memory="on")


def test_npu_op_mem_peak_is_the_plans_activation_peak_plus_weights(task_memory):
    plan, prof = task_memory
    rows = _db(prof, _OP_MEM)
    assert max(r[5] for r in rows) == plan.activation_peak_bytes + plan.weights_bytes


def test_every_planned_tensor_is_allocated_and_released_once_per_step(task_memory):
    plan, prof = task_memory
    rows = _db(prof, _OP_MEM)
    expected = STEPS * len(plan.blocks) + len(plan.resident)
    kinds = [r[2] for r in rows]
    assert kinds.count("allocate") == kinds.count("release") == expected
    assert rows[-1][5] == 0  # everything released by the end


def test_allocations_are_named_after_the_task_writing_them(task_memory):
    plan, prof = task_memory
    allocated = {r[0] for r in _db(prof, _OP_MEM) if r[2] == "allocate"}
    assert {b.owner for b in plan.blocks} | {w for w, _ in plan.resident} == allocated
    assert {b.owner for b in plan.blocks if b.first >= 0} <= set(plan.tasks)


def test_op_memory_never_allocates_more_than_the_ge_pool_reserves(task_memory):
    plan, prof = task_memory
    rows = _db(prof, _OP_MEM)
    assert all(r[5] <= r[6] for r in rows)
    assert {r[6] for r in rows} == {plan.activation_peak_bytes + plan.weights_bytes}
    assert {r[7] for r in rows} == {"GE"} and {r[8] for r in rows} == {0}


def test_memory_record_csv_carries_the_pool_total_of_every_npu_op_mem_row(task_memory):
    _, prof = task_memory
    header, rows = _csv(prof, "memory_record")
    db = _db(prof, _OP_MEM)
    assert header == MEMORY_RECORD_HEADER and len(rows) == len(db)
    assert [float(r[3]) for r in rows] == pytest.approx([d[5] / 1024 for d in db])
    assert [r[2] for r in rows] == [fmt_ns(d[4]) + "\t" for d in db]


def test_operator_memory_pairs_each_allocation_with_its_release(task_memory):
    plan, prof = task_memory
    header, rows = _csv(prof, "operator_memory")
    assert header == OPERATOR_MEMORY_HEADER
    assert len(rows) == STEPS * len(plan.blocks) + len(plan.resident)
    sizes = {b.owner: b.nbytes for b in plan.blocks if b.first >= 0}
    for r in rows:
        assert r[4] and float(r[4]) >= 0  # released within the run: a duration
        if r[1] in sizes:
            assert float(r[2]) == pytest.approx(sizes[r[1]] / 1024)


def test_without_task_memory_no_operator_memory_is_written(tmp_path):
    _, prof = _run(tmp_path)
    assert _db(prof, "SELECT COUNT(*) FROM NPU_OP_MEM") == [(0,)]
    assert _db(prof, "SELECT COUNT(*) FROM NPU_MEM") == [(0,)]
    assert _db(prof, "SELECT COUNT(*) FROM NPU_MODULE_MEM") == [(0,)]
    out = os.listdir(os.path.join(prof, "mindstudio_profiler_output"))
    assert not [f for f in out if "mem" in f]


def test_npu_mem_rows_of_the_database_equal_the_npu_mem_csv(tmp_path):
    plan, prof = _run(tmp_path, sys_hardware_mem_freq="100")
    _, rows = _csv(prof, "npu_mem")
    db = _db(prof, "SELECT s.value, m.ddr, m.hbm, m.timestampNs FROM NPU_MEM m "
                   "JOIN STRING_IDS s ON s.id = m.type ORDER BY m.rowid")
    assert [(r[1].lower(), float(r[3])) for r in rows] == \
        [(d[0], pytest.approx(d[2] / 1024)) for d in db]
    assert {d[2] for d in db} == {plan.total_bytes}
    assert _db(prof, "SELECT COUNT(*) FROM NPU_OP_MEM") == [(0,)]  # task_memory is off


def test_npu_module_mem_splits_the_hbm_into_ge_and_the_workspace(tmp_path):
    plan, prof = _run(tmp_path, sys_hardware_mem_freq="100")
    header, rows = _csv(prof, "npu_module_mem")
    db = _db(prof, "SELECT e.name, m.totalReserved FROM NPU_MODULE_MEM m "
                   "JOIN ENUM_MODULE e ON e.id = m.moduleId")
    assert header == NPU_MODULE_MEM_HEADER and len(rows) == len(db) > 0
    assert dict(db) == {"GE": plan.weights_bytes + plan.activation_peak_bytes,
                        "RUNTIME": plan.workspace_bytes}
    assert {(r[1], float(r[3])) for r in rows} == {(k, v / 1024) for k, v in dict(db).items()}
