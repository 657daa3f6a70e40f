"""Models reach onnxruntime with the IR version their opsets need, not onnx's newest stamp."""

from __future__ import annotations

import pytest

pytest.importorskip("geplug_simulator")

from geplug_simulator.runtime import SessionFactory, loadable_by_onnxruntime
from onnx import TensorProto, helper


def _model(ir_version: int) -> object:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = ir_version
    return model


def test_a_newer_ir_stamp_is_lowered_to_what_opset_17_needs() -> None:
    model = _model(99)
    lowered = loadable_by_onnxruntime(model)  # type: ignore[arg-type]
    assert lowered.ir_version == helper.find_min_ir_version_for(
        [helper.make_opsetid("", 17)], ignore_unknown=True)
    assert model.ir_version == 99  # the caller's model is not changed


def test_a_model_stamped_beyond_onnxruntime_still_gets_a_session() -> None:
    SessionFactory(1).session(_model(99), "g")  # type: ignore[arg-type]
