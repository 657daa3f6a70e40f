"""Every resolved value has a correct source (``geplug resolve`` labels)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

from geplug.config import ResolvedConfig, SessionConfig, Source, resolve

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")

FIXED = {Source.USER, Source.PRODUCT_DEFAULT, Source.RUN_MODE_DEFAULT, Source.BUILTIN_DEFAULT}
NOT_VALUES = {"product", "config", "sources"}
"""ResolvedConfig fields that are not resolved values themselves."""


def _known(source: str) -> bool:
    return source in FIXED or source.startswith(("environment ", "front-end default ("))


def _files(tmp: Path) -> dict[str, str]:
    (tmp / "d.cfg").write_text("op_debug_config = dump_cce\nop_debug_list = conv1\n")
    (tmp / "p.ini").write_text("[ByNodeName]\ngelu_1=high_performance\n")
    (tmp / "m.json").write_text('{"white-list": {"to-add": ["Conv2D"]}}')
    (tmp / "dumps").mkdir()
    return {"cfg": str(tmp / "d.cfg"), "ini": str(tmp / "p.ini"), "mix": str(tmp / "m.json"),
            "dumps": str(tmp / "dumps")}


def _scenarios(tmp: Path) -> list[tuple[dict[str, Any], dict[str, str]]]:
    f = _files(tmp)
    return [
        ({}, {}),
        ({"front_end": "ge"}, {}),
        ({"front_end": "atc", "soc_version": "Ascend910B3"}, {}),
        ({"front_end": "torch"}, {}),
        ({"graph_run_mode": 0, "precision_mode": "force_fp16"}, {}),
        ({"profiling_mode": True}, {"ASCEND_WORK_PATH": "/w"}),
        ({"profiling_mode": True, "profiling_options": {"output": "p", "task_time": "on"}}, {}),
        ({}, {"PROFILING_MODE": "true", "PROFILING_OPTIONS": '{"task_time": "on"}'}),
        ({"front_end": "ge", "profiling_mode": True}, {}),
        ({"enable_dump": True, "dump_path": f["dumps"], "dump_step": "0|5"}, {}),
        ({"op_debug_config": f["cfg"], "debug_dir": "dbg"}, {}),
        ({"op_debug_level": 1}, {"NPU_COLLECT_PATH": "/n", "ASCEND_DEVICE_ID": "1"}),
        ({"enable_exception_dump": 0}, {"ASCEND_DUMP_SCENE": "aic_err_brief_dump"}),
        ({"op_precision_mode": f["ini"]}, {"DEVICE_ID": "2"}),
        ({"op_select_implmode": "high_precision_for_all"}, {}),
        ({"op_select_implmode": "high_precision", "optypelist_for_implmode": "Pooling"}, {}),
        ({"modify_mixlist": f["mix"], "precision_mode": "allow_mix_precision"}, {}),
        ({"precision_mode": "force_fp32", "precision_mode_v2": "origin"}, {}),
    ]


def _missing(resolved: ResolvedConfig) -> list[str]:
    """Resolved values without a known source: config options that have a value, and every
    ResolvedConfig field that has one."""
    out = [f"config.{f.name}" for f in attrs.fields(SessionConfig)
           if f.name != "front_end" and getattr(resolved.config, f.name) is not None
           and not _known(resolved.source(f.name))]
    out += [f.name for f in attrs.fields(ResolvedConfig)
            if f.name not in NOT_VALUES and getattr(resolved, f.name) is not None
            and not _known(resolved.source(f.name))]
    return out


def test_every_resolved_value_has_a_known_source(a2: Any, tmp_path: Path) -> None:
    missing = {}
    for mapping, env in _scenarios(tmp_path):
        resolved = resolve(SessionConfig.from_mapping(mapping), a2, env=env, cwd=str(tmp_path))
        if _missing(resolved):
            missing[repr((mapping, env))] = _missing(resolved)
    assert missing == {}


def test_front_end_source_helper() -> None:
    assert Source.front_end("tf") == "front-end default (tf)"


def test_exception_dump_tf_default_is_labelled_front_end(a2: Any) -> None:
    resolved = resolve(SessionConfig(), a2, env={})
    assert resolved.source("enable_exception_dump") == "front-end default (tf)"
    assert resolved.source("exception_dump_level") == "front-end default (tf)"


def test_ge_graph_run_mode_default_is_labelled_front_end(a2: Any) -> None:
    resolved = resolve(SessionConfig(front_end="ge"), a2, env={})
    assert (resolved.config.graph_run_mode, resolved.source("graph_run_mode")) == \
        (0, "front-end default (ge)")
    assert resolved.source("run_mode") == "front-end default (ge)"


def test_run_mode_of_a_product_without_training_is_product_default() -> None:
    from geplug.testing.plugin import require_product

    resolved = resolve(SessionConfig(), require_product("atlas_infer"), env={})
    assert resolved.source("graph_run_mode") == "product default"


def test_small_channel_has_a_source_in_both_run_modes(a2: Any) -> None:
    assert resolve(SessionConfig(), a2, env={}).source("enable_small_channel") == \
        "built-in default"
    assert resolve(SessionConfig(graph_run_mode=0), a2, env={}).source(
        "enable_small_channel") == "run-mode default"


def test_exception_dump_level_forced_by_env_names_the_env(a2: Any) -> None:
    resolved = resolve(SessionConfig(enable_exception_dump=0), a2, env={"NPU_COLLECT_PATH": "/n"})
    assert resolved.source("exception_dump_level") == "environment NPU_COLLECT_PATH"


def test_for_all_implmode_default_comes_from_the_user(a2: Any) -> None:
    resolved = resolve(SessionConfig(op_select_implmode="high_precision_for_all"), a2, env={})
    assert resolved.source("impl_default") == "user"


def test_cli_resolve_prints_a_source_for_every_line(tmp_path: Path, capsys: Any) -> None:
    from geplug.cli.main import main

    toml = tmp_path / "ge.toml"
    toml.write_text('front_end = "ge"\n')
    assert main(["resolve", str(toml), "--product", "atlas_a2"]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    assert lines and [line for line in lines if not line.rstrip().endswith(")")] == []
