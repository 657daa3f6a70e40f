"""The torch example trains, dumps and profiles on atlas_a2 (executed as a user runs it)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("geplug_torch")

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")

SCRIPT = os.path.join(os.path.dirname(__file__), "train.py")


def test_example_trains_with_dumps_and_the_profiler(tmp_path):
    r = subprocess.run([sys.executable, SCRIPT, str(tmp_path), "--steps", "4"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    losses = [float(line.split()[-1]) for line in r.stdout.splitlines()
              if line.startswith("step ")]
    assert len(losses) == 4 and losses[-1] < losses[0]
    (peak,) = [line for line in r.stdout.splitlines() if line.startswith("device memory peak")]
    params, states = (float(peak.split(word)[1].split()[0])
                      for word in ("(parameters ", "AdamW states "))
    assert params > 0 and states == pytest.approx(2 * params, abs=0.15)  # AdamW's two moments
    steps = {int(os.path.basename(root)) for root, _dirs, files in os.walk(tmp_path / "dump")
             if files and os.path.basename(root).isdigit()}
    assert steps == {1, 2}
    (pt,) = [p for p in (tmp_path / "prof").iterdir() if p.name.endswith("_ascend_pt")]
    assert (pt / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").is_file()
    summary = subprocess.run([sys.executable, "-m", "geplug.cli.main", "profile", "summary",
                              str(pt)], capture_output=True, text=True, timeout=120)
    assert summary.returncode == 0 and "MatMulV2" in summary.stdout, summary.stderr
