"""aicore_num, op_compiler_cache_mode, op_compiler_cache_dir: every reader, the checks,
resolution with sources, and export round trips (CANN GE/ATC docs)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from geplug.config import SessionConfig, check, resolve
from geplug.config.export import export, export_report, read_export
from geplug.config.parse import parse_torch_options
from geplug.config.resolved import Source
from geplug.errors import ConfigError

CACHE = {"aicore_num": 2, "op_compiler_cache_mode": "force",
         "op_compiler_cache_dir": "/tmp/opcache"}


def _errors(config: SessionConfig, product: Any, option: str) -> list[Any]:
    return [p for p in check(config, product, env={}) if p.severity == "error"
            and p.option == option]


def test_toml_reads_the_three_options() -> None:
    config = SessionConfig.from_toml('aicore_num = 4\nop_compiler_cache_mode = "enable"\n'
                                     'op_compiler_cache_dir = "/c"\n', text=True)
    assert (config.aicore_num, config.op_compiler_cache_mode, config.op_compiler_cache_dir) == \
        (4, "enable", "/c")


def test_ge_map_reads_the_ge_keys() -> None:
    config = SessionConfig.from_ge_options({"ge.aicoreNum": "4",
                                            "ge.op_compiler_cache_mode": "enable",
                                            "ge.op_compiler_cache_dir": "/c"})
    assert (config.aicore_num, config.op_compiler_cache_mode, config.op_compiler_cache_dir) == \
        (4, "enable", "/c")


def test_atc_reads_the_cache_flags() -> None:
    config = SessionConfig.from_atc_args(["--op_compiler_cache_mode=enable",
                                          "--op_compiler_cache_dir=/c"])
    assert (config.op_compiler_cache_mode, config.op_compiler_cache_dir) == ("enable", "/c")


def test_tf_parameter_map_reads_aicore_num_as_text() -> None:
    config = SessionConfig.from_tf_parameter_map({"aicore_num": b"4",
                                                  "op_compiler_cache_mode": b"enable"})
    assert (config.aicore_num, config.op_compiler_cache_mode) == (4, "enable")


def test_torch_reader_maps_the_acl_keys_without_warnings() -> None:
    config, problems = parse_torch_options({"ACL_AICORE_NUM": "4",
                                            "ACL_OP_COMPILER_CACHE_MODE": "force",
                                            "ACL_OP_COMPILER_CACHE_DIR": "/c"})
    assert problems == []
    assert (config.aicore_num, config.op_compiler_cache_mode, config.op_compiler_cache_dir) == \
        (4, "force", "/c")


def test_torch_reader_rejects_a_non_integer_core_count() -> None:
    _, problems = parse_torch_options({"ACL_AICORE_NUM": "many"})
    (problem,) = problems
    assert problem.severity == "error" and problem.option == "ACL_AICORE_NUM"
    assert "integer" in problem.message


def test_aicore_num_within_the_declared_cores_passes(geplug_product: Any) -> None:
    most = geplug_product.compute.ai_cores
    for n in (1, most):
        assert _errors(SessionConfig(aicore_num=n), geplug_product, "aicore_num") == []


def test_aicore_num_above_the_declared_cores_is_an_error(geplug_product: Any) -> None:
    most = geplug_product.compute.ai_cores
    (problem,) = _errors(SessionConfig(aicore_num=most + 1), geplug_product, "aicore_num")
    assert f"[1, {most}]" in problem.message and str(most + 1) in problem.message
    assert f"1 to {most}" in problem.hint


def test_aicore_num_zero_is_an_error(geplug_product: Any) -> None:
    assert _errors(SessionConfig(aicore_num=0), geplug_product, "aicore_num")


def test_unknown_cache_mode_gets_a_did_you_mean(a2: Any) -> None:
    (problem,) = _errors(SessionConfig(op_compiler_cache_mode="enabled"), a2,
                         "op_compiler_cache_mode")
    assert "enable, disable, force" in problem.message
    assert "did you mean 'enable'?" in problem.hint


def test_cache_dir_that_is_a_file_is_an_error(a2: Any, tmp_path: Any) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    (problem,) = _errors(SessionConfig(op_compiler_cache_dir=str(f)), a2,
                         "op_compiler_cache_dir")
    assert "not a directory" in problem.message


def test_resolve_defaults_to_every_declared_core_and_the_documented_cache(a2: Any) -> None:
    r = resolve(SessionConfig(), a2, env={"HOME": "/home/u"})
    assert r.config.aicore_num == a2.compute.ai_cores
    assert r.sources["aicore_num"] == Source.PRODUCT_DEFAULT
    assert r.config.op_compiler_cache_mode == "disable"
    assert r.config.op_compiler_cache_dir == "/home/u/atc_data"


def test_resolve_takes_the_cache_dir_from_ascend_cache_path(a2: Any) -> None:
    r = resolve(SessionConfig(), a2, env={"ASCEND_CACHE_PATH": "/cache"})
    assert r.config.op_compiler_cache_dir == "/cache"
    assert r.sources["op_compiler_cache_dir"] == Source.env("ASCEND_CACHE_PATH")


def test_resolve_keeps_the_users_values(a2: Any) -> None:
    r = resolve(SessionConfig(**CACHE), a2, env={"ASCEND_CACHE_PATH": "/cache"})
    assert (r.config.aicore_num, r.config.op_compiler_cache_dir) == (2, "/tmp/opcache")
    assert r.sources["aicore_num"] == Source.USER


@pytest.mark.parametrize("to", ["ge", "tf", "torch_npu"])
def test_export_round_trip_carries_all_three(a2: Any, to: str) -> None:
    config = SessionConfig(**CACHE)
    report = export_report(config, a2, to)
    assert {k: report.values[k] for k in CACHE} == CACHE
    back = read_export(report.text, to)
    assert {k: getattr(back, k) for k in CACHE} == CACHE


def test_ge_export_uses_the_ge_keys(a2: Any) -> None:
    data = json.loads(export(SessionConfig(**CACHE), a2, "ge"))
    assert data["ge.aicoreNum"] == "2" and data["ge.op_compiler_cache_mode"] == "force"
    assert data["ge.op_compiler_cache_dir"] == "/tmp/opcache"


def test_torch_npu_export_writes_the_acl_keys(a2: Any) -> None:
    text = export(SessionConfig(**CACHE), a2, "torch_npu")
    for line in ('"ACL_AICORE_NUM": "2"', '"ACL_OP_COMPILER_CACHE_MODE": "force"',
                 '"ACL_OP_COMPILER_CACHE_DIR": "/tmp/opcache"'):
        assert line in text


def test_atc_export_carries_the_cache_flags_and_leaves_out_aicore_num(a2: Any) -> None:
    report = export_report(SessionConfig(front_end="atc", **CACHE), a2, "atc")
    assert "--op_compiler_cache_mode=force" in report.text
    assert "--op_compiler_cache_dir=/tmp/opcache" in report.text
    assert [p.option for p in report.problems if p.option == "aicore_num"] == ["aicore_num"]
    back = read_export(report.text, "atc")
    assert back.op_compiler_cache_mode == "force" and back.aicore_num is None


def test_bad_core_count_in_ge_map_names_the_key() -> None:
    with pytest.raises(ConfigError, match=r"ge\.aicoreNum"):
        SessionConfig.from_ge_options({"ge.aicoreNum": "lots"})
