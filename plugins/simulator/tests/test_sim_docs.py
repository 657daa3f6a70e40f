"""docs/simulator.md runs as written: its Python and bash blocks, in an empty directory."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("geplug_simulator")

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")

DOC = Path(__file__).resolve().parents[3] / "docs" / "simulator.md"
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def doc_blocks(lang: str) -> list[str]:
    """The code blocks of docs/simulator.md fenced with ``lang``."""
    return [body for tag, body in _BLOCK.findall(DOC.read_text(encoding="utf-8"))
            if tag == lang]


def test_python_blocks_run_in_an_empty_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    blocks = doc_blocks("python")
    assert blocks
    for code in blocks:
        exec(compile(code, str(DOC), "exec"), {"__name__": "__doc_example__"})
    assert "fc1 MatMul MatMulV2" in capsys.readouterr().out


def test_bash_blocks_run_in_an_empty_directory(tmp_path):
    if shutil.which("geplug") is None or shutil.which("python") is None:
        pytest.skip("the geplug command is not on PATH")
    blocks = doc_blocks("bash")
    assert blocks
    for script in blocks:
        done = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120, env={**os.environ, "PYTHONWARNINGS": ""})
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
    assert (tmp_path / "out.npz").is_file()
    assert "dump:" in done.stdout and "profiling:" in done.stdout
