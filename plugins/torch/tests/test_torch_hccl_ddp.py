"""DDP over torchrun on the ``hccl`` backend (docs/distributed.md "PyTorch: the hccl backend").

Two real processes per run (``torchrun --nproc_per_node 2``): the same plain DDP script on
gloo and on hccl (eager, and compiled by geplug's torch.compile backend); the hccl runs'
gradients must be gloo's, bit for bit, and their profiler output must carry the HCCL
model's communication tasks the way torch_npu writes them: per step in communication.json,
counted in step_trace_time.csv (overlapping the backward pass where DDP's buckets let it),
and read so by ``msprof-analyze cluster`` (run once, on the compiled run).
"""

from __future__ import annotations

import csv
import glob
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from geplug.hccl import Topology, read_settings, simulate
from geplug.plugin import get_manager

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "hccl_ddp_job.py")
PARAM_BYTES = (32 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 8 + 8) * 4
"""The script's MLP: float32 gradients every step all-reduces once, in 1 MB buckets."""


def torchrun(out: str, *args: str, env: dict[str, str] | None = None, nproc: int = 2
             ) -> subprocess.CompletedProcess[str]:
    """Run the DDP script on ``nproc`` local ranks (the torchrun of the venv running the
    tests)."""
    run_env = {**os.environ, "GEPLUG_PRODUCT": "atlas_a2", "OMP_NUM_THREADS": "1",
               **(env or {})}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
           str(nproc), JOB, *args]
    os.makedirs(out, exist_ok=True)
    return subprocess.run(cmd, env=run_env, cwd=out, capture_output=True, text=True,
                          timeout=600)


