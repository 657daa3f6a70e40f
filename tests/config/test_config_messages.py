"""Messages speak TOML/JSON (never Python type names), hints suggest values the rules accept,
and an invalid value brings no second, misleading warning."""

from __future__ import annotations

from typing import Any

import pytest
from config_helpers import problems_of

from geplug.config import check
from geplug.config.parse import parse_toml_text
from geplug.config.parse_common import parse_profiling_options
from geplug.config.problems import Problem, unique


def _all(text: str, product: Any) -> list[Problem]:
    config, problems = parse_toml_text(text)
    return unique([*problems, *check(config, product, env={})])


def test_type_error_says_the_number() -> None:
    _, problems = parse_profiling_options({"task_time": 1})
    assert "got the number 1" in problems[0].message and "int" not in problems[0].message


def test_json_text_not_an_object_says_the_number() -> None:
    _, problems = parse_profiling_options("1")
    assert "got the number 1" in problems[0].message and "JSON int" not in problems[0].message


def test_null_is_called_null(a2: Any) -> None:
    _, problems = parse_profiling_options('{"task_time": null}')
    assert "got null" in problems[0].message and "NoneType" not in problems[0].message


def test_toml_date_is_shown_as_written(a2: Any) -> None:
    problems = _all("op_debug_level = 2024-01-01\n", a2)
    text = problems[0].render()
    assert "2024-01-01" in text and "datetime" not in text


def test_storage_limit_number_hint_has_the_unit() -> None:
    _, problems = parse_profiling_options({"storage_limit": 500})
    assert '"500MB"' in problems[0].hint


def test_storage_limit_hint_is_accepted_by_the_rule(a2: Any) -> None:
    _, problems = parse_profiling_options({"storage_limit": 500})
    suggested = problems[0].hint.split('"storage_limit": "')[1].split('"')[0]
    assert not [p for p in problems_of(
        {"profiling_mode": True, "profiling_options": {"output": "/tmp",
                                                       "storage_limit": suggested}}, a2)
        if p.severity == "error" and "storage_limit" in p.option]


@pytest.mark.parametrize(("key", "allowed"), [("task_time", "on, off, l0, l1"),
                                              ("task_trace", "on, off, l0, l1, l2")])
def test_level_key_number_hint_lists_the_levels(key: str, allowed: str) -> None:
    _, problems = parse_profiling_options({key: 1})
    assert allowed.replace(", ", '", "') in problems[0].hint
    assert f'"{key}": "1"' not in problems[0].hint


def test_quoted_bool_gets_remove_the_quotes_hint(a2: Any) -> None:
    problems = _all('enable_dump = "true"\n', a2)
    assert problems[0].hint == "write true without quotes"


def test_invalid_enable_dump_brings_no_dump_path_warning(a2: Any) -> None:
    problems = _all('enable_dump = "true"\ndump_path = "/tmp"\n', a2)
    assert [p.option for p in problems] == ["enable_dump"]


def test_invalid_profiling_mode_brings_no_profiling_options_warning(a2: Any) -> None:
    problems = _all('profiling_mode = 1\n[profiling_options]\ntask_time = "on"\n', a2)
    assert [p.option for p in problems] == ["profiling_mode"]


def test_unset_enable_dump_still_warns_about_dump_path(a2: Any) -> None:
    problems = _all('dump_path = "/tmp"\n', a2)
    assert [(p.option, p.severity) for p in problems] == [("dump_path", "warning")]
