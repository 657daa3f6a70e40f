"""Audit: every value set geplug checks offers a did-you-mean, and lists its values once.

One row per checked value set of a session configuration (options, profiling switches and
levels, item lists, front end, GE level, SoC): a near miss gets ``did you mean 'X'?`` in the
hint, and a message that already lists the values is not followed by a hint listing them
again. The CLI's own choices (``--to``, ``--format``, sub-command names) are audited in
tests/core/test_core_cli_value_audit.py.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from geplug.config import SessionConfig, check
from geplug.config.problems import Problem

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")

PROF = {"profiling_mode": True}


def _prof(key: str, value: str) -> dict[str, Any]:
    return {**PROF, "profiling_options": {"output": "/tmp", "task_time": "on", key: value}}


# (case id, options, option path, near-miss value, the suggestion expected)
CASES: list[tuple[str, dict[str, Any], str, str]] = [
    ("precision_mode", {"precision_mode": "force_fp61"}, "precision_mode", "force_fp16"),
    ("precision_mode_v2", {"precision_mode_v2": "mixed_flaot16"}, "precision_mode_v2",
     "mixed_float16"),
    ("op_select_implmode", {"op_select_implmode": "high_precisoin"}, "op_select_implmode",
     "high_precision"),
    ("dump_mode", {"enable_dump": True, "dump_path": "/tmp", "dump_mode": "outptu"},
     "dump_mode", "output"),
    ("dump_debug_mode", {"enable_dump_debug": True, "dump_path": "/tmp",
                         "dump_debug_mode": "alll"}, "dump_debug_mode", "all"),
    ("dump_data", {"enable_dump": True, "dump_path": "/tmp", "dump_data": "tensors"},
     "dump_data", "tensor"),
    ("soc_version", {"soc_version": "Ascend910B33"}, "soc_version", "Ascend910B3"),
    ("task_trace", _prof("task_trace", "l00"), "profiling_options.task_trace", "l0"),
    ("task_time", _prof("task_time", "onn"), "profiling_options.task_time", "on"),
    ("ge_api", _prof("ge_api", "l11"), "profiling_options.ge_api", "l1"),
    ("hccl", _prof("hccl", "offf"), "profiling_options.hccl", "off"),
    ("aicpu", _prof("aicpu", "ON"), "profiling_options.aicpu", "on"),
    ("l2", _prof("l2", "of"), "profiling_options.l2", "off"),
    ("msproftx", _prof("msproftx", "onn"), "profiling_options.msproftx", "on"),
    ("runtime_api", _prof("runtime_api", "onn"), "profiling_options.runtime_api", "on"),
    ("instr_profiling", _prof("instr_profiling", "offf"), "profiling_options.instr_profiling",
     "off"),
    ("llc_profiling", _prof("llc_profiling", "reed"), "profiling_options.llc_profiling", "read"),
    ("aic_metrics", _prof("aic_metrics", "PipeUtilisation"), "profiling_options.aic_metrics",
     "PipeUtilization"),
    ("aiv_metrics", _prof("aiv_metrics", "Memroy"), "profiling_options.aiv_metrics", "Memory"),
    ("host_sys", _prof("host_sys", "cpu,memm"), "profiling_options.host_sys", "mem"),
    ("host_sys_usage", _prof("host_sys_usage", "cpuu"), "profiling_options.host_sys_usage",
     "cpu"),
]


def _error(options: dict[str, Any], option: str, a2: Any) -> Problem:
    problems = check(SessionConfig.from_mapping(options), a2, env={})
    found = [p for p in problems if p.severity == "error" and p.option == option]
    assert len(found) == 1, problems
    return found[0]


@pytest.mark.parametrize(("options", "option", "meant"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_a_near_miss_value_gets_did_you_mean(options: dict[str, Any], option: str,
                                              meant: str, a2: Any) -> None:
    problem = _error(options, option, a2)
    assert f"did you mean {meant!r}" in problem.hint, problem


def _values(text: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9_:]+", text)


@pytest.mark.parametrize(("options", "option", "meant"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_a_value_error_lists_the_values_once(options: dict[str, Any], option: str,
                                             meant: str, a2: Any) -> None:
    """When the message (the real stack's wording) lists the values, the hint adds only the
    suggestion, not the list again."""
    problem = _error(options, option, a2)
    in_message = set(_values(problem.message))
    repeated = in_message & set(_values(problem.hint)) - {meant, "did", "you", "mean", "use",
                                                          "a", "of", "the", "or", "value",
                                                          "list", "one"}
    assert len(repeated) <= 1, (problem.message, problem.hint)


def test_unknown_front_end_gets_did_you_mean() -> None:
    from geplug.errors import ConfigError

    with pytest.raises(ConfigError, match="did you mean 'atc'"):
        SessionConfig.from_mapping({"front_end": "act"})


def test_unknown_ge_level_gets_did_you_mean() -> None:
    from geplug.errors import ConfigError

    with pytest.raises(ConfigError, match="did you mean 'session'"):
        SessionConfig.from_ge_options({}, level="sesion")


def test_a_torch_precision_mode_typo_is_one_error_with_did_you_mean(a2: Any) -> None:
    """torch_npu takes two values; the one error lists those, suggesting the closest."""
    config = SessionConfig.from_mapping({"front_end": "torch",
                                         "precision_mode": "allow_fp32_to_fp61"})
    errors = [p for p in check(config, a2, env={}) if p.severity == "error"]
    assert len(errors) == 1, errors
    assert "ACL_PRECISION_MODE" in errors[0].message
    assert errors[0].hint == "did you mean 'allow_fp32_to_fp16'?"


def test_an_unknown_ascend_dump_scene_is_warned_with_did_you_mean(a2: Any) -> None:
    """ASCEND_DUMP_SCENE takes aic_err_brief_dump / aic_err_norm_dump / aic_err_detail_dump;
    any other value selects nothing, which a typo should not do silently."""
    problems = check(SessionConfig(), a2, env={"ASCEND_DUMP_SCENE": "aic_err_norm_dmp"})
    found = [p for p in problems if p.option == "ASCEND_DUMP_SCENE"]
    assert len(found) == 1 and found[0].severity == "warning"
    assert "did you mean 'aic_err_norm_dump'" in found[0].hint
    assert not [p for p in check(SessionConfig(), a2, env={"ASCEND_DUMP_SCENE":
                                                         "aic_err_norm_dump"})
                if p.option == "ASCEND_DUMP_SCENE"]