def msprof_analyze_tool() -> str:
    """The ``msprof-analyze`` of the venv running the tests (skips the test without it)."""
    found = shutil.which("msprof-analyze") or os.path.join(os.path.dirname(sys.executable),
                                                           "msprof-analyze")
    if not os.path.exists(found):
        pytest.skip("msprof-analyze is not on PATH")
    return found


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The wide MLP on gloo, on hccl under the profiler, and on hccl under the profiler with
    the DDP module compiled by geplug (its buckets' allreduces overlap backward)."""
    root = str(tmp_path_factory.mktemp("ddp"))
    dirs = {}
    for key, backend, extra in (("gloo", "gloo", ("--wide",)),
                                ("hccl", "hccl", ("--wide", "--profile")),
                                ("compiled", "hccl", ("--wide", "--profile", "--compile-ddp",
                                                      "--db"))):
        out = os.path.join(root, key)
        # exact model times: the rank-to-rank variation pinned off
        done = torchrun(out, backend, out, *extra, env={"GEPLUG_SIM_RANK_VARIATION": "0"})
        assert done.returncode == 0, done.stderr[-3000:]
        dirs[key] = out
    return dirs


def _ascend_pt(out: str) -> list[str]:
    return sorted(glob.glob(os.path.join(out, "prof", "*_ascend_pt")))


def test_ddp_on_hccl_trains_with_the_same_gradients_as_gloo(runs):
    for rank in (0, 1):
        hccl = torch.load(os.path.join(runs["hccl"], f"grads_{rank}.pt"))
        gloo = torch.load(os.path.join(runs["gloo"], f"grads_{rank}.pt"))
        assert len(hccl) == len(gloo) == 3
        for step_h, step_g in zip(hccl, gloo, strict=True):
            assert all(torch.equal(a, b) for a, b in zip(step_h, step_g, strict=True))


def test_ddp_over_a_geplug_compiled_model_on_hccl_has_gloos_gradients(runs):
    for rank in (0, 1):
        hccl = torch.load(os.path.join(runs["compiled"], f"grads_{rank}.pt"))
        gloo = torch.load(os.path.join(runs["gloo"], f"grads_{rank}.pt"))
        for step_h, step_g in zip(hccl, gloo, strict=True):
            assert all(torch.equal(a, b) for a, b in zip(step_h, step_g, strict=True))


def test_a_new_group_sub_group_runs_its_collectives_on_hccl(runs):
    result = torch.load(os.path.join(runs["hccl"], "subgroup.pt"))
    assert torch.equal(result, torch.full((3,), 2.0))


def test_each_rank_writes_its_own_ascend_pt_with_its_rank(runs):
    dirs = _ascend_pt(runs["hccl"])
    assert len(dirs) == 2
    ranks = sorted(int(os.path.basename(p)[len("profiler_info_"):-len(".json")])
                   for d in dirs for p in glob.glob(os.path.join(d, "profiler_info_*.json")))
    assert ranks == [0, 1]


def _output(d: str, name: str) -> str:
    return os.path.join(d, "ASCEND_PROFILER_OUTPUT", name)


def _json(path: str) -> object:
    with open(path) as fh:
        return json.load(fh)


def _steps(d: str) -> dict[str, dict[str, float]]:
    """step_trace_time.csv: step -> column -> µs."""
    with open(_output(d, "step_trace_time.csv"), newline="") as fh:
        return {r["Step"]: {k: float(v) for k, v in r.items() if k not in ("Device_id", "Step")}
                for r in csv.DictReader(fh)}


def _rank(d: str) -> int:
    found = glob.glob(os.path.join(d, "profiler_info_*.json"))[0]
    return int(os.path.basename(found)[len("profiler_info_"):-len(".json")])


def _trace(d: str) -> tuple[list[dict], dict[str, int]]:
    events = _json(_output(d, "trace_view.json"))
    pids = {e["args"]["name"]: e["pid"] for e in events
            if e.get("ph") == "M" and e.get("name") == "process_name"}
    return events, pids


def _elapse_ms(op: dict) -> float:
    return op["Communication Time Info"]["Elapse Time(ms)"]


def test_profiler_communication_json_carries_the_hccl_models_allreduce_time(runs):
    product = get_manager().products().get("atlas_a2")
    topology, settings = Topology.generated(product, 2), read_settings({})
    for d in _ascend_pt(runs["hccl"]):
        comm = _json(_output(d, "communication.json"))
        for step in comm.values():
            reduces = [v for k, v in step["collective"].items()
                       if k.startswith("hcom_allReduce__")]
            sizes = [op["Communication Bandwidth Info"]["HCCS"]["Transit Size(MB)"]
                     for op in reduces]
            assert sum(sizes) == pytest.approx(PARAM_BYTES / 1e6)  # every gradient, once
            for op, mb in zip(reduces, sizes, strict=True):
                model = simulate(topology, "allreduce", mb * 1e6, settings)
                assert _elapse_ms(op) == pytest.approx(model.duration_us / 1000, abs=2e-6)


def test_profiler_trace_view_has_a_communication_track_with_the_allreduces(runs):
    for d in _ascend_pt(runs["hccl"]):
        events, pids = _trace(d)
        names = [e["name"] for e in events if e.get("ph") == "X"
                 and e.get("pid") == pids["Communication"]]
        listed = [k for step in _json(_output(d, "communication.json")).values()
                  for k in step["collective"] if k.startswith("hcom_allReduce__")]
        assert sum(n.startswith("hcom_allReduce__") for n in names) == len(listed) >= 3


@pytest.mark.parametrize("run", ["hccl", "compiled"])
def test_communication_json_files_each_steps_collectives_under_that_step(runs, run):
    for d in _ascend_pt(runs[run]):
        with open(os.path.join(runs[run], f"issued_{_rank(d)}.json")) as fh:
            issued = json.load(fh)  # what torch handed the backend, per training step
        comm = _json(_output(d, "communication.json"))
        assert list(comm) == [f"step{n}" for n in range(len(issued))]
        assert [len(s["collective"]) + len(s["p2p"]) for s in comm.values()] == issued


def test_step_trace_time_communication_is_the_steps_collective_time(runs):
    for d in _ascend_pt(runs["compiled"]):
        comm = _json(_output(d, "communication.json"))
        for step, row in _steps(d).items():
            ops = comm[f"step{step}"]["collective"].values()
            # collectives follow each other on the communication stream: their union is
            # the sum of their times
            assert row["Communication"] == pytest.approx(
                1000 * sum(_elapse_ms(op) for op in ops), abs=2e-3)
            assert row["Communication"] > 0


def test_ddp_allreduces_overlap_the_rest_of_backward(runs):
    for d in _ascend_pt(runs["compiled"]):
        events, pids = _trace(d)
        kernels = [(float(e["ts"]), e["name"]) for e in events if e.get("ph") == "X"
                   and e.get("pid") == pids["Ascend Hardware"]]
        reduces = [(float(e["ts"]), float(e["ts"]) + e["dur"]) for e in events
                   if e.get("ph") == "X" and e.get("pid") == pids["Communication"]
                   and e["name"].startswith("hcom_allReduce__")]
        beside = [n for ts, n in kernels for a, b in reduces if a <= ts < b]
        assert beside and all(n.startswith("gradients/") for n in beside)
        steps = _steps(d)
        assert all(row["Overlapped"] > 0 for step, row in steps.items() if step != "0")
        assert all(row["Communication(Not Overlapped)"] ==
                   pytest.approx(row["Communication"] - row["Overlapped"], abs=2e-3)
                   for row in steps.values())


def test_computing_unoverlapped_communication_and_free_make_up_the_step(runs):
    for d in _ascend_pt(runs["compiled"]):
        events, _ = _trace(d)
        step_us = {e["name"][len("ProfilerStep#"):]: e["dur"] for e in events
                   if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#")}
        for step, row in _steps(d).items():
            parts = row["Computing"] + row["Communication(Not Overlapped)"] + row["Free"]
            assert parts == pytest.approx(step_us[step], abs=3e-3)
            assert row["Computing"] > 0 and row["Stage"] == pytest.approx(step_us[step],
                                                                          abs=1e-3)


def test_overlap_analysis_track_carries_the_step_trace_time_numbers(runs):
    for d in _ascend_pt(runs["compiled"]):
        events, pids = _trace(d)
        assert list(pids).count("Overlap Analysis") == 1
        spans = {e["name"][len("ProfilerStep#"):]: (float(e["ts"]), float(e["ts"]) + e["dur"])
                 for e in events if e.get("ph") == "X"
                 and e["name"].startswith("ProfilerStep#")}
        for step, row in _steps(d).items():
            a, b = spans[step]
            for name in ("Computing", "Communication", "Communication(Not Overlapped)",
                         "Free"):
                total = sum(e["dur"] for e in events if e.get("ph") == "X"
                            and e.get("pid") == pids["Overlap Analysis"]
                            and e["name"] == name and a <= float(e["ts"]) < b)
                assert total == pytest.approx(row[name], abs=3e-3)


def _cluster(prof: str, mode: str = "communication_time") -> subprocess.CompletedProcess[str]:
    """``msprof-analyze cluster -m mode`` over ``prof``'s ranks."""
    pytest.importorskip("msprof_analyze", reason="the torch tox env installs msprof-analyze")
    done = subprocess.run([msprof_analyze_tool(), "cluster", "-d", prof, "-m", mode],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done


@pytest.fixture(scope="module")
def text_prof(runs: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> str:
    """The compiled run's collections without their databases: msprof-analyze prefers the
    databases when they are there, so this is what a text-only export gives it."""
    prof = str(tmp_path_factory.mktemp("text_prof"))
    for d in _ascend_pt(runs["compiled"]):
        shutil.copytree(d, os.path.join(prof, os.path.basename(d)),
                        ignore=shutil.ignore_patterns("*.db"))
    return prof


@pytest.fixture(scope="module")
def cluster_run(text_prof: str) -> subprocess.CompletedProcess[str]:
    """``msprof-analyze cluster -m communication_time`` over the text export's two ranks."""
    return _cluster(text_prof)


@pytest.fixture(scope="module")
def cluster(text_prof: str, cluster_run: subprocess.CompletedProcess[str]) -> str:
    """The text cluster run's output directory."""
    return os.path.join(text_prof, "cluster_analysis_output")


@pytest.fixture(scope="module")
def cluster_db_run(runs: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``msprof-analyze cluster -m all`` (communication time and matrix, step trace) over the
    collections as written (``ExportType.Db`` too: the database route)."""
    return _cluster(os.path.join(runs["compiled"], "prof"), "all")


def _cluster_table(runs: dict[str, str], table: str) -> list[dict[str, object]]:
    import sqlite3

    path = os.path.join(runs["compiled"], "prof", "cluster_analysis_output",
                        "cluster_analysis.db")
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(f"SELECT * FROM {table}")]
    finally:
        conn.close()


def test_database_communication_ops_name_their_group_by_its_parallel_group_info_key(runs):
    import sqlite3

    for d in _ascend_pt(runs["compiled"]):
        conn = sqlite3.connect(_output(d, f"ascend_pytorch_profiler_{_rank(d)}.db"))
        try:
            meta = dict(conn.execute("SELECT name, value FROM META_DATA"))
            groups = json.loads(meta["parallel_group_info"])
            names = [v for (v,) in conn.execute(
                "SELECT s.value FROM COMMUNICATION_OP o JOIN STRING_IDS s ON s.id = o.groupName")]
        finally:
            conn.close()
        assert names and all(groups[n]["group_name"] == "default_group" for n in names)


def test_cluster_reads_the_database_export_with_each_ranks_analysis_db(cluster_db_run):
    log = cluster_db_run.stdout + cluster_db_run.stderr
    assert "data type: db" in log
    assert "missing analysis DB file" not in log
    assert "does not have a valid step_trace_time" not in log


def test_cluster_database_route_gives_the_text_exports_collective_times(runs, cluster_db_run):
    rows = {(r["step"], str(r["rank_id"]), r["hccl_op_name"]): r
            for r in _cluster_table(runs, "ClusterCommunicationTime")}
    seen = 0
    for d in _ascend_pt(runs["compiled"]):
        for step, ops in _json(_output(d, "communication.json")).items():
            for name, op in ops["collective"].items():
                row = rows[(step, str(_rank(d)), name.split("@")[0])]
                assert row["elapsed_time"] == pytest.approx(_elapse_ms(op))
                seen += 1
    assert seen >= 6


def test_cluster_all_on_the_database_export_runs_every_analysis(cluster_db_run):
    log = cluster_db_run.stdout + cluster_db_run.stderr
    assert "launched failed" not in log and "Traceback" not in log


def test_cluster_database_route_gives_the_text_exports_communication_matrix(runs,
                                                                           cluster_db_run):
    rows = {(r["step"], r["hccl_op_name"], r["src_rank"], r["dst_rank"]): r
            for r in _cluster_table(runs, "ClusterCommunicationMatrix")}
    seen = 0
    for d in _ascend_pt(runs["compiled"]):
        for step, ops in _json(_output(d, "communication_matrix.json")).items():
            for name, links in ops["collective"].items():
                for pair, link in links.items():
                    if link["Transport Type"] == "LOCAL":
                        continue
                    src, _, dst = pair.partition("-")
                    row = rows[(step, name.split("@")[0], float(src), float(dst))]
                    assert row["transit_size"] == pytest.approx(link["Transit Size(MB)"])
                    assert row["transit_time"] == pytest.approx(link["Transit Time(ms)"])
                    assert row["transport_type"] == link["Transport Type"]
                    seen += 1
    assert seen >= 6


def test_cluster_database_route_gives_the_text_exports_step_trace_time(runs, cluster_db_run):
    rows = {(str(r["index"]), str(r["step"])): r
            for r in _cluster_table(runs, "ClusterStepTraceTime") if r["type"] == "rank"}
    for d in _ascend_pt(runs["compiled"]):
        for step, mine in _steps(d).items():
            row = rows[(str(_rank(d)), step)]
            for column, key in (("Computing", "computing"), ("Communication", "communication"),
                                ("Overlapped", "overlapped"), ("Free", "free"),
                                ("Communication(Not Overlapped)",
                                 "communication_not_overlapped")):
                assert float(row[key]) == pytest.approx(mine[column], abs=1e-3)


def test_profiler_metadata_has_torch_npus_parallel_group_info_and_no_distributed_args(runs):
    for d in _ascend_pt(runs["compiled"]):
        meta = _json(os.path.join(d, "profiler_metadata.json"))
        # torch_npu writes no distributed_args itself (Megatron or the user add them)
        assert "distributed_args" not in meta
        groups = meta["parallel_group_info"]
        world = [g for g in groups.values() if g["group_name"] == "default_group"]
        assert world == [{"group_name": "default_group", "group_rank": _rank(d),
                          "global_ranks": [0, 1]}]


def test_communication_json_names_each_ops_group_by_its_communicators_hash(runs):
    utils = pytest.importorskip("msprof_analyze.cluster_analyse.common_func.utils")
    for d in _ascend_pt(runs["compiled"]):
        groups = _json(os.path.join(d, "profiler_metadata.json"))["parallel_group_info"]
        world = next(k for k, g in groups.items() if g["group_name"] == "default_group")
        for ops in _json(_output(d, "communication.json")).values():
            for name in ops["collective"]:
                assert name.rsplit("@", 1)[1] == str(utils.double_hash(world))


def test_cluster_run_logs_no_parallel_size_error(cluster_run):
    log = cluster_run.stdout + cluster_run.stderr
    assert "world_size must be equal" not in log
    assert "distributed_args" not in log


def test_cluster_communication_group_maps_the_group_to_default_group(runs, cluster):
    found = _json(os.path.join(cluster, "communication_group.json"))
    groups = _json(os.path.join(_ascend_pt(runs["compiled"])[0],
                                "profiler_metadata.json"))["parallel_group_info"]
    world = next(k for k, g in groups.items() if g["group_name"] == "default_group")
    rows = found["comm_group_parallel_info"]
    assert [(r["type"], r["rank_set"], r["group_id"], r["pg_name"]) for r in rows] == [
        ("collective", [0, 1], world, "default_group")]


def test_cluster_communication_time_shows_each_ranks_per_step_collectives(runs, cluster):
    groups = _json(os.path.join(cluster, "cluster_communication.json"))
    steps = next(iter(groups.values()))
    for d in _ascend_pt(runs["compiled"]):
        rank = str(_rank(d))
        mine = _json(_output(d, "communication.json"))
        for step, ops in mine.items():
            for name, op in ops["collective"].items():
                assert _elapse_ms(steps[step][name][rank]) == pytest.approx(_elapse_ms(op))


def test_cluster_step_trace_time_carries_each_ranks_communication(runs, cluster):
    with open(os.path.join(cluster, "cluster_step_trace_time.csv"), newline="") as fh:
        rows = {(r["Index"], r["Step"]): r for r in csv.DictReader(fh) if r["Type"] == "rank"}
    for d in _ascend_pt(runs["compiled"]):
        for step, mine in _steps(d).items():
            row = rows[(str(_rank(d)), step)]
            for column in ("Computing", "Communication", "Overlapped",
                           "Communication(Not Overlapped)", "Free"):
                assert float(row[column]) == pytest.approx(mine[column], abs=1e-3)
            assert float(row["Communication"]) > 0


def test_a_rank_that_never_joins_ends_with_hccls_connect_timeout_not_a_hang(tmp_path):
    done = torchrun(str(tmp_path), "hccl", str(tmp_path),
                    env={"GEPLUG_SIM_ABSENT_RANK": "1", "HCCL_CONNECT_TIMEOUT": "300"})
    assert done.returncode != 0
    assert "EI0006: Getting socket times out" in done.stderr
    assert "rank(s) 1 never joined" in done.stderr and "300 s + 20 s = 320 s" in done.stderr


def test_a_rank_that_never_reaches_a_collective_ends_with_hccls_exec_timeout(tmp_path):
    done = torchrun(str(tmp_path), "hccl", str(tmp_path), "--stall-rank=1",
                    env={"HCCL_EXEC_TIMEOUT": "2"})
    assert done.returncode != 0
    assert ("EI0002: The wait execution of the Notify register times out. Reason: The Notify "
            "register has not received the Notify record from remote rank [1]") in done.stderr
    assert re.search(r"rank 0 waited 2\.\d s \(waited\) > HCCL_EXEC_TIMEOUT 2 s", done.stderr)


@pytest.fixture(scope="module")
def time_summary(runs: dict[str, str], tmp_path_factory: pytest.TempPathFactory
                 ) -> list[dict[str, object]]:
    """``msprof-analyze cluster -m cluster_time_summary`` over a copy of the compiled run's
    database export (its own output directory): the ClusterTimeSummary rows."""
    import sqlite3

    prof = str(tmp_path_factory.mktemp("time_summary"))
    for d in _ascend_pt(runs["compiled"]):
        shutil.copytree(d, os.path.join(prof, os.path.basename(d)))
    done = _cluster(prof, "cluster_time_summary")
    log = done.stdout + done.stderr
    assert "with exception" not in log, log[-2000:]
    conn = sqlite3.connect(os.path.join(prof, "cluster_analysis_output", "cluster_analysis.db"))
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM ClusterTimeSummary")]
    finally:
        conn.close()


def test_cluster_time_summary_on_the_database_export_carries_each_ranks_times(runs,
                                                                            time_summary):
    import sqlite3

    from geplug.device import copy_us

    # the script's input batch x (16 x 32 float32) goes to the device once per step
    h2d_us = copy_us(16 * 32 * 4, get_manager().products().get("atlas_a2"))
    got = {(int(r["rank"]), int(r["step"])): r for r in time_summary}
    want = {}
    for d in _ascend_pt(runs["compiled"]):
        conn = sqlite3.connect(_output(d, "analysis.db"))
        try:
            for step, computing, comm in conn.execute(
                    "SELECT step, computing, communication FROM StepTraceTime"):
                want[(_rank(d), int(step))] = (computing, comm)
        finally:
            conn.close()
    assert set(got) == set(want) and {r for r, _ in got} == {0, 1}
    for key, (computing, comm) in want.items():
        row = got[key]
        assert row["computation"] == pytest.approx(computing, abs=1e-3)
        assert row["communication"] == pytest.approx(comm, abs=1e-3)
        assert row["memory"] == pytest.approx(h2d_us, abs=1e-3)
