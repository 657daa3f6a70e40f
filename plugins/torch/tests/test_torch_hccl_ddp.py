"""DDP over torchrun on the ``hccl`` backend (docs/distributed.md "PyTorch: the hccl backend").

Two real processes per run (``torchrun --nproc_per_node 2``): the same plain DDP script on
gloo and on hccl; the hccl run's gradients must be gloo's, bit for bit, and its profiler
output must carry the HCCL model's communication tasks.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys

import pytest

from geplug.hccl import Topology, read_settings, simulate
from geplug.plugin import get_manager

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "hccl_ddp_job.py")
PARAM_BYTES = (32 * 64 + 64 + 64 * 8 + 8) * 4
"""The script's MLP: one DDP gradient bucket of float32 parameters."""


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


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One gloo run and one profiled hccl run of the script."""
    root = str(tmp_path_factory.mktemp("ddp"))
    dirs = {}
    for key, backend, extra in (("gloo", "gloo", ()), ("hccl", "hccl", ("--profile",)),
                                ("compiled", "hccl", ("--profile", "--compile"))):
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


def test_allreduces_follow_the_backward_kernels_on_the_device_timeline(runs):
    for d in _ascend_pt(runs["compiled"]):
        with open(os.path.join(d, "ASCEND_PROFILER_OUTPUT", "trace_view.json")) as fh:
            events = json.load(fh)
        pids = {e["args"]["name"]: e["pid"] for e in events
                if e.get("ph") == "M" and e.get("name") == "process_name"}
        spans = [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in events
                 if e.get("ph") == "X" and e.get("pid") == pids["Ascend Hardware"]]
        reduces = [float(e["ts"]) for e in events if e.get("ph") == "X"
                   and e.get("pid") == pids["Communication"]
                   and e["name"].startswith("hcom_allReduce__")]
        assert len(reduces) == 3 and spans
        for ts in reduces:
            before = [end for start, end in spans if start < ts]
            assert before and max(before) <= ts + 1e-3


def test_a_new_group_sub_group_runs_its_collectives_on_hccl(runs):
    result = torch.load(os.path.join(runs["hccl"], "subgroup.pt"))
    assert torch.equal(result, torch.full((3,), 2.0))


def test_each_rank_writes_its_own_ascend_pt_with_its_rank(runs):
    dirs = _ascend_pt(runs["hccl"])
    assert len(dirs) == 2
    ranks = sorted(int(os.path.basename(p)[len("profiler_info_"):-len(".json")])
                   for d in dirs for p in glob.glob(os.path.join(d, "profiler_info_*.json")))
    assert ranks == [0, 1]


def test_profiler_communication_json_carries_the_hccl_models_allreduce_time(runs):
    product = get_manager().products().get("atlas_a2")
    model = simulate(Topology.generated(product, 2), "allreduce", float(PARAM_BYTES),
                     read_settings({}))
    for d in _ascend_pt(runs["hccl"]):
        with open(os.path.join(d, "ASCEND_PROFILER_OUTPUT", "communication.json")) as fh:
            comm = json.load(fh)
        ops = next(iter(comm.values()))["collective"]
        reduces = {k: v for k, v in ops.items() if k.startswith("hcom_allReduce__")}
        assert len(reduces) == 3  # one gradient bucket per step
        for op in reduces.values():
            info = op["Communication Time Info"]
            assert info["Elapse Time(ms)"] == pytest.approx(model.duration_us / 1000, abs=2e-6)
            hccs = op["Communication Bandwidth Info"]["HCCS"]
            assert hccs["Transit Size(MB)"] == pytest.approx(PARAM_BYTES / 1e6)


def test_profiler_trace_view_has_a_communication_track_with_the_allreduces(runs):
    for d in _ascend_pt(runs["hccl"]):
        with open(os.path.join(d, "ASCEND_PROFILER_OUTPUT", "trace_view.json")) as fh:
            events = json.load(fh)
        pid = next(e["pid"] for e in events if e.get("ph") == "M"
                   and e.get("name") == "process_name"
                   and e.get("args", {}).get("name") == "Communication")
        names = [e["name"] for e in events if e.get("ph") == "X" and e.get("pid") == pid]
        assert sum(n.startswith("hcom_allReduce__") for n in names) == 3


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
