"""msprof-analyze 26.2.0 as the oracle of geplug's format conversions: the TransData tasks
GE inserts (``trans_TransData_<n>``, docs/device-model.md "Format conversions") are kernels
the real analyser counts and times as geplug wrote them.

A one-rank ``geplug run`` on atlas_a2 (whose declaration lists the 910B's op formats) of a
convolution to 58 channels, a Transpose (ND only) and a convolution: a TransData on each
side of the Transpose. ``msprof-analyze cluster -m compute_op_sum`` reads the ``PROF_*``
directory; its per-op-type statistics must hold geplug's TransData count and durations.
Runs in the ``realtools`` tox env; skipped elsewhere.
"""

from __future__ import annotations

import glob
import os
import sqlite3
import subprocess
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("msprof_analyze", reason="the realtools tox env installs msprof-analyze")
pytestmark = pytest.mark.requires_products("atlas_a2")

STEPS = 2


def _shuffle(path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((58, 16, 1, 1)) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((16, 58, 1, 1)) * 0.1).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w1"], ["a"], name="c1"),
         helper.make_node("Transpose", ["a"], ["b"], name="tr", perm=[0, 1, 3, 2]),
         helper.make_node("Conv", ["b", "w2"], ["y"], name="c2")], "shuffle",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16, 14, 14])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16, 14, 14])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              str(path))


def test_compute_op_sum_holds_geplugs_transdata_counts_and_durations(tmp_path: Path) -> None:
    from test_realtools_msprof_analyze import msprof_analyze_tool

    model = tmp_path / "shuffle.onnx"
    _shuffle(model)
    prof = tmp_path / "prof"
    (tmp_path / "prof.toml").write_text(
        "profiling_mode = true\n[profiling_options]\n"
        f'output = "{prof}"\ntask_time = "l1"\n')
    subprocess.run(["geplug", "run", "--product", "atlas_a2", "--config",
                    str(tmp_path / "prof.toml"), "--steps", str(STEPS), str(model)],
                   check=True, capture_output=True, text=True, timeout=300)
    out = tmp_path / "out"
    proc = subprocess.run([msprof_analyze_tool(), "cluster", "-d", str(prof), "-m",
                           "compute_op_sum", "-o", str(out)], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in log, log[-3000:]
    (db,) = glob.glob(os.path.join(prof, "PROF_*", "msprof_*.db"))
    ours = sqlite3.connect(db)
    count, total = ours.execute(
        "SELECT COUNT(*), SUM(t.endNs - t.startNs) FROM COMPUTE_TASK_INFO c JOIN TASK t ON "
        "t.globalTaskId = c.globalTaskId JOIN STRING_IDS s ON s.id = c.opType "
        "WHERE s.value = 'TransData'").fetchone()
    assert count == 2 * STEPS  # 5HD -> ND before the Transpose, ND -> 5HD after it
    (found,) = glob.glob(str(out / "**" / "cluster_analysis.db"), recursive=True)
    got = sqlite3.connect(found).execute(
        "SELECT Count, SumNs FROM ComputeOpAllRankStats WHERE OpType = 'TransData'").fetchone()
    assert got is not None, log[-3000:]
    assert got[0] == count and got[1] == pytest.approx(total)
