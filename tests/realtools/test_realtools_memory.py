"""msprof-analyze 26.2.0 reads geplug's memory tables (task_memory, sys_hardware_mem).

msprof-analyze has no memory analysis of msprof directories; its recipes read the msprof
database through ``prof_common.database_service.DatabaseService``, which knows the memory
tables (``NPU_MEM``, ``NPU_MODULE_MEM``, ``NPU_OP_MEM``) and filters them to a step's time
range. Read through it, one step of geplug's records must be the memory plan: every planned
tensor allocated and released once, the peak the plan's activation peak plus the weights.
(Its memory comparison of torch_npu directories is tested in the torch env.)
"""

from __future__ import annotations

import glob
import json
import os
import sqlite3
from typing import Any

import numpy as np
import pytest

pytest.importorskip("msprof_analyze", reason="the realtools tox env installs msprof-analyze")
pytestmark = pytest.mark.requires_products("atlas_a2")

STEPS = 3


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, str, tuple[int, int]]:
    """A 3-step profiled run with both memory switches; (plan, database, step 2's range)."""
    from geplug_simulator import netbuild as nb

    import geplug

    out = tmp_path_factory.mktemp("memory")
    options = {"output": str(out), "task_time": "l1", "task_memory": "on",
               "sys_hardware_mem_freq": "100"}
    cfg = {"profiling_mode": True, "profiling_options": json.dumps(options)}
    with geplug.initialize_system("atlas_a2", cfg) as system:
        compiled = system.compile(nb.mlp(batch=64, width=256))
        for _ in range(STEPS):
            compiled.run({"x": np.ones((64, 256), np.float32)})
    (db,) = glob.glob(os.path.join(str(out), "PROF_*", "msprof_*.db"))
    conn = sqlite3.connect(db)
    try:
        (span,) = conn.execute("SELECT startNs, endNs FROM STEP_TIME WHERE id = 2").fetchall()
    finally:
        conn.close()
    return compiled.memory, db, span


def _read(db: str, span: tuple[int, int] | None, *tables: str) -> dict[str, Any]:
    from msprof_analyze.prof_common.constant import Constant
    from msprof_analyze.prof_common.database_service import DatabaseService

    step = {Constant.START_NS: span[0], Constant.END_NS: span[1]} if span else {}
    service = DatabaseService(db, step)
    for table in tables:
        service.add_table_for_query(table)
    return service.query_data()


def test_msprof_analyze_reads_one_step_of_npu_op_mem_as_the_plan(run):
    plan, db, span = run
    data = _read(db, span, "NPU_OP_MEM", "STRING_IDS")["NPU_OP_MEM"]
    strings = dict(_read(db, None, "STRING_IDS")["STRING_IDS"][["id", "value"]].values)
    kinds = [strings[t] for t in data["type"]]
    assert kinds.count("allocate") == kinds.count("release") == len(plan.blocks)
    assert int(data["totalAllocate"].max()) == plan.activation_peak_bytes + plan.weights_bytes


def test_msprof_analyze_reads_npu_mem_and_npu_module_mem_as_the_plan(run):
    plan, db, _ = run
    data = _read(db, None, "NPU_MEM", "NPU_MODULE_MEM")
    assert set(data["NPU_MEM"]["hbm"]) == {plan.total_bytes}
    assert sorted(set(data["NPU_MODULE_MEM"]["totalReserved"])) == sorted(
        {plan.weights_bytes + plan.activation_peak_bytes, plan.workspace_bytes})
