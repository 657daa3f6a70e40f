"""A rank table with several mistakes reports every one, each with its field path and value
(options.md §15.3); JSON errors and RANK_ID problems point at the right thing to fix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from geplug.config import SessionConfig, check
from geplug.config.problems import Problem
from geplug.errors import RankTableError
from geplug.runtime.rank import read_rank_info
from geplug.testing.plugin import require_product


def _bad_table() -> dict[str, Any]:
    """server_count 2 but one server, a duplicate device_id, a bad device_ip, rank_id as a
    JSON number leaving a gap (0, 2)."""
    return {"status": "completed", "version": "1.0", "server_count": "2", "server_list": [
        {"server_id": "10.0.0.1", "device": [
            {"device_id": "0", "device_ip": "192.168.100.1", "rank_id": "0"},
            {"device_id": "0", "device_ip": "192.168.100.999", "rank_id": 2}]}]}


def _good_table(ranks: int = 2) -> dict[str, Any]:
    return {"status": "completed", "version": "1.0", "server_count": "1", "server_list": [
        {"server_id": "10.0.0.1", "device": [
            {"device_id": str(d), "device_ip": f"192.168.0.{d}", "rank_id": str(d)}
            for d in range(ranks)]}]}


def _problems(tmp_path: Path, table: Any, **env: str) -> list[Problem]:
    path = tmp_path / "rank_table.json"
    path.write_text(table if isinstance(table, str) else json.dumps(table))
    return check(SessionConfig(), require_product("atlas_a2"),
                 env={"RANK_TABLE_FILE": str(path), **env})


def test_every_mistake_of_the_table_is_reported(tmp_path: Path) -> None:
    options = {p.option for p in _problems(tmp_path, _bad_table(), RANK_ID="0")}
    assert {"RANK_TABLE_FILE:server_count",
            "RANK_TABLE_FILE:server_list[0].device[1].device_id",
            "RANK_TABLE_FILE:server_list[0].device[1].device_ip",
            "RANK_TABLE_FILE:server_list[0].device[1].rank_id",
            "RANK_TABLE_FILE:rank_id"} <= options


def test_each_table_problem_shows_the_field_value_not_the_file(tmp_path: Path) -> None:
    values = {p.option: p.value for p in _problems(tmp_path, _bad_table(), RANK_ID="0")}
    assert values["RANK_TABLE_FILE:server_list[0].device[1].device_ip"] == "192.168.100.999"
    assert values["RANK_TABLE_FILE:server_count"] == "2"


def test_read_rank_info_error_carries_every_issue(tmp_path: Path) -> None:
    path = tmp_path / "rt.json"
    path.write_text(json.dumps(_bad_table()))
    with pytest.raises(RankTableError) as info:
        read_rank_info({"RANK_TABLE_FILE": str(path)}, require_product("atlas_a2"))
    assert info.value.field == "server_count" and len(info.value.issues) == 5


def test_json_number_type_error_uses_json_words(tmp_path: Path) -> None:
    problems = _problems(tmp_path, _bad_table(), RANK_ID="0")
    rank = next(p for p in problems if p.option.endswith("device[1].rank_id"))
    assert "expected a string of digits, got the number 2" in rank.message


@pytest.mark.parametrize("text", ['{"version": "1.0", "status": "comp', '{"version": '])
def test_truncated_table_says_not_valid_json_with_position(tmp_path: Path, text: str) -> None:
    (problem,) = _problems(tmp_path, text)
    assert "not valid JSON" in problem.message and "column" in problem.message
    assert "comment" not in problem.message


def test_table_with_comment_names_the_comment(tmp_path: Path) -> None:
    (problem,) = _problems(tmp_path, '{"version": "1.0"} // x')
    assert "comment" in problem.message


def test_rank_id_unset_hints_the_environment_variable(tmp_path: Path) -> None:
    (problem,) = _problems(tmp_path, _good_table())
    assert problem.option == "RANK_ID" and "export RANK_ID" in problem.hint


def test_rank_id_not_in_table_hints_the_environment_variable(tmp_path: Path) -> None:
    (problem,) = _problems(tmp_path, _good_table(), RANK_ID="7")
    assert (problem.option, problem.value) == ("RANK_ID", "7")
    assert "rank table" not in problem.hint and "RANK_ID" in problem.hint


def test_no_python_type_names_in_table_messages(tmp_path: Path) -> None:
    table = _good_table()
    table["server_list"][0]["device"][0]["device_id"] = None
    table["server_list"][0]["device"][1]["device_ip"] = 5
    text = " ".join(p.render() for p in _problems(tmp_path, table, RANK_ID="0"))
    for word in ("NoneType", " int ", " str ", "None"):
        assert word not in text
