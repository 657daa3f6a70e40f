"""End to end with the simulator: dump steps, fp16 overflow, exception dumps, compare."""

from __future__ import annotations

import json
import os
import warnings
from typing import Any

import numpy as np
import pytest

pytest.importorskip("geplug_simulator")

import geplug
from geplug.dump.compare import compare_trees
from geplug.dump.overflow import OverflowWarning
from geplug.dump.reader import iter_dump_tree, read_dump
from geplug.errors import AICoreError
from geplug.plugin import PluginManager

X = np.random.default_rng(0).standard_normal((4, 32)).astype(np.float32)


def _model() -> Any:
    """x -> fc1 (weights x1e4: overflows float16) -> bias -> relu -> fc2 -> y."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    w1 = (rng.standard_normal((32, 64)) * 10000.0).astype(np.float32)
    w2 = (rng.standard_normal((64, 8)) * 1e-6).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("Add", ["h", "b1"], ["hb"], name="bias1"),
        helper.make_node("Relu", ["hb"], ["r"], name="relu1"),
        helper.make_node("MatMul", ["r", "w2"], ["y"], name="fc2"),
    ]
    graph = helper.make_graph(
        nodes, "e2e_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(np.zeros(64, np.float32), "b1"),
         numpy_helper.from_array(w2, "w2")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture
def fresh() -> PluginManager:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PluginManager().load()


def _system(fresh: PluginManager, options: dict[str, Any],
            env: dict[str, str] | None = None) -> Any:
    return geplug.initialize_system("atlas_a2", options, manager=fresh, env=env or {})


def test_dump_step_0_3_to_5_over_8_steps(fresh: PluginManager, tmp_path: Any) -> None:
    with _system(fresh, {"enable_dump": True, "dump_path": str(tmp_path),
                         "dump_step": "0|3-5"}) as system:
        compiled = system.compile(_model())
        for step in range(8):
            compiled.run({"x": X}, step=step)
    assert {e.step for e in iter_dump_tree(tmp_path)} == {0, 3, 4, 5}


def test_fp16_overflow_writes_opdebug_the_ops_dump_and_a_summary(fresh: PluginManager,
                                                                 tmp_path: Any) -> None:
    options = {"precision_mode": "allow_fp32_to_fp16", "enable_dump_debug": True,
               "dump_path": str(tmp_path)}
    with _system(fresh, options) as system:
        compiled = system.compile(_model())
        assert compiled.decision("fc1").dtype == "float16"
        with pytest.warns(OverflowWarning, match="'fc1'"):
            compiled.run({"x": X}, step=0)
    entries = list(iter_dump_tree(tmp_path))
    opdebug = [e for e in entries if e.is_overflow]
    own = [e for e in entries if not e.is_overflow]
    assert len(opdebug) == 1 and [e.read().op_name for e in own] == ["fc1"]
    assert os.path.dirname(opdebug[0].path) == os.path.dirname(own[0].path)
    assert (opdebug[0].parsed.task_id, opdebug[0].parsed.stream_id) == (
        own[0].parsed.task_id, own[0].parsed.stream_id)
    record = opdebug[0].read().overflow_record()
    assert record is not None and record.task_id == own[0].parsed.task_id and record.status
    summary = json.loads((tmp_path / "overflow_summary.json").read_text())
    assert summary["first_overflow"]["op_name"] == "fc1"
    assert "fc1" in (tmp_path / "overflow_summary.txt").read_text()


def test_no_overflow_when_precision_is_kept(fresh: PluginManager, tmp_path: Any) -> None:
    options = {"precision_mode": "must_keep_origin_dtype", "enable_dump_debug": True,
               "dump_path": str(tmp_path)}
    with _system(fresh, options) as system:
        system.compile(_model()).run({"x": X}, step=0)
    assert list(iter_dump_tree(tmp_path)) == []


@pytest.mark.parametrize("level", [1, 2])
def test_injected_fault_writes_the_exception_dump_under_ascend_work_path(
    fresh: PluginManager, tmp_path: Any, level: int
) -> None:
    env = {"ASCEND_WORK_PATH": str(tmp_path / "work")}
    with _system(fresh, {"enable_exception_dump": level}, env) as system:
        compiled = system.compile(_model())
        compiled.inject_fault("relu1")
        with pytest.raises(AICoreError) as info:
            compiled.run({"x": X}, step=0)
    err = info.value
    assert err.node == "relu1" and len(err.dump_files) == 1 and err.dump_files[0] in str(err)
    expected_dir = tmp_path / "work" / "extra-info" / "data-dump" / "0"
    assert os.path.dirname(err.dump_files[0]) == str(expected_dir)
    dump = read_dump(err.dump_files[0])
    assert dump.op_name == "relu1" and dump.inputs and dump.outputs
    assert len(dump.spaces) == (1 if level == 1 else 2)


def test_npu_collect_path_wins_and_forces_level_1(fresh: PluginManager, tmp_path: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"NPU_COLLECT_PATH": str(tmp_path / "collect"),
           "ASCEND_WORK_PATH": str(tmp_path / "work")}
    monkeypatch.setenv("GEPLUG_SIM_FAULT_NODE", "fc2")
    with _system(fresh, {"enable_exception_dump": 2}, env) as system:
        compiled = system.compile(_model())
        with pytest.raises(AICoreError) as info:
            compiled.run({"x": X}, step=0)
    (path,) = info.value.dump_files
    assert path.startswith(str(tmp_path / "collect" / "extra-info" / "data-dump" / "0"))
    assert len(read_dump(path).spaces) == 1


def test_compare_fp16_run_with_fp32_run_points_at_the_overflow(fresh: PluginManager,
                                                               tmp_path: Any) -> None:
    for mode, sub in (("allow_fp32_to_fp16", "fp16"), ("must_keep_origin_dtype", "fp32")):
        (tmp_path / sub).mkdir()
        with _system(fresh, {"precision_mode": mode, "enable_dump": True, "dump_mode": "all",
                             "dump_path": str(tmp_path / sub)}) as system:
            system.compile(_model()).run({"x": X}, step=0)
    report = compare_trees(tmp_path / "fp16", tmp_path / "fp32")
    first = report.first_failure
    assert first is not None and first.op_name == "fc1"
    assert [op.op_name for op in report.ops] == ["fc1", "bias1", "relu1", "fc2"]
