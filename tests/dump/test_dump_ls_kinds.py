"""``geplug dump ls`` lists statistics files and shows exception dumps as exception dumps."""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pytest

from geplug.cli.main import main
from geplug.dump.reader import iter_dump_tree, iter_stats_files


def _stats_tree(make_system: Any, make_event: Any, root: Any) -> str:
    system = make_system(enable_dump=True, dump_data="stats", resolved={"dump_root": str(root)})
    x = np.array([1.0, np.inf, 3.0], np.float32)
    system.emit_dump(make_event(system, op="net/a", op_type="Add", task_id=1, outputs=[x]))
    system.emit_dump(make_event(system, op="net/b", op_type="Relu", task_id=2, outputs=[x]))
    system.shutdown()  # statistic.csv is completed at shutdown
    return str(root)


def _exception_root(make_system: Any, make_event: Any, tmp_path: Any) -> str:
    directory = tmp_path / "extra-info" / "data-dump" / "0"
    system = make_system(resolved={"exception_dump_level": 1,
                                   "exception_dump_dir": str(directory)})
    x = np.ones(4, np.float32)
    system.emit_dump(make_event(system, kind="exception", op="blk/conv", op_type="Conv2D",
                                task_id=11, inputs=[x], outputs=[x], workspace=b"\0" * 16))
    return str(tmp_path / "extra-info")


def test_ls_lists_statistic_csv_files(make_system: Any, make_event: Any, tmp_path: Any,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    root = _stats_tree(make_system, make_event, tmp_path / "d")
    assert main(["dump", "ls", root]) == 0
    out = capsys.readouterr().out
    assert "no dump files" not in out
    assert "statistic.csv: statistics of 2 ops" in out
    assert "net/a" in out and "net/b" in out and "inf/nan 1" in out
    assert "step 0: 1 file" in out


def test_ls_json_reports_statistics_files_with_their_ops(
        make_system: Any, make_event: Any, tmp_path: Any,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = _stats_tree(make_system, make_event, tmp_path / "d")
    assert main(["dump", "ls", root, "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["kind"] == "statistics" and row["step"] == 0
    assert [op["op_name"] for op in row["ops"]] == ["net/a", "net/b"]
    assert row["ops"][0]["outputs"] == ["float32[3]"]


def test_iter_stats_files_finds_the_step_and_model(make_system: Any, make_event: Any,
                                                   tmp_path: Any) -> None:
    root = _stats_tree(make_system, make_event, tmp_path / "d")
    (found,) = iter_stats_files(root)
    assert os.path.basename(found.path) == "statistic.csv"
    assert (found.step, found.model_name) == (0, "ge_default_20240125153322_41")
    assert [r["Op Name"] for r in found.rows()] == ["net/a", "net/b"]


def test_exception_dumps_have_no_step(make_system: Any, make_event: Any,
                                      tmp_path: Any) -> None:
    root = _exception_root(make_system, make_event, tmp_path)
    (entry,) = iter_dump_tree(root)
    assert entry.is_exception and entry.step is None and entry.device_id == "0"


def test_ls_shows_exception_dumps_as_exception_dumps(
        make_system: Any, make_event: Any, tmp_path: Any,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = _exception_root(make_system, make_event, tmp_path)
    assert main(["dump", "ls", root]) == 0
    out = capsys.readouterr().out
    assert "step 0" not in out
    assert "(exception dumps, device 0: 1 file" in out and "EXCEPTION Conv2D" in out


def test_data_dump_entries_are_not_exception_dumps(make_system: Any, make_event: Any,
                                                   tmp_path: Any) -> None:
    system = make_system(enable_dump=True, resolved={"dump_root": str(tmp_path / "d")})
    system.emit_dump(make_event(system, op="a", op_type="Add", outputs=[np.ones(2)]))
    (entry,) = iter_dump_tree(tmp_path / "d")
    assert not entry.is_exception and entry.step == 0


def test_ls_of_a_directory_without_dumps_is_a_finding(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from geplug.cli.main import main

    assert main(["dump", "ls", str(tmp_path)]) == 1
    assert "no dump files" in capsys.readouterr().err


def test_convert_of_a_directory_without_dumps_is_a_finding(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from geplug.cli.main import main

    assert main(["dump", "convert", str(tmp_path), "--to", "npz",
                 "--out", str(tmp_path / "out")]) == 1
    assert "nothing converted" in capsys.readouterr().err
