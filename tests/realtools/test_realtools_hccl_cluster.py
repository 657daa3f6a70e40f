"""msprof-analyze 26.2.0 on geplug's multi-rank output: the HCCL model's numbers come out.

An 8-rank ONNX AllReduce job (``geplug run --ranks 8``) and the analytic mode's 1,024-rank
output of the same model: ``msprof-analyze cluster`` reads every rank's ``PROF_*`` (msprof
DB route) and its cluster database carries the HCCL model's collective time (communication
time recipe), the per-peer links (communication_matrix) and the rank count. Runs in the
``realtools`` tox env; skipped elsewhere. The 1,024-rank test runs with
``GEPLUG_REALTOOLS_LARGE=1`` (it took 12 min on a 2-core machine at load average ~10),
so CI stays small. docs/distributed.md "Artifacts per rank".
"""

from __future__ import annotations

import glob
import os
import sqlite3
import subprocess

import numpy as np
import pytest

pytest.importorskip("msprof_analyze", reason="the realtools tox env installs msprof-analyze")
pytest.importorskip("geplug_simulator")

import onnx
from onnx import TensorProto, helper, numpy_helper
from test_realtools_msprof_analyze import msprof_analyze_tool

from geplug.cli.main import main
from geplug.hccl import Topology, read_settings, simulate
from geplug.plugin import get_manager

pytestmark = pytest.mark.requires_products("atlas_a2")

PROFILING = 'profiling_mode = true\n[profiling_options]\noutput = "prof"\ntask_time = "on"\n'
BYTES = 64 * 64 * 4


def _model(ranks: int) -> onnx.ModelProto:
    w = numpy_helper.from_array(np.eye(64, dtype=np.float32) * 0.5, "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("AllReduce", ["h"], ["s"], domain="com.microsoft", name="ar",
                              group_size=ranks),
             helper.make_node("Relu", ["s"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "arnet",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 64])],
                              [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("com.microsoft", 1)])



def _analyse(prof: str, mode: str) -> sqlite3.Connection:
    subprocess.run([msprof_analyze_tool(), "cluster", "-d", prof, "-m", mode], check=True,
                   capture_output=True, timeout=1200)
    return sqlite3.connect(os.path.join(prof, "cluster_analysis_output", "cluster_analysis.db"))


def _model_ms(ranks: int) -> float:
    product = get_manager().products().get("atlas_a2")
    return simulate(Topology.generated(product, ranks), "allreduce", BYTES,
                    read_settings({})).duration_us / 1000


@pytest.fixture(scope="module")
def eight(tmp_path_factory: pytest.TempPathFactory) -> sqlite3.Connection:
    """``cluster -m all`` on an exact 8-rank run."""
    root = tmp_path_factory.mktemp("hccl8")
    os.chdir(root)
    onnx.save(_model(8), "ar.onnx")
    (root / "cfg.toml").write_text(PROFILING)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GEPLUG_SIM_RANK_VARIATION", "0")  # exact model times: no variation
        assert main(["run", "ar.onnx", "--ranks", "8", "--product", "atlas_a2", "--config",
                     "cfg.toml", "--quiet"]) == 0
    return _analyse(str(root / "prof"), "all")


def test_cluster_reads_all_8_ranks_of_an_onnx_allreduce_job(eight):
    assert eight.execute("SELECT COUNT(*) FROM RankDeviceMap").fetchone() == (8,)
    groups = eight.execute("SELECT rank_set FROM CommunicationGroupMapping").fetchall()
    assert groups == [("(0,1,2,3,4,5,6,7)",)]


def test_cluster_communication_time_is_the_hccl_models_allreduce_time(eight):
    rows = eight.execute("SELECT rank_id, elapsed_time FROM ClusterCommunicationTime "
                         "WHERE hccl_op_name = 'hcom_allReduce__ar'").fetchall()
    assert sorted(r for r, _ in rows) == list(range(8))
    for _, elapsed in rows:
        assert elapsed == pytest.approx(_model_ms(8), abs=2e-6)


def test_cluster_communication_matrix_has_every_hccs_peer_link(eight):
    pairs = eight.execute("SELECT DISTINCT src_rank, dst_rank FROM ClusterCommunicationMatrix "
                          "WHERE transport_type = 'HCCS'").fetchall()
    assert len({(int(s), int(d)) for s, d in pairs}) == 8 * 7


@pytest.mark.skipif(os.environ.get("GEPLUG_REALTOOLS_LARGE") != "1",
                    reason="1,024 ranks through cluster -m all take minutes: "
                           "GEPLUG_REALTOOLS_LARGE=1 runs it")
def test_analytic_1024_ranks_are_read_by_cluster_all(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GEPLUG_SIM_RANK_VARIATION", "0")  # exact model times: no variation
    onnx.save(_model(1024), "ar.onnx")
    (tmp_path / "cfg.toml").write_text(PROFILING)
    assert main(["run", "ar.onnx", "--ranks", "1024", "--analytic", "--product", "atlas_a2",
                 "--config", "cfg.toml", "--quiet"]) == 0
    assert len(glob.glob("prof/*/PROF_*")) == 1024
    db = _analyse(str(tmp_path / "prof"), "all")
    assert db.execute("SELECT COUNT(*) FROM RankDeviceMap").fetchone() == (1024,)
    rows = db.execute("SELECT COUNT(DISTINCT rank_id), MIN(elapsed_time), MAX(elapsed_time) "
                      "FROM ClusterCommunicationTime "
                      "WHERE hccl_op_name = 'hcom_allReduce__ar'").fetchone()
    assert rows[0] == 1024
    assert rows[1] == pytest.approx(_model_ms(1024), abs=2e-6)
    assert rows[2] == pytest.approx(_model_ms(1024), abs=2e-6)
