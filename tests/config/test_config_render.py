"""Problem lines read well: no Python ``None``, no broken punctuation, every bad list item."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from config_helpers import errors_on, problems_of
from test_config_rules import CASES, PRODUCT_CASES

from geplug.config import check
from geplug.config.parse import (
    parse_atc_args,
    parse_ge_options,
    parse_mapping,
    parse_source,
    parse_toml_text,
    parse_torch_options,
)
from geplug.config.problems import Problem
from geplug.testing.plugin import installed_registry

NONE_WORD = re.compile(r"(?<!['\"\w])None(?!['\"\w])")
BROKEN = re.compile(r"\.;|;;|:;|,;|\s;|\.\s\(|\s{2,}")


def _bad(line: str) -> list[str]:
    """What is wrong with one rendered line (the value's own text is not judged)."""
    faults = []
    if NONE_WORD.search(line):
        faults.append("shows None")
    match = BROKEN.search(line)
    if match:
        faults.append(f"punctuation {match.group(0)!r}")
    return faults


def _judged(problem: Problem) -> str:
    """``problem.render()`` with the value's repr taken out (a value may hold any text)."""
    line = problem.render()
    if problem.value is not None:
        line = line.replace(f" = {problem.value!r}", " = <value>", 1)
    return line


def test_unset_value_reads_not_set() -> None:
    problem = Problem(option="soc_version", value=None, severity="error",
                      message="The required parameter --soc_version for ATC is empty.",
                      hint="add --soc_version=Ascend910B1", code="E10054")
    assert problem.render() == ("soc_version (not set): The required parameter --soc_version "
                                "for ATC is empty; add --soc_version=Ascend910B1 [E10054]")


def test_sentence_full_stop_is_dropped_before_the_hint() -> None:
    problem = Problem(option="x", value=1, severity="error", message="bad value.", hint="fix")
    assert problem.render() == "x = 1: bad value; fix"


def test_full_stop_is_kept_without_a_hint() -> None:
    problem = Problem(option="x", value=1, severity="error", message="bad value.")
    assert problem.render() == "x = 1: bad value."


def test_ellipsis_is_kept_before_the_hint() -> None:
    problem = Problem(option="x", value=1, severity="error", message="got abc...", hint="fix")
    assert problem.render() == "x = 1: got abc...; fix"


def test_problem_about_a_whole_file_names_it_once() -> None:
    problem = Problem(option="bad.toml", value="bad.toml", severity="error",
                      message="malformed TOML: Invalid value", hint="fix the syntax")
    assert problem.render() == "bad.toml: malformed TOML: Invalid value; fix the syntax"


def test_malformed_toml_file_does_not_show_none(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("a = \n")
    _, problems = parse_source(str(path))
    line = problems[0].render()
    assert line.startswith(f"{path}: malformed TOML")
    assert _bad(line) == []


@pytest.mark.geplug_requires_products("atlas_a2")
def test_atc_without_soc_version_does_not_show_none(a2: Any) -> None:
    config, _ = parse_atc_args("--op_debug_level=3")
    line = errors_on(check(config, a2, env={}), "soc_version")[0].render()
    assert line.startswith("soc_version (not set): ")
    assert _bad(line) == []


@pytest.mark.geplug_requires_products("atlas_a2")
def test_dump_step_reports_every_bad_item(a2: Any) -> None:
    errors = errors_on(problems_of({"dump_step": "5-3|-1"}, a2), "dump_step")
    assert len(errors) == 2
    assert "'5-3'" in errors[0].message and "'-1'" in errors[1].message


@pytest.mark.geplug_requires_products("atlas_a2")
def test_dump_step_good_items_beside_bad_ones_are_not_reported(a2: Any) -> None:
    errors = errors_on(problems_of({"dump_step": "0|x|5-9|9-2|7"}, a2), "dump_step")
    assert [e.message.count("'x'") + e.message.count("'9-2'") for e in errors] == [1, 1]


# -- every rule's rendered lines ------------------------------------------------------------


def _file_cases(tmp: Path) -> list[dict[str, Any]]:
    """Configs whose problems come from the files the options point at."""
    def write(name: str, text: str) -> str:
        path = tmp / name
        path.write_text(text)
        return str(path)

    return [
        {"op_debug_config": str(tmp / "none.cfg")},
        {"op_debug_config": write("a.cfg", "op_debug_config oom\n")},
        {"op_debug_config": write("b.cfg", "op_debug_config = oom, bogus\n"),
         "op_debug_level": 2},
        {"op_debug_config": write("c.cfg", "op_debug_config = oom, ccec_O0\n")},
        {"op_precision_mode": write("p.ini", "[ByOpType]\nRelu\nGelu = fastest\n[Other]\n")},
        {"op_precision_mode": str(tmp / "none.ini"), "op_select_implmode": "high_precision"},
        {"modify_mixlist": write("m.json", '{"grey-list": {"to-add": 1}}'),
         "precision_mode": "force_fp32"},
        {"modify_mixlist": write("n.json", "{"), "precision_mode": "allow_mix_precision"},
        {"debug_dir": write("f", "x")},
        {"enable_dump": True, "dump_path": write("g", "x")},
        {"profiling_mode": True, "profiling_options": {"output": write("h", "x")}},
        {"dump_path": str(tmp), "dump_step": "1|2", "graph_run_mode": 0,
         "enable_dump_debug": True, "op_debug_level": 1, "front_end": "tf"},
        {"enable_exception_dump": 1, "enable_dump": True, "dump_path": str(tmp)},
        {"profiling_options": {"task_time": "on"}},
    ]


ENVS: list[dict[str, str]] = [
    {},
    {"NPU_COLLECT_PATH": "/n", "CM_CHIEF_IP": "1.2.3.4", "RANK_TABLE_FILE": "/no/table.json",
     "RANK_SIZE": "2", "CM_WORKER_SIZE": "2", "ASCEND_DEVICE_ID": "x", "DEVICE_ID": "-1"},
    {"PROFILING_MODE": "true", "PROFILING_OPTIONS": '{"sys_hardware_mem_freq": 50, "l2": 1, '
     '"task_trace": "on", "nope": "x", "aic_metrics": "Custom:0x0,zz"}'},
    {"PROFILING_MODE": "yes"},
]


def _parse_problems() -> list[Problem]:
    """Problems of the readers themselves (every input form)."""
    out: list[Problem] = []
    out += parse_toml_text("a = \n", source="bad.toml")[1]
    out += parse_toml_text("x" * (2 << 20))[1]
    out += parse_mapping({"front_end": "jax", "dump_pth": "/", "enable_dump": "yes",
                          "op_debug_level": "3", "dump_step": 5, "graph_run_mode": 2**40,
                          "profiling_options": '{"task_time": 1, "output": true}',
                          "dump_mode": "a" * 5000, "dump_layer": "a\x00b"})[1]
    out += parse_mapping([1, 2])[1]
    out += parse_mapping({"profiling_options": "[1]"})[1]
    out += parse_mapping({"profiling_options": "{"})[1]
    out += parse_mapping({"profiling_options": "{" + " " * 3000 + "}"})[1]
    out += parse_ge_options({"ge.exec.enableDump": "yes", "ge.bogus": "1",
                             "ge.opDebugLevel": "x"}, level="graph")[1]
    out += parse_ge_options({}, level="module")[1]
    out += parse_atc_args("--op_debug_level=x --bogus=1 stray --precision_mode")[1]
    out += parse_torch_options({"ACL_BOGUS": "1", "ACL_OP_DEBUG_LEVEL": 3})[1]
    out += parse_torch_options([1])[1]
    out += parse_source(3.5)[1]
    return out


def test_every_rendered_problem_line_reads_well(tmp_path: Path) -> None:
    registry = installed_registry()
    configs: list[tuple[str, dict[str, Any]]] = []
    for case in CASES:
        configs += [(case[1], case[2]), (case[1], case[3])]
    for pcase in PRODUCT_CASES:
        configs += [(pcase[3], pcase[1]), (pcase[4], pcase[1])]
    configs += [("atlas_a2", c) for c in _file_cases(tmp_path)]
    configs += [("atlas_a2", {"front_end": "atc"}), ("atlas_a2", {"front_end": "ge",
                                                                   "profiling_mode": True})]
    lines = [_judged(p) for p in _parse_problems()]
    for name, mapping in configs:
        if name not in registry:
            continue
        mapping = {k: v for k, v in mapping.items() if v is not None}
        config, problems = parse_mapping(mapping)
        for env in ENVS:
            found = check(config, registry.get(name), env=env, cwd=str(tmp_path),
                          for_initialize_system=True)
            lines += [_judged(p) for p in [*problems, *found]]
    lines = sorted(set(lines))
    heads = ("profiling_options.", "PROFILING_OPTIONS.", "PROFILING_MODE", "dump_step",
             "dump_path", "precision_mode", "modify_mixlist", "op_debug_config",
             "op_debug_level", "debug_dir", "enable_exception_dump", "op_select_implmode",
             "optypelist_for_implmode", "op_precision_mode", "soc_version", "graph_run_mode",
             "RANK_", "DEVICE_ID", "initialize_system", "bad.toml")
    assert {line: _bad(line) for line in lines if _bad(line)} == {}
    if {name for name, _ in configs} <= set(registry.names()):
        # every rule group was exercised only when every product of the cases is installed
        assert [h for h in heads if not any(line.startswith(h) for line in lines)] == []
