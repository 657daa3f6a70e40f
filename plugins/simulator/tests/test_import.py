"""ONNX import: errors that name the culprit, opset pinning, op-type mapping."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from geplug_simulator.importer import PINNED_OPSET, import_model
from geplug_simulator.opmap import ascend_op_type
from onnx import helper
from sim_helpers import f32, graph_model

from geplug.errors import CompileError


def test_missing_model_file_is_named(tmp_path):
    with pytest.raises(CompileError, match=r"does-not-exist\.onnx"):
        import_model(str(tmp_path / "does-not-exist.onnx"))


def test_garbage_file_is_not_a_model(tmp_path):
    path = tmp_path / "junk.onnx"
    path.write_bytes(b"\x00\x01 this is not protobuf \xff" * 10)
    with pytest.raises(CompileError, match=r"junk\.onnx"):
        import_model(str(path))


def test_malformed_graph_is_reported():
    node = helper.make_node("Relu", ["x"], ["y"], name="r")
    graph = helper.make_graph([node], "g", [f32("x", [2])], [f32("zzz", [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(CompileError, match="malformed"):
        import_model(model)


def test_custom_domain_operator_names_the_node():
    node = helper.make_node("FancyOp", ["x"], ["y"], name="my_custom", domain="com.example")
    model = graph_model([node], [f32("x", [2])], [f32("y", [2])])
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(CompileError, match="my_custom") as info:
        import_model(model)
    assert info.value.node == "my_custom"


def test_older_opset_is_converted_to_the_pinned_one():
    node = helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=1)
    model = graph_model([node], [f32("x", [2, 3])], [f32("y", [2, 3])], opset=11)
    imported = import_model(model)
    assert imported.converted_from == 11
    assert imported.opset == PINNED_OPSET


def test_unnamed_nodes_get_unique_names():
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Relu", ["a"], ["y"])]
    imported = import_model(graph_model(nodes, [f32("x", [2])], [f32("y", [2])]))
    names = [n.name for n in imported.nodes]
    assert len(set(names)) == 2 and all(names)


def test_the_caller_model_is_not_modified():
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    model = graph_model(nodes, [f32("x", [2])], [f32("y", [2])])
    import_model(model)
    assert model.graph.node[0].name == ""


@pytest.mark.parametrize(("onnx_op", "ranks", "ascend"), [
    ("Gemm", (2, 2), "MatMulV2"),
    ("MatMul", (2, 2), "MatMulV2"),
    ("MatMul", (3, 3), "BatchMatMulV2"),
    ("Conv", (4, 4), "Conv2D"),
    ("Softmax", (2,), "SoftmaxV2"),
    ("MaxPool", (4,), "Pooling"),
    ("AveragePool", (4,), "Pooling"),
    ("GlobalAveragePool", (4,), "Pooling"),
    ("LRN", (4,), "LRN"),
    ("RoiAlign", (4,), "ROIAlign"),
    ("LayerNormalization", (3,), "LayerNorm"),
    ("ReduceSum", (3,), "ReduceSum"),
    ("ReduceMean", (3,), "ReduceMean"),
    ("HardSwish", (3,), "HardSwish"),
])
def test_onnx_ops_map_to_ascend_op_types(onnx_op, ranks, ascend):
    assert ascend_op_type(onnx_op, ranks) == ascend


def test_node_dtype_and_predecessors_are_inferred():
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("Relu", ["h"], ["y"], name="relu")]
    model = graph_model(nodes, [f32("x", [1, 2])], [f32("y", [1, 2])],
                        {"w": np.eye(2, dtype=np.float32)})
    imported = import_model(model)
    relu = imported.nodes[1]
    assert relu.original_dtype == "float32"
    assert relu.predecessors == ("mm",)
    assert onnx.checker.check_model(imported.model) is None


def test_an_unknown_operator_names_the_node():
    node = helper.make_node("NotAnOp", ["x"], ["y"], name="weird")
    with pytest.raises(CompileError, match=r"'weird'.*'NotAnOp'") as info:
        import_model(graph_model([node], [f32("x", [2])], [f32("y", [2])]))
    assert info.value.node == "weird"


def test_a_node_the_checker_rejects_is_named():
    node = helper.make_node("Relu", ["x", "x"], ["y"], name="too_many")
    with pytest.raises(CompileError, match="malformed at node 'too_many'") as info:
        import_model(graph_model([node], [f32("x", [2])], [f32("y", [2])]))
    assert info.value.node == "too_many"
