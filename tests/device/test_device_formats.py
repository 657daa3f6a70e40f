"""Format conversions (``geplug.device.formats``): the TransData GE inserts where a tensor
written in NC1HWC0 is read by an op that takes only ND, or the other way round, as the
product's op-info declaration says (docs/device-model.md, "Format conversions")."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import attrs
import pytest

from geplug.device import Graph, Node, Tensor, build_device_model, optimize
from geplug.device.formats import (
    FIVE_HD,
    FRACTAL_Z,
    ND,
    Layout,
    five_hd_shape,
    format_conversions,
    fractal_z_shape,
    held_shape,
)
from geplug.testing.plugin import require_product

pytestmark = pytest.mark.requires_products("atlas_infer")
F16 = "float16"
L5 = Layout(FIVE_HD)


def _t(name: str, shape: tuple[int, ...], kind: str = "activation") -> Tensor:
    return Tensor(name=name, dtype=F16, shape=shape, kind=kind)  # type: ignore[arg-type]


def _conv(name: str, x: str, w: str, y: str) -> Node:
    return Node(name=name, op_type="Conv2D", inputs=(x, w), outputs=(y,),
                attrs={"group": 1})


def _model(nodes: list[Node], tensors: list[Tensor], inputs: tuple[str, ...],
           outputs: tuple[str, ...], product: Any = None) -> Any:
    product = product or require_product("atlas_infer")
    g = Graph(name="g", nodes=nodes, tensors={t.name: t for t in tensors}, inputs=inputs,
              outputs=outputs)
    return build_device_model(optimize(g, product.graph), product, check_memory=False,
                              fusion=False)


def _shuffle_like(channels: int) -> tuple[list[Node], list[Tensor]]:
    """conv -> Transpose (ND only) -> conv, ``channels`` wide, 8 x 28 x 28."""
    shape = (8, channels, 28, 28)
    nodes = [_conv("c1", "x", "w1", "a"),
             Node(name="tr", op_type="Transpose", inputs=("a",), outputs=("b",),
                  attrs={"perm": [0, 1, 3, 2]}),
             _conv("c2", "b", "w2", "y")]
    tensors = [_t("x", (8, 16, 28, 28), "input"), _t("w1", (channels, 16, 1, 1), "weight"),
               _t("a", shape), _t("b", shape), _t("w2", (16, channels, 1, 1), "weight"),
               _t("y", (8, 16, 28, 28))]
    return nodes, tensors


def test_an_nd_only_op_between_convolutions_gets_a_transdata_on_each_side() -> None:
    nodes, tensors = _shuffle_like(58)
    m = _model(nodes, tensors, ("x",), ("y",))
    got = [(c.tensor, c.source, c.target, c.consumer) for c in m.conversions]
    assert got == [("a", FIVE_HD, ND, "tr"), ("b", ND, FIVE_HD, "c2")]
    # each moves the plain tensor and its 5HD form, 58 channels padded to 64
    plain, padded = 8 * 58 * 28 * 28 * 2, 8 * 64 * 28 * 28 * 2
    assert all(c.bytes_moved == plain + padded for c in m.conversions)
    # each is a task of its own, named as GE names the nodes it inserts, run right before
    # the task that reads the converted tensor: a memory pass plus one task overhead
    c = require_product("atlas_infer").compute
    each = c.task_overhead_us["graph"] + (plain + padded) / (
        c.memory_bandwidth_gbps * 1e9 * c.vector_bandwidth_fraction) * 1e6
    order = [(p.name, p.task.op_type) for p in m.tasks]
    assert order == [("c1", "Conv2D"), ("trans_TransData_0", "TransData"),
                     ("tr", "Transpose"), ("trans_TransData_1", "TransData"),
                     ("c2", "Conv2D")]
    trans = [p for p in m.tasks if p.task.inserted]
    assert [p.name for p in trans] == [c.name for c in m.conversions]
    for p in trans:
        assert p.task.members == () and p.cost.flops == 0
        assert p.duration_ns / 1000 == pytest.approx(each, abs=1e-3)
        assert p.cost.bytes_moved == plain + padded
    # the reader waits for its conversion on the compute stream
    by = {p.name: p for p in m.tasks}
    assert by["tr"].start_ns >= by["trans_TransData_0"].start_ns + by[
        "trans_TransData_0"].duration_ns
    assert by["trans_TransData_0"].task.inputs == ("a",)
    assert by["trans_TransData_0"].task.outputs == ("trans_TransData_0:0",)


def test_a_product_that_declares_no_formats_converts_nothing() -> None:
    product = require_product("atlas_infer")
    bare = attrs.evolve(product, graph=attrs.evolve(
        product.graph, five_hd_op_types=(), nd_op_types=(), channel_aligned_op_types=()))
    nodes, tensors = _shuffle_like(58)
    plain = _model(nodes, tensors, ("x",), ("y",), product=bare)
    converted = _model(nodes, tensors, ("x",), ("y",))
    assert plain.conversions == ()
    assert converted.compute_span_us > plain.compute_span_us


def _concat(channels: tuple[int, ...]) -> Any:
    shapes = [(8, c, 14, 14) for c in channels]
    nodes = [_conv(f"c{i}", "x", f"w{i}", f"a{i}") for i in range(len(channels))]
    nodes += [Node(name="cat", op_type="Concat", inputs=tuple(f"a{i}" for i in
                                                            range(len(channels))),
                   outputs=("cat_out",), attrs={"axis": 1}),
              _conv("head", "cat_out", "wh", "y")]
    tensors = [_t("x", (8, 16, 14, 14), "input"), _t("wh", (16, sum(channels), 1, 1), "weight"),
               _t("cat_out", (8, sum(channels), 14, 14)), _t("y", (8, 16, 14, 14))]
    tensors += [_t(f"w{i}", (c, 16, 1, 1), "weight") for i, c in enumerate(channels)]
    tensors += [_t(f"a{i}", s) for i, s in enumerate(shapes)]
    return _model(nodes, tensors, ("x",), ("y",))


@pytest.mark.parametrize(("channels", "converted"), [
    ((32, 64), 0),      # every channel count a multiple of C0: the concat stays in 5HD
    ((58, 58), 3),      # ShuffleNetV2's halves: ND concat, its output back to 5HD
    ((4, 8), 0),        # unequal, 12 channels out: the 16-bit unaligned 5HD concat
    ((24, 40), 3),      # unequal, 64 out but not aligned: ND
])
def test_a_channel_concat_keeps_5hd_only_where_cann_offers_it(channels: tuple[int, ...],
                                                            converted: int) -> None:
    assert len(_concat(channels).conversions) == converted


def test_a_flatten_of_a_5hd_tensor_reads_it_converted_to_nd() -> None:
    nodes = [_conv("c", "x", "w", "a"),
             Node(name="pool", op_type="Pooling", inputs=("a",), outputs=("p",),
                  source_op="GlobalAveragePool"),
             Node(name="flat", op_type="Flatten", inputs=("p",), outputs=("f",)),
             Node(name="fc", op_type="MatMulV2", inputs=("f", "wf"), outputs=("y",))]
    tensors = [_t("x", (4, 16, 7, 7), "input"), _t("w", (64, 16, 1, 1), "weight"),
               _t("a", (4, 64, 7, 7)), _t("p", (4, 64, 1, 1)), _t("f", (4, 64)),
               _t("wf", (64, 10), "weight"), _t("y", (4, 10))]
    m = _model(nodes, tensors, ("x",), ("y",))
    assert [(c.tensor, c.source, c.target, c.consumer) for c in m.conversions] == [
        ("p", FIVE_HD, ND, "fc")]


def test_weights_and_graph_inputs_are_not_converted_at_run_time() -> None:
    product = require_product("atlas_infer")
    nodes, tensors = _shuffle_like(64)
    g = Graph(name="g", nodes=nodes, tensors={t.name: t for t in tensors}, inputs=("x",),
              outputs=("y",))
    opt = optimize(g, product.graph)
    got = format_conversions(g, list(g.nodes), product.graph, root=opt.alias,
                             known=opt.known, dtypes={})
    assert {c.tensor for c in got} == {"a", "b"}  # not x (the input), not w1/w2


def test_shufflenet_v2_pays_for_its_unaligned_channel_shuffles() -> None:
    pytest.importorskip("onnx")
    from geplug_simulator import netbuild as nb
    from geplug_simulator.devicegraph import device_graph
    from geplug_simulator.importer import import_model

    product = require_product("atlas_infer")
    imported = import_model(nb.shufflenet_v2(batch=4))
    graph = device_graph(imported)
    m = build_device_model(optimize(graph, product.graph), product, check_memory=False)
    bare = attrs.evolve(product, graph=attrs.evolve(
        product.graph, five_hd_op_types=(), nd_op_types=(), channel_aligned_op_types=()))
    plain = build_device_model(optimize(graph, bare.graph), bare, check_memory=False)
    pairs = {(c.source, c.target) for c in m.conversions}
    assert pairs == {(FIVE_HD, ND), (ND, FIVE_HD)}
    # the 58/116/232-channel halves: every unit's concat and split run in ND, so each unit
    # converts at least its convolution branch out of 5HD and its split half back
    assert len(m.conversions) >= 2 * 16
    # the compute stream runs them one after another: the step is longer by their time
    extra = sum(p.duration_ns for p in m.tasks if p.task.inserted) / 1000
    assert extra > 0 and m.compute_span_us - plain.compute_span_us == pytest.approx(extra, rel=1e-3)
    assert len([p for p in m.tasks if p.task.inserted]) == len(m.conversions)


def test_a_graph_input_is_held_as_its_first_reader_needs_it() -> None:
    # x feeds a convolution (5HD) and then a Transpose (ND): converted once, for the second
    nodes = [_conv("c", "x", "w", "y1"),
             Node(name="tr", op_type="Transpose", inputs=("x",), outputs=("y2",),
                  attrs={"perm": [0, 1, 3, 2]})]
    tensors = [_t("x", (8, 32, 14, 14), "input"), _t("w", (32, 32, 1, 1), "weight"),
               _t("y1", (8, 32, 14, 14)), _t("y2", (8, 32, 14, 14))]
    m = _model(nodes, tensors, ("x",), ("y1", "y2"))
    assert [(c.tensor, c.source, c.target, c.readers) for c in m.conversions] == [
        ("x", FIVE_HD, ND, ("tr",))]


def test_a_broadcast_operand_does_not_decide_an_elementwise_ops_format() -> None:
    # a squeeze-excite Mul: a (32, 1, 1) gate times a 4-D 5HD map stays in 5HD
    nodes = [_conv("c", "x", "w", "a"),
             Node(name="g", op_type="Sigmoid", inputs=("s",), outputs=("gate",)),
             Node(name="mul", op_type="Mul", inputs=("gate", "a"), outputs=("b",)),
             _conv("c2", "b", "w2", "y")]
    tensors = [_t("x", (8, 16, 14, 14), "input"), _t("w", (32, 16, 1, 1), "weight"),
               _t("s", (32, 1, 1), "input"), _t("gate", (32, 1, 1)),
               _t("a", (8, 32, 14, 14)), _t("b", (8, 32, 14, 14)),
               _t("w2", (16, 32, 1, 1), "weight"), _t("y", (8, 16, 14, 14))]
    assert _model(nodes, tensors, ("x", "s"), ("y",)).conversions == ()


def test_the_16_bit_concat_rule_reads_the_dtype_the_device_holds() -> None:
    from geplug.device.formats import format_conversions

    product = require_product("atlas_infer")
    nodes = [_conv("c0", "x", "w0", "a0"), _conv("c1", "x", "w1", "a1"),
             Node(name="cat", op_type="Concat", inputs=("a0", "a1"), outputs=("o",),
                  attrs={"axis": 1}),
             _conv("h", "o", "wh", "y")]
    f32 = [Tensor(name=n, dtype="float32", shape=s, kind=k) for n, s, k in (  # type: ignore[arg-type]
        ("x", (8, 16, 14, 14), "input"), ("w0", (4, 16, 1, 1), "weight"),
        ("w1", (8, 16, 1, 1), "weight"), ("a0", (8, 4, 14, 14), "activation"),
        ("a1", (8, 8, 14, 14), "activation"), ("o", (8, 12, 14, 14), "activation"),
        ("wh", (16, 12, 1, 1), "weight"), ("y", (8, 16, 14, 14), "activation"))]
    g = Graph(name="g", nodes=nodes, tensors={t.name: t for t in f32}, inputs=("x",),
              outputs=("y",))
    opt = optimize(g, product.graph)
    args = {"root": opt.alias, "known": opt.known}
    # in float32 the unaligned concat is ND; held in float16 (force_fp16) it keeps 5HD
    assert format_conversions(g, list(g.nodes), product.graph, dtypes={}, **args)
    held = {t: "float16" for t in ("x", "a0", "a1", "o", "y")}
    assert format_conversions(g, list(g.nodes), product.graph, dtypes=held, **args) == []


def test_a_card_naming_an_op_in_two_format_lists_is_refused(tmp_path, capsys) -> None:
    from geplug.cli.main import main

    path = tmp_path / "capabilities.toml"
    path.write_text('schema_version = 1\n[product]\nname = "acme_fmt"\nextends = "atlas_infer"\n'
                    'display_name = "Acme formats"\nsoc_versions = ["Ascend310P9"]\n'
                    'description = "Transpose twice"\n[graph]\n'
                    'five_hd_op_types = ["Conv2D", "Transpose"]\nnd_op_types = ["Transpose"]\n',
                    encoding="utf-8")
    assert main(["validate-card", str(path)]) == 1
    out = capsys.readouterr()
    text = out.out + out.err
    assert "graph.nd_op_types" in text and "'Transpose'" in text
    assert "graph.five_hd_op_types" in text


def test_one_conversion_serves_every_reader_in_its_format() -> None:
    # a 5HD tensor read by two ND-only ops: one TransData, both read its output
    nodes = [_conv("c", "x", "w", "a"),
             Node(name="t1", op_type="Transpose", inputs=("a",), outputs=("y1",),
                  attrs={"perm": [0, 1, 3, 2]}),
             Node(name="t2", op_type="Transpose", inputs=("a",), outputs=("y2",),
                  attrs={"perm": [0, 2, 1, 3]})]
    tensors = [_t("x", (2, 16, 8, 8), "input"), _t("w", (32, 16, 1, 1), "weight"),
               _t("a", (2, 32, 8, 8)), _t("y1", (2, 32, 8, 8)), _t("y2", (2, 8, 32, 8))]
    m = _model(nodes, tensors, ("x",), ("y1", "y2"))
    (conv,) = m.conversions
    assert conv.readers == ("t1", "t2") and conv.consumer == "t1"
    by = {p.name: p for p in m.tasks}
    end = by[conv.name].start_ns + by[conv.name].duration_ns
    assert by["t1"].start_ns >= end and by["t2"].start_ns >= end


def test_a_converted_tensor_is_live_in_the_memory_plan() -> None:
    # the TransData's output (the 5HD form, 58 channels padded to 64) is a tensor of its
    # own: the activation peak holds it beside the tensor it was converted from
    nodes, tensors = _shuffle_like(58)
    product = require_product("atlas_infer")
    bare = attrs.evolve(product, graph=attrs.evolve(
        product.graph, five_hd_op_types=(), nd_op_types=(), channel_aligned_op_types=()))
    plain = _model(nodes, tensors, ("x",), ("y",), product=bare)
    converted = _model(nodes, tensors, ("x",), ("y",))
    assert converted.memory.activation_peak_bytes > plain.memory.activation_peak_bytes


def test_the_5hd_shape_is_what_the_real_stack_reports() -> None:
    from geplug.device.formats import five_hd_shape

    # ge_task_data of a real TransData: NCHW 1,3,224,224 -> NC1HWC0 1,1,224,224,16
    assert five_hd_shape((1, 3, 224, 224), F16) == (1, 1, 224, 224, 16)
    assert five_hd_shape((8, 58, 28, 28), F16) == (8, 4, 28, 28, 16)
    assert five_hd_shape((8, 58, 28, 28), "int8") == (8, 2, 28, 28, 32)
    assert five_hd_shape((8, 58), F16) == (8, 58)


def test_a_graph_node_named_like_a_transdata_keeps_its_name() -> None:
    nodes, tensors = _shuffle_like(58)
    nodes[1] = attrs.evolve(nodes[1], name="trans_TransData_0")
    m = _model(nodes, tensors, ("x",), ("y",))
    names = [p.name for p in m.tasks]
    assert len(set(names)) == len(names)
    assert [c.name for c in m.conversions] == ["trans_TransData_1", "trans_TransData_2"]


def test_a_graph_without_a_5hd_op_converts_nothing() -> None:
    # ND-only ops and agnostic ones, no convolution, pooling or channel concat: every
    # tensor stays ND (the pass returns before walking the graph)
    nodes = [Node(name="tr", op_type="Transpose", inputs=("x",), outputs=("a",),
                  attrs={"perm": [0, 1, 3, 2]}),
             Node(name="r", op_type="Relu", inputs=("a",), outputs=("y",))]
    tensors = [_t("x", (2, 58, 8, 8), "input"), _t("a", (2, 58, 8, 8)),
               _t("y", (2, 58, 8, 8))]
    assert _model(nodes, tensors, ("x",), ("y",)).conversions == ()


def _fused_reader() -> Any:
    """Transpose writes X in ND; X is read by a 1x1 convolution ``p`` and by the Add of a
    fused conv+BN+Add+Relu task that starts before ``p``: one conversion to 5HD, which
    must run before the fused task although its first reader in node order is ``p``."""
    product = require_product("atlas_infer")
    nodes = [Node(name="tr", op_type="Transpose", inputs=("x0",), outputs=("X",),
                  attrs={"perm": [0, 1, 3, 2]}),
             _conv("cv", "x", "w", "c"),
             Node(name="bn", op_type="BatchNorm", inputs=("c", "sc", "bi", "mu", "va"),
                  outputs=("b",)),
             Node(name="ad", op_type="Add", inputs=("b", "X"), outputs=("s",)),
             Node(name="re", op_type="Relu", inputs=("s",), outputs=("y",)),
             _conv("p", "X", "w2", "P")]
    shape = (2, 32, 8, 8)
    tensors = [_t("x0", shape, "input"), _t("x", shape, "input"), _t("X", shape),
               _t("w", (32, 32, 1, 1), "weight"), _t("c", shape), _t("b", shape),
               _t("s", shape), _t("y", shape), _t("w2", (32, 32, 1, 1), "weight"),
               _t("P", shape)]
    tensors += [_t(n, (32,), "weight") for n in ("sc", "bi", "mu", "va")]
    g = Graph(name="g", nodes=nodes, tensors={t.name: t for t in tensors},
              inputs=("x0", "x"), outputs=("y", "P"))
    return build_device_model(optimize(g, product.graph), product, check_memory=False)


def test_a_conversion_runs_before_every_task_reading_it_fused_ones_included() -> None:
    m = _fused_reader()
    (conv,) = [c for c in m.conversions if c.tensor == "X"]
    order = [p.name for p in m.tasks]
    fused = next(p for p in m.tasks if "ad" in p.task.members)
    assert fused.task.fused
    # its readers in task order: the fused task first, then p
    assert conv.readers == ("ad", "p") and conv.consumer == "ad"
    assert order.index("tr") < order.index(conv.name) < order.index(fused.name) < \
        order.index("p")
    by = {p.name: p for p in m.tasks}
    end = by[conv.name].start_ns + by[conv.name].duration_ns
    assert by[fused.name].start_ns >= end and by["p"].start_ns >= end


def test_a_tensor_read_inside_its_writers_fused_task_is_not_converted() -> None:
    # the BN output feeding the fused Add never leaves the fused kernel: no TransData
    assert {c.tensor for c in _fused_reader().conversions} == {"X"}


def test_a_reader_on_another_stream_waits_for_its_conversion() -> None:
    # an AI CPU Transpose (its own stream) reads the 5HD convolution output converted
    nodes, tensors = _shuffle_like(58)
    product = require_product("atlas_infer")
    g = Graph(name="g", nodes=nodes, tensors={t.name: t for t in tensors}, inputs=("x",),
              outputs=("y",))
    aicpu = SimpleNamespace(engine="AI_CPU", dtype=F16, original_dtype=F16,
                            output_dtype=F16, op_class="vector")
    m = build_device_model(optimize(g, product.graph), product, {"tr": aicpu},
                           check_memory=False, fusion=False)
    by = {p.name: p for p in m.tasks}
    first = m.conversions[0]
    assert first.readers == ("tr",)
    assert by["tr"].stream_id != by[first.name].stream_id
    assert by["tr"].start_ns >= by[first.name].start_ns + by[first.name].duration_ns


def test_the_converted_tensor_lives_from_its_transdata_to_its_last_reader() -> None:
    nodes, tensors = _shuffle_like(58)
    m = _model(nodes, tensors, ("x",), ("y",))
    tasks = m.memory.tasks
    blocks = {b.tensor: b for b in m.memory.blocks}
    for conv in m.conversions:
        block = blocks[conv.output]
        assert tasks[block.first] == conv.name
        assert tasks[block.last] == conv.readers[-1]
        assert block.nbytes >= conv.bytes_in(conv.target)


def test_the_channel_axis_of_an_onnx_concat_reaches_the_format_rules() -> None:
    pytest.importorskip("onnx")
    from geplug_simulator import netbuild as nb
    from geplug_simulator.devicegraph import device_graph
    from geplug_simulator.importer import import_model

    graph = device_graph(import_model(nb.shufflenet_v2(batch=1, res=64)))
    concats = [n for n in graph.nodes if n.op_type.startswith("Concat")]
    assert concats and all(n.attrs.get("axis") == 1 for n in concats)


def test_layout_shapes_are_the_ones_the_real_stack_reports() -> None:
    # NC1HWC0: channels in C0 blocks of 16 (32 for a 1-byte type), padded
    assert five_hd_shape((1, 3, 224, 224), F16) == (1, 1, 224, 224, 16)
    assert five_hd_shape((2, 58, 8, 8), "int8") == (2, 2, 8, 8, 32)
    # FRACTAL_Z: (C1 * H * W, ceil(N / 16), 16, C0) - a 64x64 3x3 filter is 36,4,16,16
    assert fractal_z_shape((64, 64, 3, 3), F16) == (36, 4, 16, 16)
    assert fractal_z_shape((64, 3, 7, 7), F16) == (49, 4, 16, 16)
    assert fractal_z_shape((64, 64, 3, 3), "int8") == (18, 4, 16, 32)
    assert held_shape(ND, (2, 58, 8, 8), F16) == (2, 58, 8, 8)
    assert held_shape(FRACTAL_Z, (8,), F16) == (8,)  # another rank unchanged


def test_tasks_computing_in_5hd_name_each_tensor_they_hold_in_a_device_format() -> None:
    """The device model records, per task, its 4-D tensors held in NC1HWC0 and the filters
    held in FRACTAL_Z (what profiles report); an ND task and a plain-only product have
    none."""
    nodes, tensors = _shuffle_like(58)
    m = _model(nodes, tensors, ("x",), ("y",))
    assert m.formats["c1"] == {"x": L5, "w1": Layout(FRACTAL_Z, 1), "a": L5}
    assert m.formats["c2"] == {"b": L5, "w2": Layout(FRACTAL_Z, 1), "y": L5}
    assert "tr" not in m.formats  # the Transpose runs in ND
    # a format-agnostic op after a convolution computes in 5HD, and its 4-D constant too
    nodes = [_conv("c", "x", "w", "a"),
             Node(name="mul", op_type="Mul", inputs=("a", "s"), outputs=("y",))]
    tensors = [_t("x", (2, 16, 8, 8), "input"), _t("w", (32, 16, 3, 3), "weight"),
               _t("a", (2, 32, 8, 8)), _t("s", (1, 32, 1, 1), "weight"),
               _t("y", (2, 32, 8, 8))]
    m = _model(nodes, tensors, ("x",), ("y",))
    assert m.formats["mul"] == {"a": L5, "s": L5, "y": L5}
    bare = attrs.evolve(require_product("atlas_infer"), graph=attrs.evolve(
        require_product("atlas_infer").graph, five_hd_op_types=(), nd_op_types=(),
        channel_aligned_op_types=()))
    assert _model(nodes, tensors, ("x",), ("y",), bare).formats == {}


@pytest.mark.parametrize(("op_type", "converted"), [("ReduceMax", True), ("Relu", False)])
def test_an_ai_cpu_op_reads_plain_formats_unless_its_kernel_is_format_agnostic(
        op_type: str, converted: bool) -> None:
    """A convolution's 5HD output read by an op placed on AI CPU: GE's AI CPU kernels take
    plain formats (a TransData to ND before it, and back to 5HD for the next convolution),
    except the ones the AI CPU op-info marks format-agnostic (Relu), which follow their
    input like any agnostic op."""
    product = require_product("atlas_infer")
    assert ("Relu" in product.graph.aicpu_format_agnostic_op_types) and (
        "ReduceMax" not in product.graph.aicpu_format_agnostic_op_types)
    nodes = [_conv("c1", "x", "w1", "a"),
             Node(name="cpu", op_type=op_type, inputs=("a",), outputs=("b",)),
             _conv("c2", "b", "w2", "y")]
    tensors = [_t("x", (2, 16, 8, 8), "input"), _t("w1", (32, 16, 1, 1), "weight"),
               _t("a", (2, 32, 8, 8)), _t("b", (2, 32, 8, 8)),
               _t("w2", (16, 32, 1, 1), "weight"), _t("y", (2, 16, 8, 8))]
    g = Graph(name="g", nodes=nodes, tensors={t.name: t for t in tensors}, inputs=("x",),
              outputs=("y",))
    on_cpu = {"cpu": SimpleNamespace(engine="AI_CPU")}
    m = build_device_model(optimize(g, product.graph), product, on_cpu, check_memory=False,
                           fusion=False)
    got = [(c.tensor, c.source, c.target, c.consumer) for c in m.conversions]
    if converted:
        assert got == [("a", FIVE_HD, ND, "cpu"), ("b", ND, FIVE_HD, "c2")]
        assert "cpu" not in m.formats  # its row reports plain formats
    else:
        assert got == []
        assert m.formats["cpu"] == {"a": L5, "b": L5}
    # on AI Core the same reduction is format-agnostic: no conversion
    on_core = build_device_model(optimize(g, product.graph), product, check_memory=False,
                                 fusion=False)
    assert on_core.conversions == ()


def test_a_grouped_filter_merges_groups_as_ge_lays_it_out() -> None:
    # GE's GetFractalZShape: enlarge = min(lcm(C0/gcd(C, C0), 16/gcd(N/g, 16)), g)
    assert fractal_z_shape((32, 1, 3, 3), F16, 32) == (18, 1, 16, 16)  # depthwise, 32 ch
    assert fractal_z_shape((64, 8, 1, 1), F16, 4) == (2, 2, 16, 16)
    assert fractal_z_shape((128, 4, 3, 3), F16, 32) == (72, 1, 16, 16)  # ResNeXt 32x4d
    # one group: the plain layout
    assert fractal_z_shape((64, 64, 3, 3), F16, 1) == fractal_z_shape((64, 64, 3, 3), F16)
    nodes = [Node(name="dw", op_type="Conv2D", inputs=("x", "w"), outputs=("y",),
                  attrs={"group": 32})]
    tensors = [_t("x", (2, 32, 8, 8), "input"), _t("w", (32, 1, 3, 3), "weight"),
               _t("y", (2, 32, 8, 8))]
    m = _model(nodes, tensors, ("x",), ("y",))
    assert m.formats["dw"]["w"] == Layout(FRACTAL_Z, 32)
    assert m.formats["dw"]["w"].shape((32, 1, 3, 3), F16) == (18, 1, 16, 16)


def test_a_filter_computed_at_run_time_is_converted_to_fractal_z() -> None:
    """A convolution whose weight a node computes (weight normalisation): the TransData
    writes the filter's FRACTAL_Z layout, the layout the convolution's row reports."""
    nodes = [Node(name="scale", op_type="Mul", inputs=("wi", "g"), outputs=("w",)),
             _conv("c", "x", "w", "y")]
    tensors = [_t("x", (2, 16, 8, 8), "input"), _t("wi", (32, 16, 3, 3), "input"),
               _t("g", (32, 1, 1, 1), "weight"), _t("w", (32, 16, 3, 3)),
               _t("y", (2, 32, 8, 8))]
    m = _model(nodes, tensors, ("x", "wi"), ("y",))
    (conv,) = m.conversions
    assert (conv.tensor, conv.source, conv.target) == ("w", ND, FRACTAL_Z)
    assert conv.shape_in(FRACTAL_Z) == (9, 2, 16, 16)
    assert conv.bytes_moved == (32 * 16 * 9 + 9 * 2 * 16 * 16) * 2
    assert m.formats["c"]["w"].shape((32, 16, 3, 3), F16) == conv.shape_in(FRACTAL_Z)


def test_a_reshaping_view_of_a_5hd_tensor_is_converted_in_the_views_shape() -> None:
    """conv -> Reshape (the channel count changes) -> conv: the 5HD tensor is converted to
    ND, viewed, and the *view* converted back to 5HD in its own shape; the second
    TransData reads the first one's output."""
    nodes = [_conv("c1", "x", "w1", "a"),
             Node(name="rs", op_type="Reshape", inputs=("a", "shape"), outputs=("ar",)),
             _conv("c2", "ar", "w2", "y")]
    tensors = [_t("x", (2, 16, 6, 6), "input"), _t("w1", (32, 16, 1, 1), "weight"),
               _t("a", (2, 32, 6, 6)), _t("shape", (4,), "constant"),
               _t("ar", (2, 16, 12, 6)), _t("w2", (16, 16, 1, 1), "weight"),
               _t("y", (2, 16, 12, 6))]
    m = _model(nodes, tensors, ("x",), ("y",))
    first, second = m.conversions
    assert (first.tensor, first.source, first.target) == ("a", FIVE_HD, ND)
    assert (second.tensor, second.source, second.target) == ("ar", ND, FIVE_HD)
    assert second.shape_in(FIVE_HD) == (2, 1, 12, 6, 16)  # the view's shape, not a's
    assert m.formats["c2"]["ar"].shape((2, 16, 12, 6), F16) == second.shape_in(FIVE_HD)
    by = {p.name: p for p in m.tasks}
    # the second conversion waits for the first and reads its output (memory liveness)
    assert by[second.name].start_ns >= by[first.name].start_ns + by[first.name].duration_ns
    blocks = {b.tensor: b for b in m.memory.blocks}
    tasks = m.memory.tasks
    assert tasks[blocks[first.output].last] == second.name
    assert tasks[blocks[second.output].last] == "c2"


def test_a_card_with_a_malformed_aicpu_format_list_is_refused_naming_the_key(
        tmp_path, capsys) -> None:
    from geplug.cli.main import main

    path = tmp_path / "capabilities.toml"
    path.write_text('schema_version = 1\n[product]\nname = "acme_cpu"\nextends = "atlas_infer"\n'
                    'display_name = "Acme AI CPU"\nsoc_versions = ["Ascend310P9"]\n'
                    'description = "a number where op types belong"\n[graph]\n'
                    'aicpu_format_agnostic_op_types = 5\n', encoding="utf-8")
    assert main(["validate-card", str(path)]) == 1
    out = capsys.readouterr()
    text = out.out + out.err
    assert "graph.aicpu_format_agnostic_op_types" in text and "5" in text
    assert "Traceback" not in text
