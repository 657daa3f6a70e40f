"""float16 emulation around Convs stays in onnxruntime's blocked (NCHWc) layout without
changing a bit (geplug_simulator/blocked.py)."""

from __future__ import annotations

import functools
import tempfile
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from geplug_simulator import netbuild as nb
from geplug_simulator.blocked import NCHWC, keep_blocked, value_shapes
from geplug_simulator.runtime import loadable_by_onnxruntime, session_options
from onnx import TensorProto, helper, numpy_helper

import geplug

pytestmark = pytest.mark.requires_products("atlas_a2")


def _optimized(model: onnx.ModelProto) -> onnx.ModelProto:
    """onnxruntime's own optimisation of ``model`` at the simulator's level."""
    so = session_options(1)
    with tempfile.TemporaryDirectory() as tmp:
        so.optimized_model_filepath = str(Path(tmp) / "opt.onnx")
        ort.InferenceSession(loadable_by_onnxruntime(model).SerializeToString(), so,
                             providers=["CPUExecutionProvider"])
        optimized = onnx.load(so.optimized_model_filepath)
    if not any(n.domain == NCHWC for n in optimized.graph.node):
        pytest.skip("onnxruntime uses no NCHWc layout on this CPU")
    return optimized


def _reorder_inputs(model: onnx.ModelProto) -> int:
    return sum(n.op_type == "ReorderInput" for n in model.graph.node)


@functools.cache
def _block() -> int:
    """This CPU's NCHWc block size (8 with AVX2, 16 with AVX-512): the rows onnxruntime pads
    a one-channel Conv's reordered weight to."""
    weight = numpy_helper.from_array(np.ones((1, 32, 3, 3), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "one_channel",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 8, 8])], [weight])
    optimized = _optimized(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    (rows,) = {int(i.dims[0]) for i in optimized.graph.initializer if len(i.dims) == 4}
    return rows


def _padded_reorders(optimized: onnx.ModelProto, rewritten: onnx.ModelProto) -> int:
    """The ReorderInputs of ``optimized`` that read a tensor whose channels are no multiple
    of the block: keep_blocked must leave exactly those."""
    shapes = value_shapes(rewritten)
    return sum(1 for n in optimized.graph.node if n.op_type == "ReorderInput"
               and (shapes.get(n.input[0]) or (0, 0))[1] % _block() != 0)


def _compiled_and_reference(model: onnx.ModelProto, mode: str, feeds: list[dict]
                            ) -> tuple[list[dict], list[list[np.ndarray]], onnx.ModelProto]:
    """The simulator's outputs for each of ``feeds`` and those of a plain session of the same
    rewritten graph (no edit), plus that graph."""
    with geplug.initialize_system("atlas_a2", {"precision_mode": mode}) as system:
        compiled = system.compile(model)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the overflow feeds warn, as they should
            ours = [dict(compiled.run(f)) for f in feeds]
        rewritten = compiled.rewritten.model
    reference = ort.InferenceSession(loadable_by_onnxruntime(rewritten).SerializeToString(),
                                     session_options(1), providers=["CPUExecutionProvider"])
    return ours, [reference.run(list(o), f) for o, f in zip(ours, feeds, strict=True)], rewritten


@pytest.mark.parametrize("mode", ["allow_fp32_to_fp16", "allow_mix_precision_bf16"])
def test_mobilenet_casts_stay_blocked_and_outputs_are_bit_identical_overflow_included(
        mode: str) -> None:
    model = nb.mobilenet_v2(batch=1, res=32)
    x = np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)
    feeds = [{"x": x}, {"x": x * 1e5}]  # the second overflows float16
    ours, reference, rewritten = _compiled_and_reference(model, mode, feeds)
    optimized = _optimized(rewritten)
    edited = keep_blocked(optimized, value_shapes(rewritten))
    assert edited is not None and _reorder_inputs(optimized) > 40
    # every Conv reads its producer's blocked tensor, but where its channels are padded:
    # none with 8-channel blocks; the two 24-channel tensors with 16-channel blocks
    assert _reorder_inputs(edited) == _padded_reorders(optimized, rewritten)
    assert _padded_reorders(optimized, rewritten) == (0 if _block() <= 8 else 2)
    if mode == "allow_fp32_to_fp16":
        assert not np.isfinite(reference[1][0]).all()
    for got, want in zip(ours, reference, strict=True):
        for (name, value), expected in zip(got.items(), want, strict=True):
            assert value.tobytes() == expected.tobytes(), name


