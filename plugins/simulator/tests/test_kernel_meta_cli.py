"""kernel_meta files per the product's declaration; the CLI commands; initialize_system."""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import onnx
import pytest
from sim_helpers import any_product, make_system, overflow_model

from geplug.cli.main import main
from geplug.testing.plugin import require_product


def test_level_3_keeps_o_and_json_with_real_fields(tmp_path):
    """3：不开启算子debug功能，且在训练脚本执行目录下的kernel_meta文件夹中保留.o和.json文件。"""
    a2 = require_product("atlas_a2")
    meta = tmp_path / "kernel_meta"
    system = make_system(a2, op_debug_level=3, resolved__kernel_meta_dir=str(meta))
    compiled = system.compile(overflow_model())
    suffixes = sorted({p.name.split(".", 1)[1] for p in meta.iterdir()})
    assert suffixes == ["json", "o"]
    desc_path = next(p for p in meta.iterdir() if p.suffix == ".json")
    desc = json.loads(desc_path.read_text())
    blob = (meta / (desc["binFileName"] + ".o")).read_bytes()
    assert desc["sha256"] == hashlib.sha256(blob).hexdigest()
    assert desc["opType"] == "MatMulV2" and desc["simulated"] is True
    assert {"kernelName", "blockDim", "implMode", "inputs", "outputs"} <= set(desc)
    assert len(compiled.kernel_meta_files) == 4  # two kernels (shapes differ)


def test_level_1_adds_cce_and_loc_files(tmp_path):
    """1：开启算子debug功能，在训练脚本执行目录下的kernel_meta文件夹中生成TBE指令映射文件（算子cce文件
    *.cce、python-cce映射文件*_loc.json、.o和.json文件）……"""
    a2 = require_product("atlas_a2")
    meta = tmp_path / "kernel_meta"
    make_system(a2, op_debug_level=1, resolved__kernel_meta_dir=str(meta)).compile(
        overflow_model())
    names = [p.name for p in meta.iterdir()]
    assert any(n.endswith(".cce") for n in names)
    assert any(n.endswith("_loc.json") for n in names)


def test_no_kernel_meta_without_a_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    compiled = make_system(any_product(), op_debug_level=0).compile(overflow_model())
    assert compiled.kernel_meta_files == () and os.listdir(tmp_path) == []


def test_op_debug_config_items_follow_op_debug_list(tmp_path):
    a2 = require_product("atlas_a2")
    meta = tmp_path / "kernel_meta"
    make_system(a2, op_debug_level=0, resolved__kernel_meta_dir=str(meta),
                resolved__op_debug_items=("dump_cce",),
                resolved__op_debug_list=("big",)).compile(overflow_model())
    cce = [p for p in meta.iterdir() if p.suffix == ".cce"]
    assert len(cce) == 1 and "op big (MatMulV2)" in cce[0].read_text()


def test_initialize_system_serves_every_product_through_the_simulator(geplug_fresh_manager):
    import geplug

    for product in geplug_fresh_manager.products():
        if not product.runtime.initialize_system:
            continue
        with geplug.initialize_system(product=product.name, manager=geplug_fresh_manager) as system:
            assert system.backend == "simulator"
            out = system.compile(overflow_model()).run({"x": np.ones((1, 4), np.float32)})
            assert out["y"].shape == (1, 2)


def cli_product() -> str:
    """The product the CLI tests name (any installed one: the CLI serves every product)."""
    return any_product().name


