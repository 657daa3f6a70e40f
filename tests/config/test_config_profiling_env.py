"""Profiling options from the environment (options.md §3.1, §14): checked like the session
form when they are in force, used by resolve, ignored where the TF adapter fills a default."""

from __future__ import annotations

import json
from typing import Any

import pytest
from config_helpers import errors_on, problems_of, warnings_on

from geplug.cli.main import main
from geplug.config import SessionConfig, resolve

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")

BAD_ENV = {"PROFILING_MODE": "true",
           "PROFILING_OPTIONS": '{"output":"/x","task_time":"on","sys_hardware_mem_freq":50}'}
GOOD_ENV = {"PROFILING_MODE": "true",
            "PROFILING_OPTIONS": '{"output":"/x","task_time":"on","sys_hardware_mem_freq":"50"}'}


def _resolve(mapping: dict[str, Any], product: Any, env: dict[str, str]) -> Any:
    return resolve(SessionConfig.from_mapping(mapping), product, env=env, cwd="/c")


def test_env_json_number_is_an_error_under_the_env_option_path(a2: Any) -> None:
    errors = errors_on(problems_of({}, a2, env=BAD_ENV),
                       "PROFILING_OPTIONS.sys_hardware_mem_freq")
    assert len(errors) == 1
    assert "PROFILING_OPTIONS" in errors[0].hint


def test_env_options_are_checked_by_the_session_rules(a2: Any) -> None:
    env = {"PROFILING_MODE": "true", "PROFILING_OPTIONS": '{"aic_metrics": "Nope"}'}
    assert errors_on(problems_of({}, a2, env=env), "PROFILING_OPTIONS.aic_metrics")


def test_env_readable_keys_are_checked_beside_a_parse_error(a2: Any) -> None:
    env = {"PROFILING_MODE": "true",
           "PROFILING_OPTIONS": '{"storage_limit": "1MB", "sys_hardware_mem_freq": 50}'}
    problems = problems_of({}, a2, env=env)
    assert errors_on(problems, "PROFILING_OPTIONS.storage_limit")
    assert errors_on(problems, "PROFILING_OPTIONS.sys_hardware_mem_freq")


def test_env_malformed_json_is_an_error(a2: Any) -> None:
    env = {"PROFILING_MODE": "true", "PROFILING_OPTIONS": '{"output": '}
    assert errors_on(problems_of({}, a2, env=env), "PROFILING_OPTIONS")


def test_env_options_are_not_checked_without_profiling_mode_env(a2: Any) -> None:
    env = {"PROFILING_OPTIONS": BAD_ENV["PROFILING_OPTIONS"]}
    assert problems_of({}, a2, env=env) == []


def test_env_options_are_not_checked_when_the_session_has_options(a2: Any) -> None:
    config = {"profiling_mode": True, "profiling_options": {"task_time": "on"}}
    assert problems_of(config, a2, env=BAD_ENV) == []


def test_session_profiling_off_wins_over_env(a2: Any) -> None:
    assert problems_of({"profiling_mode": False}, a2, env=BAD_ENV) == []
    assert _resolve({"profiling_mode": False}, a2, BAD_ENV).config.profiling_mode is False


def test_resolve_uses_valid_env_options(a2: Any) -> None:
    resolved = _resolve({}, a2, GOOD_ENV)
    opts = resolved.config.profiling_options
    assert (opts.task_time, opts.sys_hardware_mem_freq, opts.output) == ("on", "50", "/x")
    assert resolved.source("profiling_options") == "environment PROFILING_OPTIONS"
    assert resolved.source("profiling_mode") == "environment PROFILING_MODE"


def test_env_task_trace_rule_applies_to_env_options(a2: Any) -> None:
    env = {"PROFILING_MODE": "true", "PROFILING_OPTIONS": '{"task_trace": "on"}'}
    assert errors_on(problems_of({}, a2, env=env), "PROFILING_OPTIONS.training_trace")


def test_tf_session_mode_without_options_uses_the_tf_default_not_env(a2: Any) -> None:
    resolved = _resolve({"profiling_mode": True}, a2, GOOD_ENV)
    assert resolved.config.profiling_options.sys_hardware_mem_freq is None
    assert resolved.source("profiling_options") == "front-end default (tf)"


def test_tf_session_mode_warns_that_env_options_are_ignored(a2: Any) -> None:
    problems = problems_of({"profiling_mode": True}, a2, env=BAD_ENV)
    assert warnings_on(problems, "PROFILING_OPTIONS")
    assert not [p for p in problems if p.severity == "error"]


def test_ge_session_mode_without_options_falls_back_to_env(a2: Any) -> None:
    resolved = _resolve({"front_end": "ge", "profiling_mode": True}, a2, GOOD_ENV)
    assert resolved.config.profiling_options.sys_hardware_mem_freq == "50"
    assert resolved.source("profiling_options") == "environment PROFILING_OPTIONS"


def test_ge_session_mode_without_options_checks_env_options(a2: Any) -> None:
    problems = problems_of({"front_end": "ge", "profiling_mode": True}, a2, env=BAD_ENV)
    assert errors_on(problems, "PROFILING_OPTIONS.sys_hardware_mem_freq")


def test_ge_session_mode_without_options_or_env_collects_nothing(a2: Any) -> None:
    config = {"front_end": "ge", "profiling_mode": True}
    assert warnings_on(problems_of(config, a2), "profiling_mode")
    resolved = _resolve(config, a2, {})
    assert resolved.config.profiling_mode is False
    assert resolved.profiling_output is None


def test_env_profiling_mode_must_be_exactly_true(a2: Any) -> None:
    env = {"PROFILING_MODE": "1", "PROFILING_OPTIONS": '{"task_time": "on"}'}
    assert warnings_on(problems_of({}, a2, env=env), "PROFILING_MODE")
    assert _resolve({}, a2, env).config.profiling_mode is False


def test_env_mode_with_empty_options_uses_the_default_json(a2: Any) -> None:
    resolved = _resolve({}, a2, {"PROFILING_MODE": "true"})
    assert resolved.config.profiling_options.task_time == "on"
    assert resolved.source("profiling_options") == "built-in default"


def test_cli_check_rejects_bad_env_options(a2: Any, tmp_path: Any, capsys: Any,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in BAD_ENV.items():
        monkeypatch.setenv(name, value)
    toml = tmp_path / "min.toml"
    toml.write_text('precision_mode = "allow_mix_precision"\n')
    assert main(["check", str(toml), "--product", "atlas_a2"]) == 1
    assert "PROFILING_OPTIONS.sys_hardware_mem_freq = 50" in capsys.readouterr().out


def test_cli_resolve_shows_env_options(a2: Any, tmp_path: Any, capsys: Any,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in GOOD_ENV.items():
        monkeypatch.setenv(name, value)
    toml = tmp_path / "min.toml"
    toml.write_text('precision_mode = "allow_mix_precision"\n')
    assert main(["resolve", str(toml), "--product", "atlas_a2", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["config"]["profiling_options"]["sys_hardware_mem_freq"] == "50"
    assert data["sources"]["profiling_options"] == "environment PROFILING_OPTIONS"
