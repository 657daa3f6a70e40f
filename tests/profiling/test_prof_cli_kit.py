"""`geplug profile summary`: names the directory, never guesses, splits device and host."""

from __future__ import annotations

import json
import shutil

from prof_helpers import prof_dir, run

from geplug.cli.main import main


def test_summary_names_the_directory_it_read(manager, tmp_path, capsys):
    run(manager, tmp_path, steps=2, training_trace="on")
    assert main(["profile", "summary", str(tmp_path)]) == 0
    assert capsys.readouterr().out.startswith(f"read {prof_dir(tmp_path)}\n")


def test_summary_refuses_to_guess_between_several_prof_dirs(manager, tmp_path, capsys):
    run(manager, tmp_path, steps=1, training_trace="on")
    first = prof_dir(tmp_path)
    second = first[:-1] + ("A" if first[-1] != "A" else "B")
    shutil.copytree(first, second)
    for argv in (["profile", "summary", str(tmp_path)],
                 ["profile", "plot", str(tmp_path), "--out", str(tmp_path / "x.png")]):
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert "holds 2 PROF_* directories; name the one to read" in err
        assert first in err and second in err


def test_summary_separates_device_time_from_host_time(manager, tmp_path, capsys):
    run(manager, tmp_path, steps=3, training_trace="on")
    assert main(["profile", "summary", str(tmp_path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["device_time_per_step_us"] == round(data["total_time_us"] / 3, 3)
    assert data["host_time_per_step_us"] == round(
        max(data["iteration_time_us"] - data["device_time_per_step_us"], 0), 3)
    assert main(["profile", "summary", str(tmp_path)]) == 0
    assert "Device vs host, per step: device" in capsys.readouterr().out
