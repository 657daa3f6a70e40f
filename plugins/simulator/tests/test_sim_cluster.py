"""Multi-rank ONNX runs: exact collectives across virtual devices, per-rank artifacts with the
HCCL model's times, faults (docs/distributed.md)."""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("geplug_simulator")

import onnx
from geplug_simulator.cluster import ClusterJob, seeded_inputs
from onnx import TensorProto, helper, numpy_helper

from geplug.cli.main import main
from geplug.errors import HcclError
from geplug.hccl import Topology, read_faults, read_settings, simulate
from geplug.plugin import get_manager

pytestmark = pytest.mark.requires_products("atlas_a2")

PROFILING = 'profiling_mode = true\n[profiling_options]\noutput = "prof"\ntask_time = "on"\n'


def allreduce_model(ranks: int) -> onnx.ModelProto:
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


def geplug_model(op: str, **attrs: object) -> onnx.ModelProto:
    shape = [8, 4]
    nodes = [helper.make_node("Identity", ["x"], ["xi"], name="id"),
             helper.make_node(op, ["xi"], ["y"], domain="geplug.hccl", name="c", **attrs)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.INT64,
                                                                         shape)],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("geplug.hccl", 1)])


@pytest.fixture
def job_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    onnx.save(allreduce_model(8), "ar.onnx")
    (tmp_path / "cfg.toml").write_text(PROFILING)
    return tmp_path


def _open(product: str = "atlas_a2"):
    from geplug.cli.sim_cmds import open_system

    return lambda env: open_system(product, None, env)


def _comm(prof_dir: str) -> tuple[int, dict]:
    info_path = glob.glob(os.path.join(prof_dir, "device_*", "info.json.*"))[0]
    info = json.loads(Path(info_path).read_text())
    comm = json.loads(Path(prof_dir, "analyze", "communication.json").read_text())
    return info["rank_id"], comm


def test_allreduce_on_8_ranks_gives_every_rank_the_exact_sum(job_dir):
    assert main(["run", "ar.onnx", "--ranks", "8", "--product", "atlas_a2",
                 "--output", "out.npz"]) == 0
    out = np.load("out.npz")
    w = np.eye(64, dtype=np.float32) * 0.5
    parts = [np.random.default_rng([0, r]).standard_normal((64, 64)).astype(np.float32) @ w
             for r in range(8)]
    total = parts[0].copy()
    for p in parts[1:]:
        total = total + p
    for r in range(8):
        assert np.array_equal(out[f"rank{r}/y"], np.maximum(total, 0))


def test_8_ranks_write_8_prof_dirs_with_the_hccl_models_collective_time(job_dir, monkeypatch):
    monkeypatch.setenv("GEPLUG_SIM_RANK_VARIATION", "0")  # exact model times: no variation
    assert main(["run", "ar.onnx", "--ranks", "8", "--product", "atlas_a2",
                 "--config", "cfg.toml"]) == 0
    dirs = sorted(glob.glob("prof/PROF_*"))
    assert len(dirs) == 8
    product = get_manager().products().get("atlas_a2")
    model = simulate(Topology.generated(product, 8), "allreduce", 64 * 64 * 4,
                     read_settings({}))
    seen = set()
    for d in dirs:
        rank, comm = _comm(d)
        seen.add(rank)
        op = comm["hcom_allReduce__ar@hccl_world_group"]
        assert op["Communication Time Info"]["Elapse Time(ms)"] == pytest.approx(
            model.duration_us / 1000, abs=2e-6)
        assert op["Communication Bandwidth Info"]["HCCS"]["Transit Size(MB)"] > 0
        matrix = json.loads(Path(d, "analyze", "communication_matrix.json").read_text())
        pairs = matrix["hcom_allReduce__ar@hccl_world_group"]
        assert f"{rank}-{rank}" in pairs and len(pairs) == 8  # self link + 7 mesh peers
    assert seen == set(range(8))


def test_slow_rank_is_the_one_nobody_waits_for(job_dir, monkeypatch):
    monkeypatch.setenv("GEPLUG_SIM_SLOW_RANK", "3:4")
    assert main(["run", "ar.onnx", "--ranks", "8", "--product", "atlas_a2",
                 "--config", "cfg.toml", "--steps", "2"]) == 0
    sync = {}
    for d in glob.glob("prof/PROF_*"):
        rank, comm = _comm(d)
        sync[rank] = comm["hcom_allReduce__ar@hccl_world_group"][
            "Communication Time Info"]["Synchronization Time(ms)"]
    assert sync[3] == 0 and all(sync[r] > 0 for r in sync if r != 3)


