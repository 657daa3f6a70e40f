"""Exports that run: --out, acl.json, torch_npu's keys, ATC placeholders, the TF session."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from geplug.cli.main import main
from geplug.config import SessionConfig
from geplug.config.export import export, export_report, read_export
from geplug.config.parse import parse_torch_options
from geplug.testing.plugin import require_product

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")


def test_torch_export_carries_op_debug_config_as_acl_op_debug_option() -> None:
    text = export(SessionConfig(op_debug_config="/cfg/debug.cfg"), require_product("atlas_a2"),
                  "torch_npu")
    assert '"ACL_OP_DEBUG_OPTION": "/cfg/debug.cfg"' in text


@pytest.mark.parametrize("key,value", [("ACL_AICORE_NUM", "8"),
                                       ("ACL_OP_COMPILER_CACHE_MODE", "enable"),
                                       ("ACL_OP_COMPILER_CACHE_DIR", "x"),
                                       ("ACL_OP_DEBUG_OPTION", "x")])
def test_torch_reader_accepts_every_key_torch_npu_names(key: str, value: str) -> None:
    config, problems = parse_torch_options({key: value,
                                            "ACL_PRECISION_MODE": "allow_fp32_to_fp16"})
    assert not [p for p in problems if p.severity == "error"], problems
    assert config.precision_mode == "allow_fp32_to_fp16"


def test_torch_export_with_nothing_to_set_has_no_empty_set_option() -> None:
    text = export(SessionConfig(enable_dump=True, dump_path="/d"), require_product("atlas_a2"),
                  "torch_npu")
    assert "set_option({})" not in text and "nothing to pass" in text


def test_atc_export_is_a_runnable_command_with_marked_placeholders() -> None:
    text = export(SessionConfig(front_end="atc", precision_mode="force_fp16"),
                  require_product("atlas_a2"), "atc")
    command = next(line for line in text.splitlines() if line.startswith("atc "))
    argv = shlex.split(command)
    assert argv[1:4] == ["--model=${MODEL}", "--framework=${FRAMEWORK:-5}", "--output=${OUTPUT}"]
    assert "--precision_mode=force_fp16" in argv and any(a.startswith("--soc_version=")
                                                          for a in argv)
    assert "set MODEL" in text
    assert read_export(text, "atc").precision_mode == "force_fp16"


def test_tf_export_has_the_seeds_initialize_system_session() -> None:
    """Seed: "需要先另起session执行initialize_system，进行集合通信初始化，然后在训练结束后执行
    shutdown_system，同时关闭session" (run initialize_system in its own session first, and
    shutdown_system when training ends, closing the session)."""
    text = export(SessionConfig(precision_mode="allow_mix_precision"),
                  require_product("atlas_a2"), "tf")
    lines = text.splitlines()
    assert "npu_init = npu_ops.initialize_system()" in lines
    assert "npu_shutdown = npu_ops.shutdown_system()" in lines
    start = lines.index("with tf.Session(config=config) as sess:")
    assert lines[start + 1] == "    sess.run(npu_init)" and "    sess.run(npu_shutdown)" in lines
    assert read_export(text, "tf").precision_mode == "allow_mix_precision"


def test_acl_json_export_is_the_dump_block_and_reads_back() -> None:
    config = SessionConfig(enable_dump=True, dump_path="/d", dump_step="0|3", dump_mode="all",
                           dump_data="stats")
    report = export_report(config, require_product("atlas_a2"), "acl_json")
    data = json.loads(report.text)
    assert data == {"dump": {"dump_list": [], "dump_path": "/d", "dump_step": "0|3",
                             "dump_mode": "all", "dump_data": "stats"}}
    back = read_export(report.text, "acl_json")
    assert (back.enable_dump, back.dump_path, back.dump_step) == (True, "/d", "0|3")


def test_acl_json_overflow_detection_alone_is_dump_debug_without_dump_list() -> None:
    text = export(SessionConfig(enable_dump_debug=True, dump_path="/d"),
                  require_product("atlas_a2"), "acl_json")
    assert json.loads(text) == {"dump": {"dump_path": "/d", "dump_debug": "on"}}
    assert read_export(text, "acl_json").enable_dump_debug is True


def test_acl_json_leaves_out_what_acl_has_no_key_for() -> None:
    report = export_report(SessionConfig(precision_mode="force_fp16", enable_dump=True,
                                         dump_path="/d"), require_product("atlas_a2"),
                           "acl_json")
    assert [p.option for p in report.problems] == ["precision_mode"]


def test_export_out_writes_the_file_and_lists_left_out_options_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "d").mkdir()
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'precision_mode = "allow_mix_precision"\nenable_dump = true\n'
                   f'dump_path = "{tmp_path / "d"}"\n')
    out = tmp_path / "session.sh"
    assert main(["export", str(cfg), "--product", "atlas_a2", "--to", "atc",
                 "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and out.read_text().count("atc --model=${MODEL}") == 1
    assert captured.err.count("enable_dump = true: not exported") == 1


def test_export_to_stdout_reports_each_left_out_option_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "d").mkdir()
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'precision_mode = "allow_fp32_to_fp16"\nenable_dump = true\n'
                   f'dump_path = "{tmp_path / "d"}"\n')
    assert main(["export", str(cfg), "--product", "atlas_a2", "--to", "torch_npu"]) == 0
    captured = capsys.readouterr()
    assert (captured.out + captured.err).count("enable_dump = ") == 1


@pytest.mark.parametrize("command", ["check", "resolve", "export"])
def test_a_command_needing_a_product_lists_the_installed_ones(
        command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import geplug

    cfg = tmp_path / "c.toml"
    cfg.write_text('precision_mode = "allow_fp32_to_fp16"\n')
    argv = [command, str(cfg)] + (["--to", "ge"] if command == "export" else [])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "name a product with --product P (installed: " in err
    assert all(name in err for name in geplug.installed_products().names())


def test_aic_metrics_typo_gets_did_you_mean_a_code_and_one_listing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('profiling_mode = true\n[profiling_options]\noutput = "."\n'
                   'task_time = "on"\naic_metrics = "PipeUtilisation"\n')
    assert main(["check", str(cfg), "--product", "atlas_a2"]) == 1
    out = capsys.readouterr().out
    assert "did you mean 'PipeUtilization'?" in out and "[EK0003]" in out
    assert out.count("ArithmeticUtilization") == 1


@pytest.mark.geplug_requires_products("atlas_350")
def test_memory_access_on_atlas_350_lists_the_groups_once_with_a_code(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('profiling_mode = true\n[profiling_options]\noutput = "."\n'
                   'task_time = "on"\naic_metrics = "MemoryAccess"\n')
    assert main(["check", str(cfg), "--product", "atlas_350"]) == 1
    out = capsys.readouterr().out
    assert out.count("ArithmeticUtilization") == 1 and "[EK0003]" in out
    assert "MemoryAccess is not available on" in out


def test_precision_typo_lists_the_modes_once(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('precision_mode = "must_keep_origin_dtyp"\n')
    assert main(["check", str(cfg), "--product", "atlas_a2"]) == 1
    out = capsys.readouterr().out
    assert out.count("allow_fp32_to_bf16") == 1 and "did you mean 'must_keep_origin_dtype'" in out
