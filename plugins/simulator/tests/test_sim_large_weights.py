"""Models with large weights: the checker and shape inference see a skeleton without them,
onnxruntime takes them as arrays beside the serialized graph
(``geplug_simulator.skeleton``). What the user gets must not change: the same types, the
same outputs to the bit, the same refusal of a damaged weight."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from geplug_simulator import skeleton as sk
from geplug_simulator.importer import import_model
from onnx import TensorProto, helper, numpy_helper
from sim_helpers import any_product, f32, graph_model, make_system

from geplug.errors import CompileError

RNG = np.random.default_rng(0)


def _weights(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) * 0.05).astype(np.float32)


def _mlp() -> onnx.ModelProto:
    """x @ w1 (256 KB) -> Relu -> reshape via a small shape initializer -> @ w2, plus a
    large weight no node reads (onnxruntime drops it before taking arrays)."""
    return graph_model(
        [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
         helper.make_node("Relu", ["h"], ["r"], name="relu"),
         helper.make_node("Reshape", ["r", "shape"], ["r2"], name="rs"),
         helper.make_node("MatMul", ["r2", "w2"], ["y"], name="mm2")],
        [f32("x", [4, 256])], [f32("y", [4, 96])],
        {"w1": _weights(256, 256), "w2": _weights(256, 96),
         "shape": np.array([4, 256], np.int64), "unused": _weights(128, 256)},
        name="large_mlp")


def _convnet() -> onnx.ModelProto:
    """Two 3x3 convolutions with 128x64 (288 KB) and 64x128 weights: under float16
    emulation the simulator's NCHWc edit (a second, optimised session) runs too."""
    return graph_model(
        [helper.make_node("Conv", ["x", "w1"], ["a"], name="c1", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["a"], ["r"], name="relu"),
         helper.make_node("Conv", ["r", "w2"], ["y"], name="c2", pads=[1, 1, 1, 1])],
        [f32("x", [1, 64, 16, 16])], [f32("y", [1, 64, 16, 16])],
        {"w1": _weights(128, 64, 3, 3), "w2": _weights(64, 128, 3, 3)}, name="large_conv")


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray], mode: str,
         monkeypatch: pytest.MonkeyPatch, keep: int | None) -> tuple[np.ndarray, dict]:
    if keep is not None:
        monkeypatch.setattr(sk, "KEEP_BYTES", keep)
    system = make_system(any_product(), precision_mode=mode)
    try:
        compiled = system.compile(model)
        out = compiled.run(feeds)
        return out[next(iter(out))], dict(compiled.imported.types)
    finally:
        system.shutdown()
        monkeypatch.undo()


@pytest.mark.parametrize(("build", "shape"), [(_mlp, (4, 256)), (_convnet, (1, 64, 16, 16))])
@pytest.mark.parametrize("mode", ["must_keep_origin_dtype", "allow_fp32_to_fp16"])
def test_large_weights_give_the_same_types_and_the_same_outputs_to_the_bit(
        build, shape, mode, monkeypatch) -> None:
    model = build()
    assert any(len(i.raw_data) > sk.KEEP_BYTES for i in model.graph.initializer)
    feeds = {"x": RNG.standard_normal(shape).astype(np.float32)}
    got, types = _run(model, feeds, mode, monkeypatch, None)
    # every weight serialized with the graph: the path before skeletons
    whole, whole_types = _run(model, feeds, mode, monkeypatch, 1 << 40)
    np.testing.assert_array_equal(got, whole)
    assert types == whole_types
    if mode == "must_keep_origin_dtype":  # and what a plain onnxruntime session computes
        import onnxruntime as ort
        from geplug_simulator.runtime import loadable_by_onnxruntime

        plain = ort.InferenceSession(loadable_by_onnxruntime(model).SerializeToString(),
                                     providers=["CPUExecutionProvider"])
        np.testing.assert_array_equal(got, plain.run(None, feeds)[0])


def test_the_skeleton_lists_large_weights_as_typed_inputs_and_keeps_small_ones() -> None:
    model = _mlp()
    skel = sk.skeleton(model)
    assert {i.name for i in skel.graph.initializer} == {"shape"}  # shape values kept
    inputs = {vi.name: vi for vi in skel.graph.input}
    assert [d.dim_value for d in inputs["w1"].type.tensor_type.shape.dim] == [256, 256]
    assert len(model.graph.initializer) == 4  # the model itself is untouched
    small = graph_model([helper.make_node("Relu", ["x"], ["y"])], [f32("x", [2])],
                        [f32("y", [2])], {})
    assert sk.skeleton(small) is small
    data, names, arrays = sk.for_onnxruntime(model)
    assert sorted(names) == ["w1", "w2"]  # "unused" is read by no node: it stays
    assert sum(a.nbytes for a in arrays) == (256 * 256 + 256 * 96) * 4
    assert len(data) < 128 * 256 * 4 + 4096  # the graph, the small ones and "unused"
    np.testing.assert_array_equal(arrays[names.index("w1")],
                                  numpy_helper.to_array(model.graph.initializer[0]))


