"""The configuration forms geplug_torch.backend accepts, and bad input."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import geplug_torch  # noqa: E402
from geplug_torch import CompilerConfig  # noqa: E402
from torch_helpers import GPT, train  # noqa: E402

from geplug.errors import ConfigError, ProfilingError  # noqa: E402

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")


def test_torch_npu_acl_options_are_read():
    be = geplug_torch.backend(product="atlas_a2",
                              config={"ACL_PRECISION_MODE": "must_keep_origin_dtype"})
    try:
        assert be.system.config.config.precision_mode == "must_keep_origin_dtype"
    finally:
        be.shutdown()


def test_torchair_compiler_config_dump_fields_become_dump_options(tmp_path):
    cfg = CompilerConfig()
    cfg.dump_config.enable_dump = True
    cfg.dump_config.dump_path = str(tmp_path)
    cfg.dump_config.dump_step = "0"
    cfg.extra_options = {"precision_mode": "must_keep_origin_dtype"}
    be = geplug_torch.backend(product="atlas_a2", config=cfg)
    try:
        c = be.system.config.config
        assert (c.enable_dump, c.dump_path, c.dump_step, c.dump_mode) == (
            True, str(tmp_path), "0", "all")
    finally:
        be.shutdown()


def test_a_bad_option_is_a_config_error_naming_it():
    with pytest.raises(ConfigError, match="precision_mode"):
        geplug_torch.backend(product="atlas_a2", config={"precision_mode": "fp8_please"})


def test_a_named_bp_point_not_in_the_graphs_is_a_profiling_error(tmp_path):
    cfg = {"precision_mode": "must_keep_origin_dtype", "profiling_mode": True,
           "profiling_options": {"output": str(tmp_path), "training_trace": "on",
                                 "task_trace": "on", "fp_point": "embedding",
                                 "bp_point": "gradients/no_such_op"}}
    be = geplug_torch.backend(product="atlas_a2", config=cfg)
    try:
        with pytest.raises(Exception, match="bp_point") as info:
            train(torch.compile(GPT(layers=1), backend=be), 1)
        assert isinstance(info.value, ProfilingError) or "ProfilingError" in str(info.value)
    finally:
        be.shutdown()


def test_named_fp_and_bp_points_set_the_training_trace(tmp_path):
    import csv

    from geplug.profiling.reader import find_prof_dirs, output_file

    cfg = {"precision_mode": "must_keep_origin_dtype", "profiling_mode": True,
           "profiling_options": {"output": str(tmp_path), "training_trace": "on",
                                 "task_trace": "on", "fp_point": "embedding",
                                 "bp_point": "gradients/embedding_dense_backward"}}
    be = geplug_torch.backend(product="atlas_a2", config=cfg)
    train(torch.compile(GPT(layers=1), backend=be), 2)
    be.shutdown()
    (prof,) = find_prof_dirs(str(tmp_path))
    with open(output_file(prof, "step_trace"), newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["Iteration ID"] for r in rows] == ["1", "2"]
    assert all(r["FP Start(us)"] != "N/A" and r["BP End(us)"] != "N/A" for r in rows)
    assert all(float(r["FP to BP Time(us)"]) > 0 for r in rows)


@pytest.mark.parametrize("key,option,value", [
    ("ACL_AICORE_NUM", "aicore_num", "8"),
    ("ACL_OP_COMPILER_CACHE_MODE", "op_compiler_cache_mode", "force"),
    ("ACL_OP_COMPILER_CACHE_DIR", "op_compiler_cache_dir", "/tmp/cache")])
def test_torch_npu_compile_keys_are_read_without_warning_and_exported_back(key, option, value):
    import warnings

    from geplug.config.export import export

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        be = geplug_torch.backend(product="atlas_a2",
                                  config={key: value, "ACL_PRECISION_MODE": "allow_fp32_to_fp16"})
    try:
        config = be.system.config.config
        assert str(getattr(config, option)) == value
        assert f'"{key}": "{value}"' in export(config, be.system.product, "torch_npu")
    finally:
        be.shutdown()


def test_acl_op_debug_option_is_read_and_exported_back(tmp_path):
    from geplug.config.export import export

    cfg_file = tmp_path / "debug.cfg"
    cfg_file.write_text("op_debug_config = ccec_g\n")
    be = geplug_torch.backend(product="atlas_a2",
                              config={"ACL_OP_DEBUG_OPTION": str(cfg_file)})
    try:
        config = be.system.config.config
        assert config.op_debug_config == str(cfg_file)
        text = export(config, be.system.product, "torch_npu")
        assert f'"ACL_OP_DEBUG_OPTION": "{cfg_file}"' in text
    finally:
        be.shutdown()
