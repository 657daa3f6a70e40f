"""Events carry the graph facts dump writers need: Data-op inputs and dynamic shape."""

from __future__ import annotations

import pytest

pytest.importorskip("geplug_simulator")

from onnx import TensorProto, helper
from sim_helpers import graph_model, make_system

from geplug.testing.plugin import require_product


def _add_relu(batch: int | str) -> object:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4])
    nodes = [helper.make_node("Add", ["x", "x"], ["s"], name="add"),
             helper.make_node("Relu", ["s"], ["y"], name="relu")]
    return graph_model(nodes, [x], [y])


def test_op_records_name_the_graph_inputs_they_read(recorder) -> None:  # type: ignore[no-untyped-def]
    product = require_product("atlas_a2")
    manager, _ = recorder
    system = make_system(product, manager)
    compiled = system.compile(_add_relu(1), fusion=False)
    by_name = {op.name: op for op in compiled.ops}
    assert by_name["add"].data_inputs == ("x",)
    assert by_name["relu"].data_inputs == ()


def test_dynamic_shape_is_reported_for_symbolic_inputs(recorder) -> None:  # type: ignore[no-untyped-def]
    product = require_product("atlas_a2")
    manager, _rec = recorder
    system = make_system(product, manager, enable_dump=True, dump_path=".")
    static = system.compile(_add_relu(1))
    dynamic = system.compile(_add_relu("N"))
    assert not static.dynamic_shape
    assert dynamic.dynamic_shape