def test_a_rank_that_never_joins_ends_with_hccls_socket_timeout(job_dir, monkeypatch, capsys):
    monkeypatch.setenv("GEPLUG_SIM_ABSENT_RANK", "5")
    assert main(["run", "ar.onnx", "--ranks", "8", "--product", "atlas_a2"]) == 1
    err = capsys.readouterr().err
    assert "EI0006" in err and "Getting socket times out" in err and "rank(s) 5" in err
    assert "HCCL_CONNECT_TIMEOUT 120 s + 20 s" in err and "Traceback" not in err


def test_connect_timeout_setting_appears_in_the_timeout_error(job_dir, monkeypatch, capsys):
    monkeypatch.setenv("GEPLUG_SIM_ABSENT_RANK", "2")
    monkeypatch.setenv("HCCL_CONNECT_TIMEOUT", "300")
    assert main(["run", "ar.onnx", "--ranks", "8", "--product", "atlas_a2"]) == 1
    assert "HCCL_CONNECT_TIMEOUT 300 s + 20 s = 320 s" in capsys.readouterr().err


def test_rank_table_device_ip_differing_from_the_nic_fails_with_ei0014(tmp_path, monkeypatch):
    table = {"status": "completed", "version": "1.0", "server_count": "1", "server_list": [
        {"server_id": "s0", "device": [{"device_id": str(d), "device_ip": f"10.0.0.{d + 1}",
                                        "rank_id": str(d)} for d in range(8)]}]}
    path = tmp_path / "rt.json"
    path.write_text(json.dumps(table))
    product = get_manager().products().get("atlas_a2")
    topo = Topology.from_rank_table(product, str(path))
    with pytest.raises(HcclError) as err:
        ClusterJob(topo, _open(), settings=read_settings({}),
                   faults=read_faults({"GEPLUG_SIM_NIC_IP": "3=10.0.9.9"}))
    assert err.value.code == "EI0014" and "10.0.0.4" in str(err.value)


@pytest.mark.parametrize(("op", "attrs", "expect"), [
    ("HcomAllGather", {"axis": 0}, lambda xs, r: np.concatenate(xs, axis=0)),
    ("HcomReduceScatter", {"reduction": "sum"}, lambda xs, r: sum(xs)[r * 2:(r + 1) * 2]),
    ("HcomBroadcast", {"root_rank": 2}, lambda xs, r: xs[2]),
    ("HcomReduce", {"root_rank": 1, "reduction": "max"},
     lambda xs, r: np.max(xs, axis=0) if r == 1 else xs[r]),
    ("HcomAllToAll", {}, lambda xs, r: np.concatenate([x[r * 2:(r + 1) * 2] for x in xs])),
    ("HcomSend", {"src_rank": 0, "dest_rank": 3}, lambda xs, r: xs[0] if r == 3 else xs[r]),
])
def test_geplug_domain_collectives_are_exact_on_every_rank(op, attrs, expect, tmp_path,
                                                           monkeypatch):
    monkeypatch.chdir(tmp_path)
    product = get_manager().products().get("atlas_a2")
    topo = Topology.generated(product, 4)
    with ClusterJob(topo, _open(), settings=read_settings({}), faults=read_faults({})) as job:
        job.compile(geplug_model(op, **attrs))
        xs = [np.arange(32, dtype=np.int64).reshape(8, 4) * (r + 1) + r for r in range(4)]
        outs = job.run([{"x": x} for x in xs], step=0)
    for r in range(4):
        assert np.array_equal(outs[r]["y"], expect(xs, r)), (op, r)


def test_group_size_other_than_the_job_is_a_clear_compile_error(job_dir, capsys):
    assert main(["run", "ar.onnx", "--ranks", "4", "--product", "atlas_a2"]) == 1
    assert "group_size 8 but the job has 4 ranks" in capsys.readouterr().err


def test_per_rank_inputs_come_from_npy_files_with_rank_in_the_path(job_dir):
    for r in range(8):
        np.save(f"x_{r}.npy", np.full((64, 64), r, np.float32))
    assert main(["run", "ar.onnx", "--ranks", "8", "--product", "atlas_a2",
                 "--input", "x=x_{rank}.npy", "--output", "o.npz"]) == 0
    assert np.all(np.load("o.npz")["rank5/y"] == sum(range(8)) * 0.5)


