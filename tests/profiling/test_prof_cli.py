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


def test_plot_collapses_idle_gaps_between_steps_so_tasks_stay_visible():
    pytest.importorskip("matplotlib")
    from geplug.profiling.plot import _collapse_idle

    tasks = [("Conv2D", "AI_CORE", 1000.0, 2.0), ("Relu", "AI_VECTOR_CORE", 1003.0, 2.0),
             ("Conv2D", "AI_CORE", 9000.0, 2.0)]  # 8 ms of host time between the steps
    shifted, cuts, gap = _collapse_idle(tasks)
    assert [s for _k, _t, s, _d in shifted[:2]] == [0.0, 3.0]  # small gaps kept to scale
    assert shifted[2][2] == pytest.approx(5.0 + gap)  # the long gap shrinks to the threshold
    assert len(cuts) == 1


def test_summary_and_plot_of_a_missing_directory_are_clear_errors(tmp_path, capsys):
    missing = str(tmp_path / "nope")
    assert main(["profile", "summary", missing]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert main(["profile", "plot", missing, "--out", str(tmp_path / "x.png")]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_summary_of_a_damaged_op_summary_names_the_file_and_the_missing_columns(
        manager, tmp_path, capsys):
    run(manager, tmp_path)
    from prof_helpers import out_file

    path = out_file(tmp_path, "op_summary")
    with open(path, "w") as fh:
        fh.write("garbage,header\n1,2\n")
    assert main(["profile", "summary", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "op_summary" in err and "'Op Name'" in err


def test_top_must_be_a_positive_number(manager, tmp_path, capsys):
    run(manager, tmp_path)
    assert main(["profile", "summary", str(tmp_path), "--top", "0"]) == 2  # a usage error
    assert "--top" in capsys.readouterr().err
