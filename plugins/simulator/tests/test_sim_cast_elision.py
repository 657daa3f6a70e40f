"""Run-path speed without changing a bit: redundant Cast pairs are left out of the float16
emulation, and a float32 model under must_keep_origin_dtype runs unmodified."""

from __future__ import annotations

import geplug_simulator.rewrite as rewrite_module
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from geplug_simulator import netbuild as nb
from geplug_simulator.runtime import default_threads, loadable_by_onnxruntime
from onnx import TensorProto, helper, numpy_helper

import geplug

pytestmark = pytest.mark.requires_products("atlas_a2")


def _conv_clip_conv(clip_max: float) -> onnx.ModelProto:
    """Conv -> Clip(0, clip_max) -> Conv: the Clip stays float32 under allow_fp32_to_fp16."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w1"),
        numpy_helper.from_array(rng.standard_normal((4, 4, 1, 1)).astype(np.float32), "w2"),
        numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
        numpy_helper.from_array(np.array(clip_max, np.float32), "hi"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["c1", "lo", "hi"], ["r"], name="clip"),
        helper.make_node("Conv", ["r", "w2"], ["y"], name="conv2"),
    ]
    graph = helper.make_graph(
        nodes, "conv_clip_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _rewritten(model: onnx.ModelProto, mode: str) -> onnx.ModelProto:
    with geplug.initialize_system("atlas_a2", {"precision_mode": mode}) as system:
        return system.compile(model).rewritten.model


def _conv2_input(model: onnx.ModelProto) -> str:
    return next(n for n in model.graph.node if n.name == "conv2").input[0]


def test_a_clip_of_float16_values_feeds_the_next_float16_op_without_a_cast_pair() -> None:
    rewritten = _rewritten(_conv_clip_conv(6.0), "allow_fp32_to_fp16")
    assert _conv2_input(rewritten) == "r"  # Clip of float16 values with bounds 0 and 6


def test_a_clip_bound_not_exact_in_float16_keeps_the_cast_pair() -> None:
    rewritten = _rewritten(_conv_clip_conv(6.1), "allow_fp32_to_fp16")
    fed = _conv2_input(rewritten)
    producer = next(n for n in rewritten.graph.node if fed in n.output)
    assert producer.op_type == "Cast"  # 6.1 is no float16: the Clip output is rounded


def _feeds(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    vi = model.graph.input[0]
    shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
    if vi.type.tensor_type.elem_type == TensorProto.INT64:
        return {vi.name: rng.integers(0, 100, shape).astype(np.int64)}
    return {vi.name: rng.standard_normal(shape).astype(np.float32)}


_NETS = {
    "mobilenet_v2": lambda: nb.mobilenet_v2(batch=1, res=32),
    "bert": lambda: nb.bert(layers=1, hidden=64, heads=4, seq=8, batch=1),
}


def _outputs(model: onnx.ModelProto, mode: str) -> tuple[dict[str, np.ndarray], int]:
    with geplug.initialize_system("atlas_a2", {"precision_mode": mode}) as system:
        compiled = system.compile(model)
        return dict(compiled.run(_feeds(model))), compiled.rewritten.casts_added


@pytest.mark.parametrize("mode", ["allow_fp32_to_fp16", "allow_mix_precision_bf16"])
@pytest.mark.parametrize("net", sorted(_NETS))
def test_leaving_out_redundant_cast_pairs_keeps_every_output_bit_identical(
        net: str, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    model = _NETS[net]()
    fewer, n_fewer = _outputs(model, mode)
    monkeypatch.setattr(rewrite_module, "exact_in", lambda *args, **kwargs: None)
    every, n_every = _outputs(model, mode)  # a Cast pair on every lowered op's input
    assert n_fewer < n_every
    assert fewer.keys() == every.keys()
    for name, value in every.items():
        assert fewer[name].dtype == value.dtype
        assert fewer[name].tobytes() == value.tobytes(), name


@pytest.mark.parametrize("net", sorted(_NETS))
def test_float32_runs_the_unmodified_graph_bit_identical_to_plain_onnxruntime(net: str) -> None:
    model = _NETS[net]()
    with geplug.initialize_system("atlas_a2", {"precision_mode": "must_keep_origin_dtype"}) \
            as system:
        compiled = system.compile(model)
        ops = [n.op_type for n in compiled.rewritten.model.graph.node]
        ours = compiled.run(_feeds(model))
    assert ops == [n.op_type for n in model.graph.node]  # no Cast, nothing added
    so = ort.SessionOptions()  # onnxruntime's defaults, the simulator's thread count
    so.intra_op_num_threads = default_threads()
    plain = ort.InferenceSession(loadable_by_onnxruntime(model).SerializeToString(), so,
                                 providers=["CPUExecutionProvider"])
    names = [o.name for o in model.graph.output]
    for name, value in zip(names, plain.run(names, _feeds(model)), strict=True):
        assert ours[name].tobytes() == value.tobytes(), name