def test_analytic_mode_matches_the_exact_runs_collective_times(job_dir, monkeypatch):
    monkeypatch.setenv("GEPLUG_SIM_RANK_VARIATION", "0")  # exact model times: no variation
    assert main(["run", "ar.onnx", "--ranks", "8", "--analytic", "--product", "atlas_a2",
                 "--config", "cfg.toml"]) == 0
    dirs = glob.glob("prof/PROF_*")
    assert len(dirs) == 8
    product = get_manager().products().get("atlas_a2")
    model = simulate(Topology.generated(product, 8), "allreduce", 64 * 64 * 4,
                     read_settings({}))
    for d in dirs:
        _, comm = _comm(d)
        assert comm["hcom_allReduce__ar@hccl_world_group"]["Communication Time Info"][
            "Elapse Time(ms)"] == pytest.approx(model.duration_us / 1000, abs=2e-6)


def test_analytic_multi_server_job_writes_each_servers_ranks_in_its_own_dir(tmp_path,
                                                                           monkeypatch):
    monkeypatch.chdir(tmp_path)
    onnx.save(allreduce_model(32), "ar32.onnx")
    (tmp_path / "cfg.toml").write_text(PROFILING)
    assert main(["run", "ar32.onnx", "--ranks", "32", "--analytic", "--product", "atlas_a2",
                 "--config", "cfg.toml"]) == 0
    assert sorted(os.listdir("prof")) == [f"server{s}" for s in range(4)]
    assert len(glob.glob("prof/server*/PROF_*")) == 32
    _, comm = _comm(glob.glob("prof/server1/PROF_*")[0])
    rdma = comm["hcom_allReduce__ar@hccl_world_group"]["Communication Bandwidth Info"]["RDMA"]
    assert rdma["Transit Size(MB)"] > 0


def test_seeded_inputs_differ_by_rank_and_repeat_by_seed(job_dir):
    product = get_manager().products().get("atlas_a2")
    with ClusterJob(Topology.generated(product, 2), _open(), settings=read_settings({}),
                    faults=read_faults({})) as job:
        job.compile(allreduce_model(2))
        a = seeded_inputs(job.ranks[0].compiled, 0, 0)["x"]
        b = seeded_inputs(job.ranks[1].compiled, 0, 1)["x"]
        assert not np.array_equal(a, b)
        assert np.array_equal(a, seeded_inputs(job.ranks[1].compiled, 0, 0)["x"])


def test_a_single_system_refuses_a_collective_and_points_at_ranks(job_dir, capsys):
    assert main(["run", "ar.onnx", "--product", "atlas_a2"]) == 1
    err = capsys.readouterr().err
    assert "node 'ar' is a collective" in err and "--ranks N" in err


def _waits(key: str = "Synchronization Time(ms)") -> dict[int, float]:
    waits = {}
    for d in glob.glob("prof/PROF_*"):
        rank, comm = _comm(d)
        waits[rank] = comm["hcom_allReduce__ar@hccl_world_group"][
            "Communication Time Info"][key]
    return waits


def test_rank_to_rank_variation_makes_slower_ranks_wait_less(job_dir):
    assert main(["run", "ar.onnx", "--ranks", "8", "--product", "atlas_a2",
                 "--config", "cfg.toml"]) == 0
    waits = _waits()
    faults = read_faults({})  # the default variation
    by_speed = sorted(range(8), key=lambda r: faults.compute_factor(r, 8))
    assert waits[by_speed[-1]] == 0 and waits[by_speed[0]] > 0
    ordered = [waits[r] for r in by_speed]  # fastest first: it waits longest
    assert ordered == sorted(ordered, reverse=True) and len(set(ordered)) >= 6


def test_default_slow_rank_waits_least_and_the_others_wait_about_its_compute(job_dir,
                                                                            monkeypatch):
    monkeypatch.setenv("GEPLUG_SIM_SLOW_RANK", "3")
    assert main(["run", "ar.onnx", "--ranks", "8", "--product", "atlas_a2",
                 "--config", "cfg.toml"]) == 0
    waits = _waits()
    assert waits[3] == 0
    fast = [w for r, w in waits.items() if r != 3]
    assert min(fast) > 0.5 * max(fast)  # everyone waits about rank 3's extra compute


def test_ranks_further_apart_than_hccl_exec_timeout_fail_with_ei0002(job_dir, monkeypatch,
                                                                     capsys):
    monkeypatch.setenv("GEPLUG_SIM_SLOW_RANK", "3:1e9")
    monkeypatch.setenv("HCCL_EXEC_TIMEOUT", "1")
    assert main(["run", "ar.onnx", "--ranks", "8", "--product", "atlas_a2"]) == 1
    err = capsys.readouterr().err
    assert "EI0002: The wait execution of the Notify register times out" in err
    assert "remote rank [3]" in err and "HCCL_EXEC_TIMEOUT 1 s" in err
    assert "Traceback" not in err
