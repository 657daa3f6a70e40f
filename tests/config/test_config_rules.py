"""Every check rule: a value that fails it and a value that passes it (options.md §3-11)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from config_helpers import errors_on, problems_of, warnings_on

from geplug.testing.plugin import require_product

P = "profiling_options"


def prof(**opts: str) -> dict[str, Any]:
    """A config with profiling on and these profiling options."""
    return {"profiling_mode": True, P: opts}


# (id, product, bad mapping, good mapping, option path that must get the error)
CASES: list[tuple[str, str, dict[str, Any], dict[str, Any], str]] = [
    ("storage_limit_range", "atlas_a2", prof(storage_limit="100MB"),
     prof(storage_limit="200MB"), f"{P}.storage_limit"),
    ("storage_limit_top", "atlas_a2", prof(storage_limit="4294967296MB"),
     prof(storage_limit="4294967295MB"), f"{P}.storage_limit"),
    ("storage_limit_unit", "atlas_a2", prof(storage_limit="300mb"),
     prof(storage_limit="300MB"), f"{P}.storage_limit"),
    ("training_trace_only_on", "atlas_a2", prof(training_trace="off"),
     prof(training_trace="on"), f"{P}.training_trace"),
    ("task_trace_values", "atlas_a2", prof(task_trace="l9", training_trace="on"),
     prof(task_trace="l2", training_trace="on"), f"{P}.task_trace"),
    ("task_time_values", "atlas_a2", prof(task_time="l2"), prof(task_time="l1"),
     f"{P}.task_time"),
    ("ge_api_values", "atlas_a2", prof(ge_api="on"), prof(ge_api="l0"), f"{P}.ge_api"),
    ("switch_hccl", "atlas_a2", prof(hccl="yes"), prof(hccl="off"), f"{P}.hccl"),
    ("switch_aicpu", "atlas_a2", prof(aicpu="1"), prof(aicpu="on"), f"{P}.aicpu"),
    ("switch_l2", "atlas_a2", prof(l2="true"), prof(l2="on"), f"{P}.l2"),
    ("switch_msproftx", "atlas_a2", prof(msproftx="ON"), prof(msproftx="on"),
     f"{P}.msproftx"),
    ("switch_runtime_api", "atlas_a2", prof(runtime_api="x"), prof(runtime_api="off"),
     f"{P}.runtime_api"),
    ("switch_task_memory", "atlas_a2", prof(task_memory="yes"), prof(task_memory="on"),
     f"{P}.task_memory"),
    ("aic_metrics_name", "atlas_a2", prof(aic_metrics="Pipe"),
     prof(aic_metrics="PipeUtilization"), f"{P}.aic_metrics"),
    ("aic_metrics_alias", "atlas_a2", prof(aic_metrics="PipeUtilizationExt"),
     prof(aic_metrics="PipeUtilizationExct"), f"{P}.aic_metrics"),
    ("custom_range", "atlas_a2", prof(aic_metrics="Custom:0x49,0x6f"),
     prof(aic_metrics="Custom:0x49,0x6e"), f"{P}.aic_metrics"),
    ("custom_hex_or_decimal", "atlas_a2", prof(aic_metrics="Custom:0xzz"),
     prof(aic_metrics="Custom:27"), f"{P}.aic_metrics"),
    ("custom_max_8", "atlas_a2", prof(aic_metrics="Custom:1,2,3,4,5,6,7,8,9"),
     prof(aic_metrics="Custom:1,2,3,4,5,6,7,8"), f"{P}.aic_metrics"),
    ("custom_no_repeat", "atlas_a2", prof(aic_metrics="Custom:0x1b,27"),
     prof(aic_metrics="Custom:0x1b,28"), f"{P}.aic_metrics"),
    ("custom_length_70", "atlas_a2", prof(aic_metrics="Custom:" + ",".join(["0x000001"] * 8)),
     prof(aic_metrics="Custom:0x1,0x2"), f"{P}.aic_metrics"),
    ("llc_profiling", "atlas_a2", prof(llc_profiling="both"), prof(llc_profiling="write"),
     f"{P}.llc_profiling"),
    ("mem_freq_range", "atlas_a2", prof(sys_hardware_mem_freq="101"),
     prof(sys_hardware_mem_freq="100"), f"{P}.sys_hardware_mem_freq"),
    ("mem_freq_numeric", "atlas_a2", prof(sys_hardware_mem_freq="fast"),
     prof(sys_hardware_mem_freq="1"), f"{P}.sys_hardware_mem_freq"),
    ("interconnect_freq", "atlas_a2", prof(sys_interconnection_freq="51"),
     prof(sys_interconnection_freq="50"), f"{P}.sys_interconnection_freq"),
    ("io_freq", "atlas_a2", prof(sys_io_sampling_freq="0100x"),
     prof(sys_io_sampling_freq="1"), f"{P}.sys_io_sampling_freq"),
    ("dvpp_freq", "atlas_a2", prof(dvpp_freq="101"), prof(dvpp_freq="100"), f"{P}.dvpp_freq"),
    ("host_usage_freq", "atlas_a2", prof(host_sys_usage_freq="51"),
     prof(host_sys_usage_freq="50"), f"{P}.host_sys_usage_freq"),
    ("instr_freq_range", "atlas_a2", prof(instr_profiling_freq="299"),
     prof(instr_profiling_freq="300"), f"{P}.instr_profiling_freq"),
    ("instr_freq_exclusions", "atlas_a2",
     prof(instr_profiling_freq="1000", runtime_api="on"),
     prof(instr_profiling_freq="1000", runtime_api="off"), f"{P}.instr_profiling_freq"),
    ("instr_freq_excludes_fp_point", "atlas_a2",
     prof(instr_profiling_freq="1000", fp_point="conv1"),
     prof(instr_profiling_freq="1000", fp_point=""), f"{P}.instr_profiling_freq"),
    ("instr_switch_not_on_a2", "atlas_a2", prof(instr_profiling="on"),
     prof(instr_profiling="off"), f"{P}.instr_profiling"),
    ("host_sys_values", "atlas_a2", prof(host_sys="cpu,gpu"), prof(host_sys="cpu,mem,osrt"),
     f"{P}.host_sys"),
    ("host_sys_empty", "atlas_a2", prof(host_sys=" "), prof(host_sys="cpu"), f"{P}.host_sys"),
    ("host_sys_usage_values", "atlas_a2", prof(host_sys_usage="disk"),
     prof(host_sys_usage="cpu,mem"), f"{P}.host_sys_usage"),
    ("output_forbidden_chars", "atlas_a2", prof(output="out\tdir"), prof(output="outdir"),
     f"{P}.output"),
    ("output_too_long", "atlas_a2", prof(output="/" + "a" * 1100), prof(output="/tmp/a"),
     f"{P}.output"),
    ("task_trace_needs_training_trace", "atlas_a2", prof(task_trace="on"),
     prof(task_trace="on", training_trace="on"), f"{P}.training_trace"),
    ("no_training_trace_in_inference", "atlas_a2",
     {"graph_run_mode": 0, **prof(training_trace="on")},
     {"graph_run_mode": 0, **prof(task_trace="on", aicpu="on")}, f"{P}.training_trace"),
    ("dump_exclusive", "atlas_a2", {"enable_dump": True, "enable_dump_debug": True},
     {"enable_dump": True, "enable_dump_debug": False}, "enable_dump"),
    ("dump_needs_path", "atlas_a2", {"enable_dump": True}, {"enable_dump": False},
     "dump_path"),
    ("dump_debug_needs_path", "atlas_a2", {"enable_dump_debug": True},
     {"enable_dump_debug": False}, "dump_path"),
    ("dump_path_exists", "atlas_a2", {"enable_dump": True, "dump_path": "/no/such/dir"},
     {"enable_dump": True, "dump_path": "/tmp"}, "dump_path"),
    ("dump_step_grammar", "atlas_a2", {"dump_step": "0,5"}, {"dump_step": "0|5|10-20"},
     "dump_step"),
    ("dump_step_range_order", "atlas_a2", {"dump_step": "5-5"}, {"dump_step": "5-6"},
     "dump_step"),
    ("dump_step_trailing_bar", "atlas_a2", {"dump_step": "0|"}, {"dump_step": "0"},
     "dump_step"),
    ("dump_step_negative", "atlas_a2", {"dump_step": "-1"}, {"dump_step": "1"}, "dump_step"),
    ("dump_step_none_string", "atlas_a2", {"dump_step": "None"}, {}, "dump_step"),
    ("dump_step_100_items", "atlas_a2", {"dump_step": "|".join(map(str, range(101)))},
     {"dump_step": "|".join(map(str, range(100)))}, "dump_step"),
    ("dump_step_int32", "atlas_a2", {"dump_step": "2147483648"}, {"dump_step": "2147483647"},
     "dump_step"),
    ("dump_mode_values", "atlas_a2", {"dump_mode": "both"}, {"dump_mode": "all"}, "dump_mode"),
    ("dump_debug_mode_values", "atlas_a2", {"dump_debug_mode": "overflow"},
     {"dump_debug_mode": "all"}, "dump_debug_mode"),
    ("dump_debug_mode_all_only_on_a2", "atlas_a2", {"dump_debug_mode": "aicore_overflow"},
     {"dump_debug_mode": "all"}, "dump_debug_mode"),
    ("dump_debug_mode_three_on_910", "atlas_train", {"dump_debug_mode": "overflow"},
     {"dump_debug_mode": "atomic_overflow"}, "dump_debug_mode"),
    ("dump_data_values", "atlas_a2", {"dump_data": "csv"}, {"dump_data": "stats"},
     "dump_data"),
    ("precision_v1_v2_exclusive", "atlas_a2",
     {"precision_mode": "force_fp32", "precision_mode_v2": "origin"},
     {"precision_mode_v2": "origin"}, "precision_mode_v2"),
    ("precision_mode_values", "atlas_a2", {"precision_mode": "allow_mix_precisoin"},
     {"precision_mode": "allow_mix_precision"}, "precision_mode"),
    ("precision_v2_values", "atlas_a2", {"precision_mode_v2": "bf16"},
     {"precision_mode_v2": "mixed_bfloat16"}, "precision_mode_v2"),
    ("bf16_not_on_910", "atlas_train", {"precision_mode": "allow_fp32_to_bf16"},
     {"precision_mode": "allow_fp32_to_fp16"}, "precision_mode"),
    ("bf16_v2_not_on_910", "atlas_train", {"precision_mode_v2": "mixed_bfloat16"},
     {"precision_mode_v2": "mixed_float16"}, "precision_mode_v2"),
    ("hif8_atc_only", "atlas_350", {"precision_mode_v2": "cube_hif8"},
     {"precision_mode_v2": "cube_hif8", "front_end": "atc", "soc_version": None},
     "precision_mode_v2"),
    ("force_fp16_inference_only", "atlas_a2", {"precision_mode": "force_fp16"},
     {"precision_mode": "force_fp16", "graph_run_mode": 0}, "precision_mode"),
    ("graph_run_mode_values", "atlas_a2", {"graph_run_mode": 2}, {"graph_run_mode": 0},
     "graph_run_mode"),
    ("no_training_on_inference_product", "atlas_infer", {"graph_run_mode": 1},
     {"graph_run_mode": 0}, "graph_run_mode"),
    ("op_debug_level_range", "atlas_a2", {"op_debug_level": 5}, {"op_debug_level": 3},
     "op_debug_level"),
    ("exception_dump_values", "atlas_a2", {"enable_exception_dump": 3},
     {"enable_exception_dump": 1}, "enable_exception_dump"),
    ("implmode_values", "atlas_a2", {"op_select_implmode": "fast"},
     {"op_select_implmode": "high_precision_for_all"}, "op_select_implmode"),
    ("optypelist_needs_implmode", "atlas_a2", {"optypelist_for_implmode": "Pooling"},
     {"optypelist_for_implmode": "Pooling", "op_select_implmode": "high_precision"},
     "optypelist_for_implmode"),
    ("optypelist_allowed_types", "atlas_a2",
     {"optypelist_for_implmode": "Conv2D", "op_select_implmode": "high_precision"},
     {"optypelist_for_implmode": "Pooling, LRN", "op_select_implmode": "high_precision"},
     "optypelist_for_implmode"),
    ("soc_version_of_product", "atlas_a2", {"soc_version": "Ascend910B"},
     {"soc_version": "Ascend910B3"}, "soc_version"),
    ("atc_needs_soc_version", "atlas_a2", {"front_end": "atc"},
     {"front_end": "atc", "soc_version": "Ascend910B2"}, "soc_version"),
]


def _clean(mapping: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in mapping.items() if v is not None}


@pytest.mark.parametrize(("product_name", "bad", "option"),
                         [pytest.param(c[1], c[2], c[4], id=c[0]) for c in CASES])
def test_rule_rejects_bad_value(product_name: str, bad: dict[str, Any], option: str) -> None:
    product = require_product(product_name)
    assert errors_on(problems_of(_clean(bad), product), option)


@pytest.mark.parametrize(("product_name", "good", "option"),
                         [pytest.param(c[1], c[3], c[4], id=c[0]) for c in CASES])
def test_rule_accepts_good_value(product_name: str, good: dict[str, Any], option: str) -> None:
    product = require_product(product_name)
    problems = problems_of(_clean(good), product)
    assert not errors_on(problems, option), problems


# -- product-specific rules: the same value on two products ------------------------------

PRODUCT_CASES = [
    ("memory_access_metric", prof(aic_metrics="MemoryAccess"), f"{P}.aic_metrics",
     "atlas_train", "atlas_a2"),
    ("l2cache_metric", prof(aic_metrics="L2Cache"), f"{P}.aic_metrics", "atlas_infer",
     "atlas_a3"),
    ("instr_switch", prof(instr_profiling="on"), f"{P}.instr_profiling", "atlas_a3",
     "atlas_350"),
    ("instr_frequency", prof(instr_profiling_freq="500"), f"{P}.instr_profiling_freq",
     "atlas_350", "atlas_a3"),
    ("sys_io_not_on_310p", prof(sys_io_sampling_freq="10"), f"{P}.sys_io_sampling_freq",
     "atlas_infer", "atlas_a2"),
    ("interconnect_not_on_310b", prof(sys_interconnection_freq="10"),
     f"{P}.sys_interconnection_freq", "atlas_200i_a2", "atlas_a2"),
    ("bf16_modes", {"precision_mode": "allow_mix_precision_bf16"}, "precision_mode",
     "atlas_train", "atlas_350"),
    ("aicore_overflow_mode", {"dump_debug_mode": "aicore_overflow"}, "dump_debug_mode",
     "atlas_a3", "atlas_train"),
]


@pytest.mark.parametrize(("mapping", "option", "bad_product", "good_product"),
                         [pytest.param(*c[1:], id=c[0]) for c in PRODUCT_CASES])
def test_product_rule_follows_declaration(mapping: dict[str, Any], option: str,
                                          bad_product: str, good_product: str) -> None:
    bad = require_product(bad_product)
    good = require_product(good_product)
    assert errors_on(problems_of(mapping, bad), option)
    assert not errors_on(problems_of(mapping, good), option)


def test_initialize_system_refused_where_unsupported() -> None:
    product = require_product("atlas_infer")
    problems = problems_of({}, product, for_initialize_system=True)
    assert errors_on(problems, "initialize_system")


def test_initialize_system_allowed_where_supported(a2: Any) -> None:
    assert not errors_on(problems_of({}, a2, for_initialize_system=True), "initialize_system")


# -- file-backed rules --------------------------------------------------------------------


def test_dump_path_that_is_a_file_is_rejected(a2: Any, tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    problems = problems_of({"enable_dump": True, "dump_path": str(target)}, a2)
    assert "not directory" in errors_on(problems, "dump_path")[0].message


def test_relative_dump_path_is_resolved_against_cwd(a2: Any, tmp_path: Path) -> None:
    (tmp_path / "dumps").mkdir()
    problems = problems_of({"enable_dump": True, "dump_path": "dumps"}, a2, cwd=str(tmp_path))
    assert not errors_on(problems, "dump_path")


def test_profiling_output_that_is_a_file_is_rejected(a2: Any, tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_text("x")
    assert errors_on(problems_of(prof(output=str(target)), a2), f"{P}.output")


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_missing_op_debug_config_file_is_rejected(a2: Any, tmp_path: Path) -> None:
    problems = problems_of({"op_debug_config": str(tmp_path / "none.cfg")}, a2)
    assert "does not exist" in errors_on(problems, "op_debug_config")[0].message


def test_op_debug_config_line_without_equals_is_rejected(a2: Any, tmp_path: Path) -> None:
    cfg = _write(tmp_path, "d.cfg", "op_debug_config oom\n")
    assert errors_on(problems_of({"op_debug_config": cfg}, a2), "op_debug_config")


def test_op_debug_config_unknown_item_is_rejected(a2: Any, tmp_path: Path) -> None:
    cfg = _write(tmp_path, "d.cfg", "op_debug_config = oom,dump_everything\n")
    assert errors_on(problems_of({"op_debug_config": cfg}, a2), "op_debug_config")


def test_op_debug_config_valid_file_is_accepted(a2: Any, tmp_path: Path) -> None:
    cfg = _write(tmp_path, "d.cfg", "# debug\nop_debug_config = dump_cce, dump_loc\n"
                 "op_debug_list = OpType::Conv2D, conv1\n")
    assert not errors_on(problems_of({"op_debug_config": cfg}, a2), "op_debug_config")


def test_level_2_with_oom_is_rejected(a2: Any, tmp_path: Path) -> None:
    cfg = _write(tmp_path, "d.cfg", "op_debug_config = oom\n")
    assert errors_on(problems_of({"op_debug_config": cfg, "op_debug_level": 2}, a2),
                     "op_debug_config")
    assert not errors_on(problems_of({"op_debug_config": cfg, "op_debug_level": 1}, a2),
                         "op_debug_config")


def test_ccec_o0_with_oom_is_rejected(a2: Any, tmp_path: Path) -> None:
    cfg = _write(tmp_path, "d.cfg", "op_debug_config = oom,ccec_O0\n")
    assert errors_on(problems_of({"op_debug_config": cfg}, a2), "op_debug_config")


def test_oom_with_npu_collect_path_is_rejected(a2: Any, tmp_path: Path) -> None:
    cfg = _write(tmp_path, "d.cfg", "op_debug_config = oom\n")
    env = {"NPU_COLLECT_PATH": str(tmp_path)}
    assert errors_on(problems_of({"op_debug_config": cfg}, a2, env=env), "op_debug_config")
    assert not errors_on(problems_of({"op_debug_config": cfg}, a2), "op_debug_config")


def test_debug_dir_that_is_a_file_is_rejected(a2: Any, tmp_path: Path) -> None:
    target = _write(tmp_path, "f", "x")
    assert errors_on(problems_of({"debug_dir": target, "op_debug_level": 1}, a2), "debug_dir")
    assert not errors_on(problems_of({"debug_dir": str(tmp_path), "op_debug_level": 1}, a2),
                         "debug_dir")


def test_modify_mixlist_needs_mixed_precision(a2: Any, tmp_path: Path) -> None:
    mix = _write(tmp_path, "m.json", '{"black-list": {"to-add": ["Exp"]}}')
    assert errors_on(problems_of({"modify_mixlist": mix}, a2), "modify_mixlist")
    good = {"modify_mixlist": mix, "precision_mode": "allow_mix_precision"}
    assert not errors_on(problems_of(good, a2), "modify_mixlist")


def test_modify_mixlist_bad_json_is_rejected(a2: Any, tmp_path: Path) -> None:
    mix = _write(tmp_path, "m.json", '{"black-list": ["Exp"]}')
    good = {"modify_mixlist": mix, "precision_mode": "allow_mix_precision"}
    assert errors_on(problems_of(good, a2), "modify_mixlist")


def test_missing_op_precision_mode_ini_is_rejected(a2: Any, tmp_path: Path) -> None:
    problems = problems_of({"op_precision_mode": str(tmp_path / "none.ini")}, a2)
    assert errors_on(problems, "op_precision_mode")


def test_op_precision_mode_bad_value_names_the_line(a2: Any, tmp_path: Path) -> None:
    ini = _write(tmp_path, "p.ini", "Relu=high_precision\nGelu=fastest\n")
    errors = errors_on(problems_of({"op_precision_mode": ini}, a2), "op_precision_mode")
    assert errors and ":2:" in errors[0].message


def test_op_precision_mode_valid_ini_is_accepted(a2: Any, tmp_path: Path) -> None:
    ini = _write(tmp_path, "p.ini", "[ByOpType]\nRelu=high_precision\n[ByNodeName]\n"
                 "gelu_1 = high_performance\n")
    assert not errors_on(problems_of({"op_precision_mode": ini}, a2), "op_precision_mode")


def test_float32_execution_ini_value_follows_product(tmp_path: Path) -> None:
    ini = _write(tmp_path, "p.ini", "MatMulV2=enable_float_32_execution\n")
    assert errors_on(problems_of({"op_precision_mode": ini}, require_product("atlas_train")),
                     "op_precision_mode")
    assert not errors_on(problems_of({"op_precision_mode": ini}, require_product("atlas_a3")),
                         "op_precision_mode")


# -- warnings -----------------------------------------------------------------------------


def test_op_precision_mode_overriding_implmode_warns(a2: Any, tmp_path: Path) -> None:
    ini = _write(tmp_path, "p.ini", "Relu=high_precision\n")
    problems = problems_of({"op_precision_mode": ini, "op_select_implmode": "high_precision"},
                           a2)
    assert warnings_on(problems, "op_precision_mode")


def test_optypelist_with_for_all_mode_warns(a2: Any) -> None:
    problems = problems_of({"optypelist_for_implmode": "Pooling",
                            "op_select_implmode": "high_precision_for_all"}, a2)
    assert any("ignored" in w.message for w in warnings_on(problems, "optypelist_for_implmode"))


def test_deprecated_tf_options_warn(a2: Any) -> None:
    problems = problems_of({"op_debug_level": 0, "op_select_implmode": "high_precision"}, a2)
    assert any("deprecated" in w.message for w in warnings_on(problems, "op_debug_level"))
    assert any("deprecated" in w.message for w in warnings_on(problems, "op_select_implmode"))


def test_hccl_switch_warns_deprecated(a2: Any) -> None:
    assert warnings_on(problems_of(prof(hccl="on"), a2), f"{P}.hccl")


def test_debug_dir_without_kernel_meta_warns(a2: Any) -> None:
    assert warnings_on(problems_of({"debug_dir": "/tmp"}, a2), "debug_dir")


def test_npu_collect_path_overriding_exception_dump_warns(a2: Any) -> None:
    problems = problems_of({"enable_exception_dump": 2}, a2, env={"NPU_COLLECT_PATH": "/tmp"})
    assert warnings_on(problems, "enable_exception_dump")


def test_profiling_options_without_mode_warns(a2: Any) -> None:
    problems = problems_of({P: {"task_time": "on"}}, a2)
    assert warnings_on(problems, P)


def test_mem_freq_above_100_on_350_warns_not_errors() -> None:
    product = require_product("atlas_350")
    problems = problems_of(prof(sys_hardware_mem_freq="5000"), product)
    assert not errors_on(problems, f"{P}.sys_hardware_mem_freq")
    assert warnings_on(problems, f"{P}.sys_hardware_mem_freq")


# -- environment --------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "value"), [("ASCEND_DEVICE_ID", "x"),
                                             ("ASCEND_DEVICE_ID", "-1"), ("DEVICE_ID", "a")])
def test_invalid_device_id_variable_is_rejected(a2: Any, name: str, value: str) -> None:
    assert errors_on(problems_of({}, a2, env={name: value}), name)


def test_valid_device_id_variable_is_accepted(a2: Any) -> None:
    assert not [p for p in problems_of({}, a2, env={"ASCEND_DEVICE_ID": "3"})
                if p.severity == "error"]


def test_rank_size_with_cm_worker_size_is_rejected(a2: Any) -> None:
    env = {"RANK_SIZE": "2", "CM_WORKER_SIZE": "2"}
    assert errors_on(problems_of({}, a2, env=env), "RANK_SIZE")


def test_bad_rank_table_reaches_check(a2: Any, tmp_path: Path) -> None:
    table = _write(tmp_path, "rt.json", '{"version": "1.0", "status": "completed"}')
    problems = problems_of({}, a2, env={"RANK_TABLE_FILE": table})
    assert any(p.option.startswith("RANK_TABLE_FILE") for p in problems)


def test_every_problem_is_reported_at_once(a2: Any) -> None:
    problems = problems_of({"dump_mode": "x", "graph_run_mode": 7, "op_debug_level": 9,
                            "enable_exception_dump": 5}, a2)
    options = {p.option for p in problems if p.severity == "error"}
    assert {"dump_mode", "graph_run_mode", "op_debug_level", "enable_exception_dump"} <= options


def test_problems_carry_real_error_codes(a2: Any) -> None:
    problems = problems_of({"precision_mode": "force_fp32", "precision_mode_v2": "fp16"}, a2)
    assert errors_on(problems, "precision_mode_v2")[0].code == "E10056"
