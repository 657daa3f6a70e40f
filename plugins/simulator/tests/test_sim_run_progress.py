"""``geplug run`` shows its progress (steps, then the final export) on a terminal only, and
never with ``--quiet``."""

from __future__ import annotations

import io
from pathlib import Path

import onnx
import pytest
from onnx import helper
from sim_helpers import any_product, f32, graph_model

from geplug.cli import progress as prog
from geplug.cli.main import main


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _model(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.onnx"
    onnx.save(graph_model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                          [f32("x", [2, 8])], [f32("y", [2, 8])]), str(path))
    return path


def _run_stderr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stream: io.StringIO,
                *extra: str) -> str:
    model = _model(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(prog.sys, "stderr", stream)
    monkeypatch.setattr(prog, "DELAY_S", 0.0)
    assert main(["run", str(model), "--product", any_product().name, "--steps", "2",
                 *extra]) == 0
    return stream.getvalue()


def test_run_shows_progress_on_a_terminal(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    assert "running tiny.onnx" in _run_stderr(tmp_path, monkeypatch, _Tty())


def test_run_quiet_shows_no_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _run_stderr(tmp_path, monkeypatch, _Tty(), "--quiet") == ""


def test_run_in_a_pipe_shows_no_progress(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    assert _run_stderr(tmp_path, monkeypatch, io.StringIO()) == ""