def _conv_chain(channels: int) -> onnx.ModelProto:
    """Conv (8 -> 8 channels) -> Conv (8 -> ``channels``) -> Conv (-> 8), positive weights:
    an input that overflows float16 in the first Conv gives +inf, never inf - inf = NaN."""
    rng = np.random.default_rng(0)
    shapes = {"w1": (8, 8, 3, 3), "w2": (channels, 8, 3, 3), "w3": (8, channels, 3, 3)}
    inits = [numpy_helper.from_array(np.abs(rng.standard_normal(shape)).astype(np.float32), k)
             for k, shape in shapes.items()]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["c1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["c2", "w3"], ["y"], name="conv3", pads=[1, 1, 1, 1])]
    graph = helper.make_graph(
        nodes, "conv_chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("channels", [12, 16])
def test_only_a_tensor_without_padded_channels_stays_blocked_bits_unchanged(
        channels: int) -> None:
    """12 channels are no multiple of any NCHWc block (8 or 16). After conv1 overflows, conv2's
    padded output channels hold inf * 0 = NaN, which conv3 would read (NaN * 0 = NaN) were
    that tensor kept blocked; ReorderInput resets them to 0, so its reorders stay. conv1's 8
    channels are unpadded with 8-channel blocks (AVX2), padded with 16-channel ones."""
    model = _conv_chain(channels)
    x = np.abs(np.random.default_rng(2).standard_normal((1, 8, 8, 8))).astype(np.float32)
    feeds = [{"x": x}, {"x": x * 1e4}]
    ours, reference, rewritten = _compiled_and_reference(model, "allow_fp32_to_fp16", feeds)
    optimized = _optimized(rewritten)
    edited = keep_blocked(optimized, value_shapes(rewritten))
    unpadded = sum(c % _block() == 0 for c in (8, channels))  # conv1's and conv2's outputs
    if unpadded:
        assert edited is not None
        assert _reorder_inputs(edited) == _reorder_inputs(optimized) - unpadded
    else:
        assert edited is None  # nothing may stay blocked
    assert np.isposinf(reference[1][0]).all()
    for got, want in zip(ours, reference, strict=True):
        assert got["y"].tobytes() == want[0].tobytes()


def _broadcast_add() -> onnx.ModelProto:
    """Conv(x) + Conv(GlobalAveragePool(x)): a [1, 16, 8, 8] + [1, 16, 1, 1] broadcast of two
    blocked Conv outputs, then a Conv."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
             for name, shape in (("wa", (16, 16, 3, 3)), ("wb", (16, 16, 1, 1)),
                                 ("wc", (16, 16, 3, 3)))]
    nodes = [helper.make_node("Conv", ["x", "wa"], ["a"], name="conv_a", pads=[1, 1, 1, 1]),
             helper.make_node("GlobalAveragePool", ["x"], ["g"], name="pool"),
             helper.make_node("Conv", ["g", "wb"], ["b"], name="conv_b"),
             helper.make_node("Add", ["a", "b"], ["s"], name="add"),
             helper.make_node("Conv", ["s", "wc"], ["y"], name="conv_c", pads=[1, 1, 1, 1])]
    graph = helper.make_graph(
        nodes, "broadcast_add",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 8, 8])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_broadcasting_add_goes_back_to_nchw_and_keeps_its_bits() -> None:
    model = _broadcast_add()
    x = np.random.default_rng(3).standard_normal((1, 16, 8, 8)).astype(np.float32)
    ours, reference, rewritten = _compiled_and_reference(model, "allow_fp32_to_fp16",
                                                         [{"x": x}])
    optimized = _optimized(rewritten)
    adds = [n for n in optimized.graph.node if n.op_type == "Add"]
    assert len(adds) == 1 and all(
        i in {o for n in optimized.graph.node if n.op_type == "Cast" for o in n.output}
        for i in adds[0].input)  # both Add inputs are rounded Conv outputs
    edited = keep_blocked(optimized, value_shapes(rewritten))
    assert edited is None or not any(n.name == "add::nchwc" for n in edited.graph.node)
    assert ours[0]["y"].tobytes() == reference[0][0].tobytes()


def test_a_graph_with_a_subgraph_is_left_as_onnxruntime_optimised_it() -> None:
    """A subgraph may read any outer value, so no NCHW copy is provably unread."""
    _, _, rewritten = _compiled_and_reference(_conv_chain(16), "allow_fp32_to_fp16", [])
    optimized = _optimized(rewritten)
    assert keep_blocked(optimized, value_shapes(rewritten)) is not None
    out = helper.make_tensor_value_info("z", TensorProto.FLOAT, None)
    branch = helper.make_graph([helper.make_node("Identity", ["y"], ["z"])], "branch", [], [out])
    optimized.graph.node.append(helper.make_node(
        "If", ["cond"], ["w"], name="if", then_branch=branch, else_branch=branch))
    assert keep_blocked(optimized, value_shapes(rewritten)) is None

