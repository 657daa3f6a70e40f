"""Exporters: GE map, TF snippet, ATC command line, torch_npu; read back = what was carried;
values a target cannot take become comments and warnings, never invalid settings."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from geplug.config import ProfilingOptions, SessionConfig, export, read_export
from geplug.config.defaults import PRECISION_MODES, PRECISION_MODES_V2
from geplug.config.export import export_report, export_values
from geplug.errors import ConfigError
from geplug.testing.plugin import require_product

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")

_text = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"),
                min_size=1, max_size=20)
_profiling = st.builds(ProfilingOptions, task_trace=st.sampled_from(["on", "off", None]),
                       aic_metrics=st.none() | _text, output=st.none() | _text)
_implmodes = st.sampled_from(["high_precision", "high_performance", "high_precision_for_all",
                              "enable_float_32_execution"]) | _text
_configs = st.builds(
    SessionConfig,
    profiling_mode=st.none() | st.booleans(),
    profiling_options=st.none() | _profiling,
    enable_dump=st.none() | st.booleans(),
    dump_path=st.none() | _text,
    dump_step=st.none() | _text,
    precision_mode=st.none() | st.sampled_from(PRECISION_MODES) | _text,
    precision_mode_v2=st.none() | st.sampled_from(PRECISION_MODES_V2) | _text,
    graph_run_mode=st.none() | st.integers(0, 1),
    op_debug_level=st.none() | st.integers(0, 6),
    debug_dir=st.none() | _text,
    enable_exception_dump=st.none() | st.integers(0, 2),
    op_select_implmode=st.none() | _implmodes,
    optypelist_for_implmode=st.none() | _text,
    soc_version=st.none() | _text,
    use_off_line=st.none() | st.booleans(),
)


@pytest.mark.parametrize(("to", "front_end"), [("ge", "ge"), ("tf", "tf"), ("atc", "atc"),
                                               ("torch_npu", "torch")])
@settings(max_examples=60, deadline=None)
@given(config=_configs)
def test_export_round_trip(to: str, front_end: str, config: SessionConfig) -> None:
    product = require_product("atlas_a2")
    values, _ = export_values(config, product, to)
    assert read_export(export(config, product, to), to) == SessionConfig(front_end=front_end,
                                                                         **values)


@pytest.mark.parametrize("to", ["ge", "tf", "atc", "torch_npu"])
@settings(max_examples=30, deadline=None)
@given(config=_configs)
def test_every_set_option_is_exported_or_reported(to: str, config: SessionConfig) -> None:
    product = require_product("atlas_a2")
    report = export_report(config, product, to)
    reported = {p.option for p in report.problems}
    implied = {"graph_run_mode"} if to == "atc" and config.graph_run_mode == 0 else set()
    assert all(n in report.values or n in reported or n in implied
               for n in config.set_options())


def test_ge_export_uses_real_keys(a2: Any) -> None:
    text = export(SessionConfig(enable_dump=True, op_debug_level=3, debug_dir="/d"), a2, "ge")
    assert '"ge.exec.enableDump": "1"' in text and '"ge.opDebugLevel": "3"' in text
    assert '"ge.debugDir": "/d"' in text and "ge.exec.opDebugLevel" not in text


def test_ge_export_materialises_tf_defaults(a2: Any) -> None:
    text = export(SessionConfig(), a2, "ge")
    assert '"ge.graphRunMode": "1"' in text
    assert '"ge.exec.enable_exception_dump": "2"' in text


def test_ge_export_leaves_out_tf_only_option_with_warning(a2: Any) -> None:
    report = export_report(SessionConfig(use_off_line=True), a2, "ge")
    assert "use_off_line" not in report.text
    assert [p.option for p in report.problems] == ["use_off_line"]


def test_tf_export_is_seed_style(a2: Any) -> None:
    text = export(SessionConfig(use_off_line=True, precision_mode="force_fp32"), a2, "tf")
    assert 'custom_op.name = "NpuOptimizer"' in text
    assert 'custom_op.parameter_map["use_off_line"].b = True' in text
    assert "RewriterConfig.OFF" in text


def test_tf_export_leaves_out_hif8(a2: Any) -> None:
    report = export_report(SessionConfig(front_end="atc", precision_mode_v2="cube_hif8"), a2,
                           "tf")
    assert "parameter_map[\"precision_mode_v2\"]" not in report.text
    assert "# precision_mode_v2 = 'cube_hif8'" in report.text


def test_atc_export_adds_soc_version_and_lists_left_out(a2: Any) -> None:
    text = export(SessionConfig(precision_mode="force_fp16", enable_dump=True), a2, "atc")
    assert "--soc_version=Ascend910B1" in text
    assert "# enable_dump = '1': no ATC equivalent" in text


def test_atc_export_warns_that_atc_compiles_for_inference(a2: Any) -> None:
    report = export_report(SessionConfig(front_end="tf"), a2, "atc")
    assert any(p.option == "graph_run_mode" and "online inference" in p.message
               for p in report.problems)
    assert not export_report(SessionConfig(graph_run_mode=0, soc_version="Ascend910B2"), a2,
                             "atc").problems


def test_atc_export_refuses_implmode_outside_its_table(a2: Any) -> None:
    report = export_report(SessionConfig(op_select_implmode="enable_float_32_execution",
                                         graph_run_mode=0, soc_version="Ascend910B2"), a2, "atc")
    assert "--op_select_implmode" not in report.text
    assert [p.option for p in report.problems] == ["op_select_implmode"]


def test_torch_export_says_which_options_have_no_equivalent(a2: Any) -> None:
    text = export(SessionConfig(precision_mode="must_keep_origin_dtype", profiling_mode=True),
                  a2, "torch_npu")
    assert '"ACL_PRECISION_MODE": "must_keep_origin_dtype"' in text
    assert "# profiling_mode = '1': no torch_npu equivalent" in text


@pytest.mark.parametrize(("option", "value", "key"), [
    ("precision_mode", "allow_mix_precision_bf16", "ACL_PRECISION_MODE"),
    ("precision_mode", "force_fp32", "ACL_PRECISION_MODE"),
    ("op_select_implmode", "high_precision_for_all", "ACL_OP_SELECT_IMPL_MODE"),
    ("op_debug_level", 7, "ACL_OP_DEBUG_LEVEL"),
])
def test_torch_export_never_writes_a_value_torch_refuses(a2: Any, option: str, value: Any,
                                                        key: str) -> None:
    report = export_report(SessionConfig(**{option: value}), a2, "torch_npu")
    assert key not in report.text
    assert "no torch_npu equivalent" in report.text
    assert any(p.option == option and p.severity == "warning" for p in report.problems)


@pytest.mark.parametrize(("option", "value", "key"), [
    ("precision_mode", "allow_fp32_to_fp16", "ACL_PRECISION_MODE"),
    ("op_select_implmode", "high_precision", "ACL_OP_SELECT_IMPL_MODE"),
    ("op_debug_level", 4, "ACL_OP_DEBUG_LEVEL"),
])
def test_torch_export_writes_values_torch_takes(a2: Any, option: str, value: Any,
                                               key: str) -> None:
    report = export_report(SessionConfig(**{option: value}), a2, "torch_npu")
    assert f'"{key}": "{value}"' in report.text
    assert not [p for p in report.problems if p.option == option]


def test_unknown_export_target_is_a_config_error(a2: Any) -> None:
    with pytest.raises(ConfigError):
        export(SessionConfig(), a2, "onnx")


def test_export_keeps_profiling_json_as_strings(a2: Any) -> None:
    config = SessionConfig(profiling_options=ProfilingOptions(sys_hardware_mem_freq="50"))
    back = read_export(export(config, a2, "ge"), "ge")
    assert back.profiling_options == config.profiling_options
    assert attrs.evolve(back, front_end="tf", graph_run_mode=None,
                        enable_exception_dump=None) == config
