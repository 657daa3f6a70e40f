"""Resolution: effective values, their sources, and the locations of debug output."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from geplug.config import SessionConfig, resolve
from geplug.testing.plugin import require_product


def _resolve(mapping: dict[str, Any], product: Any, env: dict[str, str] | None = None,
             cwd: str = "/work/x") -> Any:
    return resolve(SessionConfig.from_mapping(mapping), product, env=env or {}, cwd=cwd)


def test_every_product_defaults_exactly_one_precision_mode(geplug_product: Any) -> None:
    resolved = _resolve({}, geplug_product)
    c = resolved.config
    assert (c.precision_mode is None) != (c.precision_mode_v2 is None)


def test_user_precision_v2_is_kept_alone(a2: Any) -> None:
    c = _resolve({"precision_mode_v2": "origin"}, a2).config
    assert (c.precision_mode, c.precision_mode_v2) == (None, "origin")


def test_training_default_precision_per_family() -> None:
    assert _resolve({}, require_product("atlas_train")).config.precision_mode == \
        "allow_fp32_to_fp16"
    resolved = _resolve({}, require_product("atlas_a2"))
    assert resolved.config.precision_mode == "must_keep_origin_dtype"
    assert resolved.source("precision_mode") == "product default"


def test_inference_default_precision_is_force_fp16(a2: Any) -> None:
    assert _resolve({"graph_run_mode": 0}, a2).config.precision_mode == "force_fp16"


def test_graph_run_mode_default_follows_front_end(a2: Any) -> None:
    assert _resolve({}, a2).config.graph_run_mode == 1
    ge = resolve(SessionConfig.from_ge_options({}), a2, env={})
    assert ge.config.graph_run_mode == 0 and ge.run_mode == "inference"


def test_product_without_training_defaults_to_inference() -> None:
    resolved = _resolve({}, require_product("atlas_infer"))
    assert resolved.run_mode == "inference"


def test_default_profiling_options_when_none_given(a2: Any) -> None:
    resolved = _resolve({"profiling_mode": True}, a2, cwd="/work/x")
    opts = resolved.config.profiling_options
    assert (opts.task_time, opts.training_trace, opts.aic_metrics) == \
        ("on", "on", "PipeUtilization")
    assert resolved.profiling_output == "/work/x" == opts.output


def test_profiling_output_under_ascend_work_path(a2: Any) -> None:
    resolved = _resolve({"profiling_mode": True}, a2, env={"ASCEND_WORK_PATH": "/w"})
    assert resolved.profiling_output == "/w"
    assert resolved.source("profiling_output") == "environment ASCEND_WORK_PATH"


def test_profiling_output_option_wins_over_env(a2: Any) -> None:
    resolved = _resolve({"profiling_mode": True, "profiling_options": {"output": "prof"}}, a2,
                        env={"ASCEND_WORK_PATH": "/w"}, cwd="/c")
    assert resolved.profiling_output == "/c/prof"


def test_profiling_mode_from_environment(a2: Any) -> None:
    resolved = _resolve({}, a2, env={"PROFILING_MODE": "true",
                                     "PROFILING_OPTIONS": '{"aicpu": "on"}'})
    assert resolved.config.profiling_mode is True
    assert resolved.config.profiling_options.aicpu == "on"
    assert resolved.source("profiling_options") == "environment PROFILING_OPTIONS"


def test_kernel_meta_absent_at_level_0(a2: Any) -> None:
    assert _resolve({}, a2).kernel_meta_dir is None


def test_kernel_meta_priority_debug_dir_then_work_path_then_cwd(a2: Any) -> None:
    env = {"ASCEND_WORK_PATH": "/w"}
    assert _resolve({"op_debug_level": 1, "debug_dir": "/d"}, a2, env).kernel_meta_dir == \
        "/d/kernel_meta"
    assert _resolve({"op_debug_level": 1}, a2, env).kernel_meta_dir == "/w/kernel_meta"
    assert _resolve({"op_debug_level": 1}, a2, cwd="/c").kernel_meta_dir == "/c/kernel_meta"


def test_kernel_meta_with_npu_collect_path_at_level_0(a2: Any) -> None:
    resolved = _resolve({}, a2, env={"NPU_COLLECT_PATH": "/n"}, cwd="/c")
    assert resolved.kernel_meta_dir == "/c/kernel_meta"
    assert resolved.op_debug_items


def test_op_debug_items_from_cfg(a2: Any, tmp_path: Path) -> None:
    cfg = tmp_path / "d.cfg"
    cfg.write_text("op_debug_config = dump_cce\nop_debug_list = OpType::Conv2D, conv1\n")
    resolved = _resolve({"op_debug_config": str(cfg)}, a2, cwd=str(tmp_path))
    assert resolved.op_debug_items == ("dump_cce",)
    assert resolved.op_debug_list == ("OpType::Conv2D", "conv1")
    assert resolved.kernel_meta_dir == os.path.join(str(tmp_path), "kernel_meta")


def test_exception_dump_tf_default_is_lite_under_cwd(a2: Any) -> None:
    resolved = _resolve({}, a2, cwd="/c")
    assert resolved.exception_dump_level == 2
    assert resolved.exception_dump_dir == "/c/extra-info/data-dump/0"


def test_exception_dump_ge_default_is_off(a2: Any) -> None:
    resolved = resolve(SessionConfig.from_ge_options({}), a2, env={})
    assert (resolved.exception_dump_level, resolved.exception_dump_dir) == (0, None)


def test_npu_collect_path_forces_level_1_into_it(a2: Any) -> None:
    resolved = _resolve({"enable_exception_dump": 0}, a2,
                        env={"NPU_COLLECT_PATH": "/n", "ASCEND_DEVICE_ID": "3"})
    assert resolved.exception_dump_level == 1
    assert resolved.exception_dump_dir == "/n/extra-info/data-dump/3"
    assert resolved.source("enable_exception_dump") == "environment NPU_COLLECT_PATH"


def test_lite_exception_dump_ignores_npu_collect_priority_for_work_path(a2: Any) -> None:
    resolved = _resolve({"enable_exception_dump": 2}, a2, env={"ASCEND_WORK_PATH": "/w"})
    assert resolved.exception_dump_dir == "/w/extra-info/data-dump/0"


def test_device_id_priority(a2: Any) -> None:
    assert _resolve({}, a2, env={"ASCEND_DEVICE_ID": "2", "DEVICE_ID": "5"}).device_id == 2
    assert _resolve({}, a2, env={"DEVICE_ID": "5"}).device_id == 5
    assert _resolve({}, a2).device_id == 0


def test_dump_root_is_absolute_when_dumping(a2: Any) -> None:
    resolved = _resolve({"enable_dump": True, "dump_path": "d"}, a2, cwd="/c")
    assert resolved.dump_root == "/c/d"
    assert _resolve({"dump_path": "d"}, a2).dump_root is None


def test_implmode_default_uses_builtin_list(a2: Any) -> None:
    resolved = _resolve({}, a2)
    assert resolved.impl_default == "high_performance"
    assert resolved.impl_by_op_type == dict(a2.implmode.builtin_lists["high_performance"])


def test_implmode_for_all_sets_default_and_list(a2: Any) -> None:
    resolved = _resolve({"op_select_implmode": "high_precision_for_all",
                         "optypelist_for_implmode": "Pooling"}, a2)
    assert resolved.impl_default == "high_precision"
    assert resolved.impl_by_op_type == dict(a2.implmode.builtin_lists["high_precision_for_all"])


def test_optypelist_restricts_mode(a2: Any) -> None:
    resolved = _resolve({"op_select_implmode": "high_precision",
                         "optypelist_for_implmode": "Pooling, LRN"}, a2)
    assert resolved.impl_by_op_type == {"Pooling": "high_precision", "LRN": "high_precision"}


def test_op_precision_mode_ini_wins(a2: Any, tmp_path: Path) -> None:
    ini = tmp_path / "p.ini"
    ini.write_text("Relu=high_precision\n[ByNodeName]\ngelu_1=high_performance\n")
    resolved = _resolve({"op_precision_mode": str(ini), "op_select_implmode": "high_precision"},
                        a2)
    assert resolved.impl_by_op_type == {"Relu": "high_precision"}
    assert resolved.impl_by_node == {"gelu_1": "high_performance"}


def test_mixlist_overrides(a2: Any, tmp_path: Path) -> None:
    mix = tmp_path / "m.json"
    mix.write_text('{"black-list": {"to-add": ["Exp"], "to-remove": ["Log"]},'
                   ' "white-list": {"to-add": ["Conv2D"]}}')
    resolved = _resolve({"modify_mixlist": str(mix), "precision_mode": "allow_mix_precision"},
                        a2)
    assert dict(resolved.mixlist_overrides) == {"Exp": False, "Log": None, "Conv2D": True}


def test_every_option_has_a_source(a2: Any) -> None:
    resolved = _resolve({"precision_mode": "force_fp32"}, a2)
    for name in ("precision_mode", "graph_run_mode", "profiling_mode", "enable_dump",
                 "op_debug_level", "enable_exception_dump", "op_select_implmode",
                 "soc_version", "device_id"):
        assert resolved.source(name), name
    assert resolved.source("precision_mode") == "user"


def test_resolved_to_json_is_serialisable(a2: Any) -> None:
    import json

    json.dumps(_resolve({"profiling_mode": True}, a2).to_json())