@pytest.mark.parametrize("cut", [-10, 10])
def test_a_damaged_large_weight_is_refused_naming_it(cut: int) -> None:
    model = _mlp()
    w1 = model.graph.initializer[0]
    assert w1.name == "w1"
    w1.raw_data = w1.raw_data[:cut] if cut < 0 else w1.raw_data + b"\0" * cut
    with pytest.raises(CompileError) as err:
        import_model(model)
    text = str(err.value)
    assert "w1" in text and "raw_data size" in text and "malformed" in text


def test_a_subgraph_reading_an_outer_large_weight_runs(monkeypatch) -> None:
    """An If whose branches read a large outer initializer: every weight stays in the
    protobuf (onnxruntime resolves outer names across graphs)."""
    w = _weights(256, 256)
    branch = [helper.make_graph([helper.make_node("MatMul", ["x", "w"], [f"o{k}"])], f"b{k}",
                                [], [f32(f"o{k}", [4, 256])]) for k in range(2)]
    model = graph_model(
        [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0, name="sum"),
         helper.make_node("Greater", ["s", "zero"], ["c"], name="gt"),
         helper.make_node("If", ["c"], ["y"], then_branch=branch[0], else_branch=branch[1],
                          name="if")],
        [f32("x", [4, 256])], [f32("y", [4, 256])],
        {"w": w, "zero": np.array(0.0, np.float32)}, name="large_if")
    data, names, _ = sk.for_onnxruntime(model)
    assert names == [] and len(data) > w.nbytes
    x = RNG.standard_normal((4, 256)).astype(np.float32)
    y, _ = _run(model, {"x": x}, "must_keep_origin_dtype", monkeypatch, None)
    np.testing.assert_allclose(y, x @ w, rtol=1e-5, atol=1e-5)
    assert TensorProto.FLOAT in (i.data_type for i in model.graph.initializer)


def _matmul_with(*inits: onnx.TensorProto, ir: int = 8) -> onnx.ModelProto:
    model = graph_model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                        [f32("x", [4, 256])], [f32("y", [4, 256])], {}, name="mm")
    model.graph.initializer.extend(inits)
    model.ir_version = ir
    return model


def _damaged(kind: str) -> onnx.ModelProto:
    w = numpy_helper.from_array(_weights(256, 256), "w")
    if kind == "twice":  # one name, two initializers (a large and a small one)
        return _matmul_with(w, numpy_helper.from_array(_weights(2, 2), "w"))
    if kind == "typed too":  # raw_data and float_data both holding values
        w.float_data.extend([1.0, 2.0])
        return _matmul_with(w)
    if kind == "not an input at IR 3":  # IR < 4: every initializer must be a graph input
        model = _matmul_with(w, ir=3)
        model.opset_import[0].version = 8
        return model
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["twice", "typed too", "not an input at IR 3"])
def test_what_the_checker_refuses_of_a_large_weight_stays_refused(kind: str,
                                                                   monkeypatch) -> None:
    """Malformed beyond its data size: the weight stays in the protobuf, the checker
    refuses the model as before (a CompileError, never a traceback)."""
    messages = []
    for keep in (None, 1 << 40):
        if keep is not None:
            monkeypatch.setattr(sk, "KEEP_BYTES", keep)
        with pytest.raises(CompileError) as err:
            import_model(_damaged(kind))
        messages.append(str(err.value))
        monkeypatch.undo()
    assert messages[0] == messages[1]
    assert "malformed" in messages[0]


def test_a_large_integer_table_stays_for_shape_inference() -> None:
    """A 1-D int64 table (80 KB) a shape is gathered from: shape inference propagates its
    values, so the skeleton keeps it."""
    table = np.arange(10_000, dtype=np.int64)
    model = graph_model(
        [helper.make_node("Gather", ["table", "idx"], ["shp"], name="g", axis=0),
         helper.make_node("Reshape", ["x", "shp"], ["y"], name="rs")],
        [f32("x", [4, 64])], [f32("y", [None, None])],
        {"table": table, "idx": np.array([4, 64], np.int64)}, name="table")
    assert len(model.graph.initializer[0].raw_data) > sk.KEEP_BYTES
    assert sk.skeleton(model) is model
    assert import_model(model).types["y"].shape == (4, 64)


def test_a_weight_with_a_segment_compiles_as_before(monkeypatch) -> None:
    """``segment`` (a chunk of a split tensor) is something the checker and onnxruntime
    ignore but numpy conversion refuses: such a weight stays in the protobuf."""
    values = _weights(256, 256)
    w = numpy_helper.from_array(values, "w")
    w.segment.begin, w.segment.end = 0, 256 * 256
    model = _matmul_with(w)
    assert sk.for_onnxruntime(model)[1] == []
    x = RNG.standard_normal((4, 256)).astype(np.float32)
    y, _ = _run(model, {"x": x}, "must_keep_origin_dtype", monkeypatch, None)
    np.testing.assert_allclose(y, x @ values, rtol=1e-5, atol=1e-5)
