"""``GEPLUG_SIM_SLOW_RANK=3`` on a 4-process torchrun DDP job, found by msprof-analyze's
``cluster -m slow_rank`` (docs/distributed.md "Rank-to-rank variation").

One torchrun run (4 ranks, the model compiled by geplug, the profiler's text and database
exports), then msprof-analyze 26.2.0's slow_rank recipe over the four
``ascend_pytorch_profiler_{rank}.db``. Slow (~1 min on 2 cores): the one focused end-to-end
check of the slow-rank fault on the torch path. Runs in the torch tox env, which installs
msprof-analyze; skipped where it is absent.
"""

from __future__ import annotations

import csv
import glob
import os
import subprocess

import pytest

pytest.importorskip("torch")
pytest.importorskip("msprof_analyze", reason="the torch tox env installs msprof-analyze")

from test_torch_hccl_ddp import msprof_analyze_tool, torchrun

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")

STEPS = 3



@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The profiled 4-rank DDP run with rank 3 slow (default factor 2, default variation)."""
    out = str(tmp_path_factory.mktemp("slowrank"))
    done = torchrun(out, "hccl", out, "--profile", "--compile", "--db", f"--steps={STEPS}",
                    env={"GEPLUG_SIM_SLOW_RANK": "3"}, nproc=4)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def _rank_dirs(out: str) -> dict[int, str]:
    found = {}
    for d in glob.glob(os.path.join(out, "prof", "*_ascend_pt")):
        (info,) = glob.glob(os.path.join(d, "profiler_info_*.json"))
        found[int(os.path.basename(info)[len("profiler_info_"):-len(".json")])] = d
    return found


def _kernel_time(d: str) -> float:
    with open(os.path.join(d, "ASCEND_PROFILER_OUTPUT", "kernel_details.csv")) as fh:
        rows = list(csv.DictReader(fh))
    col = next(k for k in rows[0] if k.startswith("Duration"))
    return sum(float(r[col]) for r in rows if not r["Name"].startswith("hcom_"))


def test_slow_rank_recipe_names_rank_3_of_a_torchrun_ddp_job(job):
    out = os.path.join(job, "analysis")
    proc = subprocess.run([msprof_analyze_tool(), "cluster", "-d", os.path.join(job, "prof"), "-m",
                           "slow_rank", "--export_type", "text", "-o", out],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    stats = os.path.join(out, "cluster_analysis_output", "SlowRankAnalysis", "rank_stats.csv")
    with open(stats) as fh:
        votes = {int(r["rankId"]): int(r["slowAffectCount"]) for r in csv.DictReader(fh)}
    assert set(votes) == {3}
    assert votes[3] >= STEPS  # at least every step's gradient allreduce


def test_the_slow_ranks_kernels_are_twice_as_long_on_its_own_timeline(job):
    dirs = _rank_dirs(job)
    assert sorted(dirs) == [0, 1, 2, 3]
    times = {r: _kernel_time(d) for r, d in dirs.items()}
    for r in (0, 1, 2):  # factor 2, each rank within its few-percent variation
        assert 1.85 < times[3] / times[r] < 2.15
