"""Rules and behaviours added by the issue-3 audit: R7, R17, R29, R30, §12 rows (GE levels,
torch_npu implementation modes, enable_dump_debug naming), one report per problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from config_helpers import errors_on, problems_of, warnings_on

from geplug.cli.main import main
from geplug.config import SessionConfig, check, resolve
from geplug.config.parse import parse_ge_options, parse_mapping
from geplug.config.problems import Problem, unique

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")


def test_r7_exception_dump_1_with_data_dump_warns(a2: Any) -> None:
    problems = problems_of({"enable_exception_dump": 1, "enable_dump": True, "dump_path": "/tmp"},
                           a2)
    assert any("dynamic-shape" in w.message for w in warnings_on(problems, "enable_exception_dump"))


def test_r7_exception_dump_2_with_data_dump_does_not_warn(a2: Any) -> None:
    problems = problems_of({"enable_exception_dump": 2, "enable_dump": True, "dump_path": "/tmp"},
                           a2)
    assert not warnings_on(problems, "enable_exception_dump")


def test_r17_level_0_with_op_debug_config_still_makes_kernel_meta(a2: Any,
                                                                  tmp_path: Path) -> None:
    cfg = tmp_path / "d.cfg"
    cfg.write_text("op_debug_config = dump_cce\n")
    resolved = resolve(SessionConfig(op_debug_level=0, op_debug_config=str(cfg)), a2, env={},
                       cwd=str(tmp_path))
    assert resolved.kernel_meta_dir == str(tmp_path / "kernel_meta")


def test_r18_debug_dir_with_op_debug_config_at_level_0_does_not_warn(a2: Any,
                                                                     tmp_path: Path) -> None:
    cfg = tmp_path / "d.cfg"
    cfg.write_text("op_debug_config = dump_cce\n")
    problems = problems_of({"debug_dir": str(tmp_path), "op_debug_config": str(cfg)}, a2)
    assert not warnings_on(problems, "debug_dir")


def test_r29_inference_forces_small_channel(a2: Any) -> None:
    resolved = resolve(SessionConfig(graph_run_mode=0), a2, env={})
    assert resolved.enable_small_channel is True
    assert resolved.source("enable_small_channel") == "run-mode default"


def test_r29_training_keeps_small_channel_off(a2: Any) -> None:
    assert resolve(SessionConfig(graph_run_mode=1), a2, env={}).enable_small_channel is False


def test_r30_cm_chief_ip_with_rank_table_warns(a2: Any, tmp_path: Path) -> None:
    env = {"CM_CHIEF_IP": "10.0.0.1", "RANK_TABLE_FILE": str(tmp_path / "rt.json")}
    assert warnings_on(problems_of({}, a2, env=env), "RANK_TABLE_FILE")


def test_r30_cm_chief_ip_alone_is_fine(a2: Any) -> None:
    assert problems_of({}, a2, env={"CM_CHIEF_IP": "10.0.0.1"}) == []


def test_torch_implmode_only_two_values(a2: Any) -> None:
    bad = SessionConfig(front_end="torch", op_select_implmode="high_precision_for_all")
    good = SessionConfig(front_end="torch", op_select_implmode="high_precision")
    assert errors_on(check(bad, a2, env={}), "op_select_implmode")
    assert not errors_on(check(good, a2, env={}), "op_select_implmode")


def test_torch_implmode_gives_torch_deprecation(a2: Any) -> None:
    config = SessionConfig(front_end="torch", op_select_implmode="high_precision")
    warnings = warnings_on(check(config, a2, env={}), "op_select_implmode")
    assert warnings and "ACL_OP_SELECT_IMPL_MODE will be deprecated" in warnings[0].message


def test_atc_implmode_gives_atc_deprecation(a2: Any) -> None:
    config = SessionConfig(front_end="atc", op_select_implmode="high_precision",
                           soc_version="Ascend910B3")
    assert warnings_on(check(config, a2, env={}), "op_select_implmode")


def test_ge_key_at_the_wrong_level_is_rejected() -> None:
    _, problems = parse_ge_options({"ge.exec.profilingMode": "1"}, level="session")
    assert problems[0].severity == "error" and "unsupported option" in problems[0].message


def test_ge_key_at_its_level_is_accepted() -> None:
    config, problems = parse_ge_options({"ge.exec.dumpStep": "1", "ge.opDebugLevel": "1"},
                                        level="session")
    assert problems == [] and config.dump_step == "1"


def test_unknown_ge_level_is_a_problem() -> None:
    _, problems = parse_ge_options({}, level="process")
    assert problems and "global" in problems[0].hint


def test_bad_enable_dump_debug_names_enable_dump_debug() -> None:
    _, problems = parse_ge_options({"ge.exec.enableDumpDebug": "2"})
    assert problems[0].option == "ge.exec.enableDumpDebug"


def test_unknown_profiling_key_lists_allowed_keys() -> None:
    _, problems = parse_mapping({"profiling_options": {"task_trac": "on"}})
    assert "task_trace" in problems[0].hint and "storage_limit" in problems[0].hint


def test_unique_keeps_first_of_identical_findings() -> None:
    one = Problem(option="a", value=1, severity="warning", message="m")
    other = Problem(option="b", value=1, severity="warning", message="m")
    assert unique([one, other, one]) == [one, other]


def test_check_reports_each_problem_once(a2: Any, tmp_path: Path) -> None:
    cfg = tmp_path / "d.cfg"
    cfg.write_text("op_debug_config = oom,ccec_O0\n")
    problems = problems_of({"op_debug_config": str(cfg), "op_debug_level": 2,
                            "op_select_implmode": "high_precision"}, a2,
                           env={"NPU_COLLECT_PATH": str(tmp_path)})
    assert len({p.identity() for p in problems}) == len(problems)


@pytest.mark.parametrize("to", ["ge", "tf", "atc", "torch_npu"])
def test_export_prints_each_warning_once(tmp_path: Path, capsys: Any, to: str) -> None:
    path = tmp_path / "s.toml"
    path.write_text('op_debug_level = 1\nop_select_implmode = "high_precision_for_all"\n'
                    'precision_mode = "allow_mix_precision_bf16"\n')
    assert main(["export", str(path), "--product", "atlas_a2", "--to", to]) == 0
    err = capsys.readouterr().err
    assert err.count("'op_debug_level' is deprecated") == 1
    assert err.count("'op_select_implmode' is deprecated") == 1


def test_torch_export_cli_warns_about_refused_precision(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "s.toml"
    path.write_text('precision_mode = "allow_mix_precision_bf16"\n')
    assert main(["export", str(path), "--product", "atlas_a2", "--to", "torch_npu"]) == 0
    out, err = capsys.readouterr()
    assert "ACL_PRECISION_MODE" not in out
    assert "precision_mode" in err and "not exported to torch_npu" in err


def test_check_ge_level_flag(tmp_path: Path) -> None:
    path = tmp_path / "ge.json"
    path.write_text(json.dumps({"ge.exec.enable_exception_dump": "1"}))
    assert main(["check", "--ge-options", str(path), "--ge-level", "global",
                 "--product", "atlas_a2"]) == 0
    assert main(["check", "--ge-options", str(path), "--ge-level", "graph",
                 "--product", "atlas_a2"]) == 1


def test_r10_bf16_on_310b_only_through_atc() -> None:
    from geplug.testing.plugin import require_product

    product = require_product("atlas_200i_a2")
    session = SessionConfig(precision_mode_v2="mixed_bfloat16", graph_run_mode=0)
    atc = SessionConfig(front_end="atc", precision_mode_v2="mixed_bfloat16",
                        soc_version=product.soc_versions[0])
    assert errors_on(check(session, product, env={}), "precision_mode_v2")
    assert not errors_on(check(atc, product, env={}), "precision_mode_v2")


def test_from_ge_options_refuses_wrong_level() -> None:
    from geplug.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        SessionConfig.from_ge_options({"ge.exec.enableDump": "1"}, level="graph")
    assert info.value.problems[0].option == "ge.exec.enableDump"
