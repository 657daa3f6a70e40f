"""Exporters: GE map, TF snippet, ATC command line, torch_npu; read back = same config."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from geplug.config import ProfilingOptions, SessionConfig, export, read_export
from geplug.config.export import expressible, materialised_defaults
from geplug.errors import ConfigError
from geplug.testing.plugin import require_product

_text = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"),
                min_size=1, max_size=20)
_profiling = st.builds(ProfilingOptions, task_trace=st.sampled_from(["on", "off", None]),
                       aic_metrics=st.none() | _text, output=st.none() | _text)
_configs = st.builds(
    SessionConfig,
    profiling_mode=st.none() | st.booleans(),
    profiling_options=st.none() | _profiling,
    enable_dump=st.none() | st.booleans(),
    dump_path=st.none() | _text,
    dump_step=st.none() | _text,
    precision_mode=st.none() | _text,
    precision_mode_v2=st.none() | _text,
    graph_run_mode=st.none() | st.integers(0, 1),
    op_debug_level=st.none() | st.integers(0, 4),
    debug_dir=st.none() | _text,
    enable_exception_dump=st.none() | st.integers(0, 2),
    op_select_implmode=st.none() | _text,
    optypelist_for_implmode=st.none() | _text,
    soc_version=st.none() | _text,
    use_off_line=st.none() | st.booleans(),
)


def _expected(config: SessionConfig, product: Any, to: str, front_end: str) -> SessionConfig:
    keep = set(expressible(to))
    values = {n: v for n, v in config.set_options().items() if n in keep}
    values.update(materialised_defaults(config, product, to))
    return SessionConfig(front_end=front_end, **values)


@pytest.mark.parametrize(("to", "front_end"), [("ge", "ge"), ("tf", "tf"), ("atc", "atc"),
                                               ("torch_npu", "torch")])
@settings(max_examples=60, deadline=None)
@given(config=_configs)
def test_export_round_trip(to: str, front_end: str, config: SessionConfig) -> None:
    product = require_product("atlas_a2")
    text = export(config, product, to)
    assert read_export(text, to) == _expected(config, product, to, front_end)


def test_ge_export_uses_real_keys(a2: Any) -> None:
    text = export(SessionConfig(enable_dump=True, op_debug_level=3), a2, "ge")
    assert '"ge.exec.enableDump": "1"' in text and '"ge.opDebugLevel": "3"' in text


def test_ge_export_materialises_tf_defaults(a2: Any) -> None:
    text = export(SessionConfig(), a2, "ge")
    assert '"ge.graphRunMode": "1"' in text
    assert '"ge.exec.enable_exception_dump": "2"' in text


def test_tf_export_is_seed_style(a2: Any) -> None:
    text = export(SessionConfig(use_off_line=True, precision_mode="force_fp32"), a2, "tf")
    assert 'custom_op.name = "NpuOptimizer"' in text
    assert 'custom_op.parameter_map["use_off_line"].b = True' in text
    assert "RewriterConfig.OFF" in text


def test_atc_export_adds_soc_version_and_lists_left_out(a2: Any) -> None:
    text = export(SessionConfig(precision_mode="force_fp16", enable_dump=True), a2, "atc")
    assert "--soc_version=Ascend910B1" in text
    assert "# enable_dump: no ATC flag" in text


def test_torch_export_says_which_options_have_no_equivalent(a2: Any) -> None:
    text = export(SessionConfig(precision_mode="must_keep_origin_dtype", profiling_mode=True),
                  a2, "torch_npu")
    assert '"ACL_PRECISION_MODE": "must_keep_origin_dtype"' in text
    assert "# profiling_mode: no torch_npu set_option key" in text


def test_unknown_export_target_is_a_config_error(a2: Any) -> None:
    with pytest.raises(ConfigError):
        export(SessionConfig(), a2, "onnx")


def test_export_keeps_profiling_json_as_strings(a2: Any) -> None:
    config = SessionConfig(profiling_options=ProfilingOptions(sys_hardware_mem_freq="50"))
    back = read_export(export(config, a2, "ge"), "ge")
    assert back.profiling_options == config.profiling_options
    assert attrs.evolve(back, front_end="tf", graph_run_mode=None,
                        enable_exception_dump=None) == config
