"""``geplug dump compare`` as a CI gate: no matched op is a failure, a threshold outside the
cosine range is a usage error."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from geplug.cli.main import main
from geplug.dump.compare import compare_trees


def _one_op_tree(make_system: Any, make_event: Any, root: Any, op: str = "net/a") -> str:
    system = make_system(enable_dump=True, resolved={"dump_root": str(root)})
    x = np.arange(4, dtype=np.float32)
    system.emit_dump(make_event(system, op=op, op_type="Add", task_id=1, outputs=[x]))
    return str(root)


def test_compare_of_an_empty_directory_exits_1_naming_the_empty_side(
        make_system: Any, make_event: Any, tmp_path: Any,
        capsys: pytest.CaptureFixture[str]) -> None:
    run = _one_op_tree(make_system, make_event, tmp_path / "run")
    (tmp_path / "empty").mkdir()
    assert main(["dump", "compare", str(tmp_path / "empty"), run]) == 1
    out = capsys.readouterr().out
    assert "no ops matched" in out and "A " in out and "holds no dump files" in out
    assert "within the threshold" not in out


def test_compare_with_an_empty_reference_names_side_b(
        make_system: Any, make_event: Any, tmp_path: Any) -> None:
    run = _one_op_tree(make_system, make_event, tmp_path / "run")
    (tmp_path / "empty").mkdir()
    report = compare_trees(run, tmp_path / "empty")
    assert not report.passed
    assert report.no_match is not None and report.no_match.startswith("no ops matched: B ")


def test_compare_of_trees_sharing_no_op_exits_1(make_system: Any, make_event: Any,
                                                 tmp_path: Any,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    a = _one_op_tree(make_system, make_event, tmp_path / "a", op="net/a")
    b = _one_op_tree(make_system, make_event, tmp_path / "b", op="other/z")
    assert main(["dump", "compare", a, b, "--format", "json"]) == 1
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["matched"] == 0 and data["passed"] is False
    assert "shares a step and op name" in data["no_match"]
    assert "no ops matched" in captured.err


def test_compare_of_matching_trees_still_passes(make_system: Any, make_event: Any,
                                                 tmp_path: Any) -> None:
    a = _one_op_tree(make_system, make_event, tmp_path / "a")
    b = _one_op_tree(make_system, make_event, tmp_path / "b")
    assert main(["dump", "compare", a, b]) == 0


@pytest.mark.parametrize("value", ["1.5", "-1.01", "nan", "abc"])
def test_threshold_outside_the_cosine_range_is_a_usage_error(
        value: str, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dump", "compare", str(tmp_path), str(tmp_path),
                 f"--threshold={value}"]) == 2
    assert "--threshold" in capsys.readouterr().err


def test_negative_rel_threshold_is_a_usage_error(tmp_path: Any,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dump", "compare", str(tmp_path), str(tmp_path),
                 "--rel-threshold=-0.1"]) == 2
    assert "--rel-threshold" in capsys.readouterr().err


def test_compare_trees_refuses_a_threshold_outside_the_cosine_range(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match=r"threshold 2\.0 is outside \[-1, 1\]"):
        compare_trees(tmp_path, tmp_path, threshold=2.0)
