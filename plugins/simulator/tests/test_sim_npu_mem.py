"""msprof's npu_mem records come from the device model's memory plan (issue 10, memory)."""

from __future__ import annotations

import csv
import glob
import json
import os

import numpy as np
import pytest
from geplug_simulator import netbuild as nb

import geplug
from geplug.profiling.memory_records import NPU_MEM_HEADER

pytestmark = pytest.mark.requires_products("atlas_a2")


def test_npu_mem_reports_the_hbm_the_compiled_models_memory_plan_holds(tmp_path) -> None:
    options = {"output": str(tmp_path), "task_time": "l1", "sys_hardware_mem_freq": "100"}
    cfg = {"profiling_mode": True, "profiling_options": json.dumps(options)}
    with geplug.initialize_system("atlas_a2", cfg) as system:
        compiled = system.compile(nb.mlp(batch=256, width=512))
        for _ in range(3):
            compiled.run({"x": np.ones((256, 512), np.float32)})
    (path,) = glob.glob(os.path.join(str(tmp_path), "PROF_*", "mindstudio_profiler_output",
                                     "npu_mem_*.csv"))
    with open(path, newline="") as f:
        header, *rows = list(csv.reader(f))
    assert header == NPU_MEM_HEADER and rows
    kb = compiled.memory.total_bytes / 1024
    assert {r[1] for r in rows} == {"APP", "Device"}
    assert all(float(r[3]) == pytest.approx(kb) and float(r[4]) == float(r[3]) for r in rows)
