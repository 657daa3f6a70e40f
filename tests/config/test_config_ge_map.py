"""GE option maps: hints for JSON non-strings say what GE takes; conflicting duplicates fail."""

from __future__ import annotations

import pytest

from geplug.config import SessionConfig
from geplug.config.parse import parse_ge_options
from geplug.errors import ConfigError


def test_json_true_for_a_ge_bool_key_hints_the_text_1() -> None:
    _, problems = parse_ge_options({"ge.exec.enableDump": True})
    assert [p.hint for p in problems if p.severity == "error"] == ['write "1"']


def test_json_false_for_a_ge_bool_key_hints_the_text_0() -> None:
    _, problems = parse_ge_options({"ge.exec.profilingMode": False})
    assert [p.hint for p in problems if p.severity == "error"] == ['write "0"']


def test_the_hinted_bool_text_is_accepted() -> None:
    assert SessionConfig.from_ge_options({"ge.exec.enableDump": "1"}).enable_dump is True


def test_conflicting_duplicate_keys_are_an_error_naming_both() -> None:
    with pytest.raises(ConfigError) as info:
        SessionConfig.from_ge_options({"precision_mode": "force_fp32",
                                       "ge.exec.precision_mode": "allow_fp32_to_fp16"})
    message = str(info.value)
    assert "'precision_mode'" in message and "'ge.exec.precision_mode'" in message


def test_duplicate_keys_with_the_same_value_are_accepted() -> None:
    config = SessionConfig.from_ge_options({"precision_mode": "force_fp32",
                                            "ge.exec.precision_mode": "force_fp32"})
    assert config.precision_mode == "force_fp32"
