"""The example job of docs/distributed.md: ONNX, 2 servers x 8 ranks, from its rank table."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("geplug_simulator")

from geplug.cli.main import main

pytestmark = pytest.mark.requires_products("atlas_a2")

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_example_job_runs_all_16_ranks_with_exact_collectives(tmp_path, monkeypatch):
    subprocess.run([sys.executable, os.path.join(HERE, "build_job.py"), str(tmp_path)],
                   check=True)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "dp_mlp.onnx", "--rank-table", "rank_table.json", "--product",
                 "atlas_a2", "--config", "profiling.toml", "--output", "out.npz"]) == 0
    out = np.load("out.npz")
    g = [out[f"rank{r}/g_sum"] for r in range(16)]
    assert all(np.array_equal(g[0], x) for x in g)
    a_all = out["rank0/a_all"]
    assert a_all.shape == (256, 128) and np.array_equal(a_all, out["rank15/a_all"])
    servers = sorted(os.listdir("prof"))
    assert servers == ["10.0.0.1", "10.0.0.2"]
    dirs = glob.glob("prof/*/PROF_*")
    assert len(dirs) == 16
    for d in dirs:
        comm = json.loads(Path(d, "analyze", "communication.json").read_text())
        bw = comm["hcom_allReduce__grad_allreduce@hccl_world_group"][
            "Communication Bandwidth Info"]
        assert bw["RDMA"]["Transit Size(MB)"] > 0 and bw["HCCS"]["Transit Size(MB)"] > 0
