"""``geplug profile summary`` and ``geplug profile plot``."""

from __future__ import annotations

import builtins
import json

import pytest
from prof_helpers import prof_dir, run

from geplug.cli.main import main


def test_summary_prints_top_ops_types_and_steps(manager, tmp_path, capsys):
    run(manager, tmp_path, steps=3, training_trace="on")
    assert main(["profile", "summary", prof_dir(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "Top ops" in text and "conv1" in text
    assert "Per op type" in text and "Conv2D" in text
    assert "Steps: 3" in text


def test_summary_json_is_machine_readable(manager, tmp_path, capsys):
    run(manager, tmp_path, steps=2, training_trace="on")
    assert main(["profile", "summary", str(tmp_path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["tasks"] == 2 * 5
    assert data["top_ops"][0]["name"] == "conv1"  # 120 us per step, the longest
    assert len(data["steps"]) == 2


def test_summary_of_a_directory_without_profiling_is_a_clear_error(tmp_path, capsys):
    assert main(["profile", "summary", str(tmp_path)]) == 1
    assert "no PROF_* directory" in capsys.readouterr().err


def test_plot_writes_a_png(manager, tmp_path):
    pytest.importorskip("matplotlib")
    run(manager, tmp_path)
    out = tmp_path / "p.png"
    assert main(["profile", "plot", prof_dir(tmp_path), "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_names_the_extra(manager, tmp_path, monkeypatch, capsys):
    run(manager, tmp_path)
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    assert main(["profile", "plot", prof_dir(tmp_path), "--out", str(tmp_path / "x.png")]) == 1
    assert "geplug[plot]" in capsys.readouterr().err
