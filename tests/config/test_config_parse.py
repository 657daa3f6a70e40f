"""Reading every option form: TOML, mappings, TF parameter_map, GE map, ATC, torch_npu."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from geplug.config import SessionConfig, check, load_config
from geplug.config.parse import (
    parse_atc_args,
    parse_ge_options,
    parse_mapping,
    parse_tf_parameter_map,
    parse_toml_text,
)
from geplug.errors import ConfigError
from geplug.testing.plugin import require_product


def test_toml_profiling_options_as_table(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('profiling_mode = true\n[profiling_options]\ntask_trace = "on"\n')
    config = SessionConfig.from_toml(path)
    assert config.profiling_options is not None
    assert config.profiling_options.task_trace == "on"


def test_toml_profiling_options_as_json_string() -> None:
    config = SessionConfig.from_toml('profiling_options = \'{"aicpu": "on"}\'', text=True)
    assert config.profiling_options is not None and config.profiling_options.aicpu == "on"


def test_unknown_key_suggests_the_option() -> None:
    _, problems = parse_mapping({"precison_mode": "force_fp32"})
    assert "precision_mode" in problems[0].hint


def test_unknown_profiling_key_suggests_the_key() -> None:
    _, problems = parse_mapping({"profiling_options": {"task_trac": "on"}})
    assert problems[0].option == "profiling_options.task_trac"
    assert "task_trace" in problems[0].hint


def test_wrong_type_is_a_problem() -> None:
    _, problems = parse_mapping({"enable_dump": "yes", "graph_run_mode": "1"})
    assert {p.option for p in problems} == {"enable_dump", "graph_run_mode"}


def test_json_number_in_profiling_options_is_a_problem() -> None:
    _, problems = parse_mapping({"profiling_options": '{"sys_hardware_mem_freq": 50}'})
    assert 'sys_hardware_mem_freq": "50"' in problems[0].hint


def test_profiling_json_that_is_not_an_object_is_a_problem() -> None:
    _, problems = parse_mapping({"profiling_options": '["task_trace"]'})
    assert "JSON object" in problems[0].message


def test_malformed_profiling_json_is_a_problem() -> None:
    _, problems = parse_mapping({"profiling_options": '{"task_trace": on}'})
    assert problems[0].code == "E10001"


def test_profiling_json_longer_than_ge_buffer_is_a_problem() -> None:
    text = '{"output": "' + "a" * 2100 + '"}'
    _, problems = parse_mapping({"profiling_options": text})
    assert "2047" in problems[0].message


def test_huge_string_is_a_problem() -> None:
    _, problems = parse_mapping({"dump_path": "x" * 100_000})
    assert problems and len(str(problems[0].value)) < 300


def test_malformed_toml_is_a_problem() -> None:
    _, problems = parse_toml_text("precision_mode = force_fp32\n")
    assert "malformed TOML" in problems[0].message


def test_toml_path_that_is_a_directory_is_a_problem(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        SessionConfig.from_toml(tmp_path)
    assert "directory" in str(info.value)


def test_missing_toml_is_a_problem(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        load_config(str(tmp_path / "none.toml"))


def test_config_error_carries_every_problem() -> None:
    with pytest.raises(ConfigError) as info:
        SessionConfig.from_mapping({"a": 1, "b": 2, "enable_dump": 3})
    assert len(info.value.problems) == 3


def test_load_config_accepts_none_config_and_mapping() -> None:
    assert load_config(None) == SessionConfig()
    config = SessionConfig(precision_mode="force_fp32")
    assert load_config(config) is config
    assert load_config({"precision_mode": "force_fp32"}) == config


def test_seed_example_reads_and_checks_clean(geplug_product: Any) -> None:
    """The seed's initialize_system example: parameter_map["use_off_line"].b = True; clean on
    every product that supports initialize_system, refused (only for that) elsewhere."""
    config = SessionConfig.from_tf_parameter_map({"use_off_line": True})
    assert config.use_off_line is True
    problems = check(config, geplug_product, env={}, for_initialize_system=True)
    expected = [] if geplug_product.runtime.initialize_system else ["initialize_system"]
    assert [p.option for p in problems] == expected


def test_empty_config_checks_clean_on_every_product(geplug_product: Any) -> None:
    assert check(SessionConfig(), geplug_product, env={}) == []


class _AttrValue:
    """An AttrValue stand-in: every accessor set as protobuf would default it."""

    def __init__(self, b: bool = False, s: bytes = b"", i: int = 0) -> None:
        self.b, self.s, self.i = b, s, i


def test_tf_parameter_map_reads_accessors() -> None:
    config = SessionConfig.from_tf_parameter_map({
        "precision_mode": _AttrValue(s=b"allow_mix_precision"),
        "enable_dump": _AttrValue(b=True),
        "graph_run_mode": _AttrValue(i=0),
        "soc_config": b"Ascend910B3",
    })
    assert (config.precision_mode, config.enable_dump, config.graph_run_mode,
            config.soc_version) == ("allow_mix_precision", True, 0, "Ascend910B3")


def test_tf_parameter_map_wrong_accessor_is_a_problem() -> None:
    _, problems = parse_tf_parameter_map({"enable_dump": "True"})
    assert ".b" in problems[0].option


def test_ge_options_read_ge_keys() -> None:
    config = SessionConfig.from_ge_options({
        "ge.exec.enableDump": "1", "ge.exec.dumpStep": "0|2", "ge.graphRunMode": "0",
        "ge.opDebugLevel": "3", "ge.exec.profilingOptions": '{"aicpu": "on"}'})
    assert (config.enable_dump, config.dump_step, config.graph_run_mode,
            config.op_debug_level, config.front_end) == (True, "0|2", 0, 3, "ge")


def test_ge_bool_other_than_1_or_0_is_e10006() -> None:
    _, problems = parse_ge_options({"ge.exec.enableDump": "true"})
    assert problems[0].code == "E10006"


def test_unknown_ge_key_suggests() -> None:
    _, problems = parse_ge_options({"ge.exec.dumpSteps": "1"})
    assert "ge.exec.dumpStep" in problems[0].hint


def test_atc_args_both_forms() -> None:
    config = SessionConfig.from_atc_args(
        "atc --model=m.onnx --precision_mode force_fp16 --op_debug_level=3 "
        "--soc_version=Ascend910B3")
    assert (config.precision_mode, config.op_debug_level, config.soc_version,
            config.front_end) == ("force_fp16", 3, "Ascend910B3", "atc")


def test_atc_non_integer_level_is_e10003() -> None:
    _, problems = parse_atc_args(["--op_debug_level=high"])
    assert problems[0].code == "E10003"


def test_atc_empty_soc_version_is_e10054() -> None:
    _, problems = parse_atc_args(["--soc_version="])
    assert problems[0].code == "E10054"


def test_atc_unknown_flag_suggests() -> None:
    _, problems = parse_atc_args(["--precision-mode=force_fp16"])
    assert "precision_mode" in problems[0].hint


def test_torch_options_read() -> None:
    config = SessionConfig.from_torch_options({"ACL_PRECISION_MODE": "must_keep_origin_dtype",
                                               "ACL_OP_DEBUG_LEVEL": "1"})
    assert (config.precision_mode, config.op_debug_level) == ("must_keep_origin_dtype", 1)


# -- bad input of every kind never raises -------------------------------------------------

_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=50)
    | st.binary(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner,
                                                                max_size=3),
    max_leaves=8,
)
_keys = st.sampled_from(["precision_mode", "profiling_options", "enable_dump", "dump_step",
                         "graph_run_mode", "op_debug_level", "front_end", "nope"]) | st.text(
    max_size=15)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(_keys, _values, max_size=6))
def test_fuzz_from_mapping_never_crashes(data: dict[str, Any]) -> None:
    product = require_product("atlas_a2")
    config, _ = parse_mapping(data)
    check(config, product, env={})
    try:
        SessionConfig.from_mapping(data)
    except ConfigError as exc:
        assert exc.problems


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_fuzz_toml_text_never_crashes(text: str) -> None:
    product = require_product("atlas_a2")
    config, _ = parse_toml_text(text)
    check(config, product, env={})


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(max_size=30), st.text(max_size=30) | st.integers(), max_size=5))
def test_fuzz_ge_and_tf_readers_never_crash(data: dict[str, Any]) -> None:
    parse_ge_options(data)
    parse_tf_parameter_map(data)
    parse_atc_args([f"--{k}={v}" for k, v in data.items()])


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from(["aic_metrics", "storage_limit", "dump_step_x",
                                        "sys_hardware_mem_freq", "host_sys", "output"]),
                       st.text(max_size=40), max_size=4),
       st.text(max_size=30))
def test_fuzz_profiling_and_dump_step_never_crash(opts: dict[str, str], step: str) -> None:
    product = require_product("atlas_a2")
    config, _ = parse_mapping({"profiling_mode": True, "profiling_options": opts,
                               "dump_step": step})
    check(config, product, env={})