def test_cli_compile_json_lists_ops(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    onnx.save(overflow_model(), path)
    assert main(["compile", str(path), "--product", cli_product(), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [op["op_type"] for op in data["ops"]] == ["MatMulV2", "MatMulV2"]
    assert {"node", "onnx_op", "engine", "dtype", "impl_mode", "reason"} <= set(data["ops"][0])


def test_cli_run_writes_outputs(tmp_path, capsys):
    model, x, out = tmp_path / "m.onnx", tmp_path / "x.npy", tmp_path / "out.npz"
    onnx.save(overflow_model(), model)
    np.save(x, np.ones((1, 4), np.float32))
    code = main(["run", str(model), "--product", cli_product(), "--input", f"x={x}", "--steps", "2",
                 "--output", str(out)])
    assert code == 0
    assert np.load(out)["y"].shape == (1, 2)


def test_cli_compile_of_a_missing_model_is_a_clear_error(tmp_path, capsys):
    assert main(["compile", str(tmp_path / "nope.onnx"), "--product", cli_product()]) == 1
    assert "nope.onnx" in capsys.readouterr().err


def test_cli_demo_prints_its_summary_and_writes_nothing(tmp_path, capsys, monkeypatch):
    from geplug_simulator import DEFAULT_PRODUCT

    require_product(DEFAULT_PRODUCT)
    monkeypatch.chdir(tmp_path)
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "NOT FINITE" in out and "allow_fp32_to_fp16" in out and "bfloat16" in out
    assert os.listdir(tmp_path) == []


def test_kernel_meta_files_follow_each_products_declaration(tmp_path):
    """Each level's files are product data, e.g. 注意：Atlas 350 加速卡不会生成TBE指定映射文件
    和UB融合计算描述文件。 (level 4: .o, .json, .cce and {$kernel_name}_compute.json elsewhere)."""
    import re

    from geplug.testing.plugin import installed_products

    kernel = re.compile(r"^te_[a-z0-9]+_[0-9a-f]{16}(.+)$")
    for product in installed_products():
        for level, declared in product.debug.kernel_meta.items():
            meta = tmp_path / product.name / level
            make_system(product, op_debug_level=int(level),
                        resolved__kernel_meta_dir=str(meta)).compile(overflow_model())
            files = list(meta.iterdir()) if meta.exists() else []
            written = {kernel.match(p.name).group(1) for p in files}  # type: ignore[union-attr]
            expected = {s for s in declared
                        if s != "_compute.json" or product.debug.ub_fusion}
            assert written == expected, (product.name, level)


@pytest.mark.filterwarnings("ignore::geplug.errors.ConfigWarning")  # op_debug_level: deprecated
def test_debug_dir_holds_kernel_meta_through_initialize_system(tmp_path, monkeypatch):
    from geplug.cli.sim_cmds import open_system

    monkeypatch.chdir(tmp_path)
    product = any_product()
    config = {"op_debug_level": 1, "debug_dir": str(tmp_path / "dbg")}
    with open_system(product.name, config) as system:
        compiled = system.compile(overflow_model())
    assert compiled.kernel_meta_files
    root = str(tmp_path / "dbg" / "kernel_meta")
    assert all(f.startswith(root) for f in compiled.kernel_meta_files)


def test_level_2_builds_larger_kernels_than_level_1(tmp_path):
    """配置为2（即开启ccec编译选项）的场景下，会增大算子Kernel（*.o文件）的大小。"""
    product = any_product()
    sizes = {}
    for level in (1, 2):
        meta = tmp_path / str(level)
        make_system(product, op_debug_level=level,
                    resolved__kernel_meta_dir=str(meta)).compile(overflow_model())
        objects = list(meta.glob("*.o"))
        if not objects:
            import pytest

            pytest.skip(f"{product.name} declares no .o at levels 1/2")
        sizes[level] = max(p.stat().st_size for p in objects)
    assert sizes[2] > sizes[1]


def test_communication_fused_ops_get_no_kernel_files():
    """debug功能开关打开场景下，若模型中含有如下通算融合算子，算子编译目录kernel_meta中，不会生成下述
    算子的*.o、*.json、*.cce文件。"""
    from geplug.config.model import SessionConfig
    from geplug.config.resolved import ResolvedConfig
    from geplug.kernel_meta import COMM_FUSED_OPS, kernel_suffixes

    product = any_product()
    config = ResolvedConfig(product=product.name, config=SessionConfig(op_debug_level=1),
                            kernel_meta_dir="/tmp/km")
    assert kernel_suffixes(product, config, "n", "MatMulV2")
    for op_type in COMM_FUSED_OPS:
        assert kernel_suffixes(product, config, "n", op_type) == ()
