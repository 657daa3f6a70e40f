"""Collectives keep their place in the step when the device model fuses or folds nodes
(the regression behind the distributed example: a collective after a fused MatMul+Relu was
never emitted, so no communication task and no ``communication.json``)."""

from __future__ import annotations

import glob
import json
import os

import numpy as np
import pytest

pytest.importorskip("geplug_simulator")

import onnx
from geplug_simulator.collective import plan_positions, split_model
from onnx import TensorProto, helper, numpy_helper

from geplug.cli.main import main

PROFILING = 'profiling_mode = true\n[profiling_options]\noutput = "prof"\ntask_time = "on"\n'


def fused_then_allreduce(ranks: int) -> onnx.ModelProto:
    """MatMul -> Relu (one fused task on products that fuse it) -> MatMul -> AllReduce."""
    w = numpy_helper.from_array(np.eye(16, dtype=np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="fc1"),
             helper.make_node("Relu", ["h"], ["a"], name="relu"),
             helper.make_node("MatMul", ["a", "w"], ["g"], name="fc2"),
             helper.make_node("AllReduce", ["g"], ["s"], domain="com.microsoft", name="ar",
                              group_size=ranks)]
    graph = helper.make_graph(nodes, "fused", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [16, 16])], [helper.make_tensor_value_info(
            "s", TensorProto.FLOAT, [16, 16])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("com.microsoft", 1)])


def test_a_collective_after_fused_tasks_runs_after_the_last_task():
    split = split_model(fused_then_allreduce(2), 2)
    assert plan_positions(split, [("fc1", "relu"), ("fc2",)]) == {"ar": 2}


def test_a_collective_between_tasks_runs_before_its_first_consumer():
    split = split_model(onnx.load_from_string(_middle().SerializeToString()), 2)
    assert plan_positions(split, [("fc1", "relu"), ("fc2",)]) == {"ar": 1}


def _middle() -> onnx.ModelProto:
    w = numpy_helper.from_array(np.eye(16, dtype=np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="fc1"),
             helper.make_node("Relu", ["h"], ["a"], name="relu"),
             helper.make_node("AllReduce", ["a"], ["s"], domain="com.microsoft", name="ar",
                              group_size=2),
             helper.make_node("MatMul", ["s", "w"], ["g"], name="fc2")]
    graph = helper.make_graph(nodes, "mid", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [16, 16])], [helper.make_tensor_value_info(
            "g", TensorProto.FLOAT, [16, 16])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("com.microsoft", 1)])


@pytest.mark.requires_products("atlas_a2")
def test_a_fused_model_on_2_ranks_writes_each_ranks_communication_json(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    onnx.save(fused_then_allreduce(2), "m.onnx")
    (tmp_path / "cfg.toml").write_text(PROFILING)
    assert main(["run", "m.onnx", "--ranks", "2", "--product", "atlas_a2", "--config",
                 "cfg.toml", "--quiet"]) == 0
    dirs = sorted(glob.glob("prof/PROF_*"))
    assert len(dirs) == 2
    for d in dirs:
        with open(os.path.join(d, "analyze", "communication.json"), encoding="utf-8") as fh:
            comm = json.load(fh)
        info = comm["hcom_allReduce__ar@hccl_world_group"]["Communication Time Info"]
        assert info["Elapse Time(ms)"] > 0
