"""The device model's fast paths (issue 10, compile speed) equal the straightforward passes
they replaced (``reference_device``): the IR records, the optimized graph, the precision
inputs, fusion and the whole compiled model to the bit (every task's cost fields, stream,
start, duration, the makespan, the memory plan, decisions, op records, fusion names), over
real-network shapes, a long chain, fused and unfused, two products and two precision modes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import attrs
import onnx
import pytest
import reference_device as ref
from geplug_simulator import netbuild as nb
from geplug_simulator import runtime as rt
from geplug_simulator.devicegraph import device_graph
from geplug_simulator.importer import import_model
from onnx import TensorProto, helper

import geplug
from geplug.device import cost, optimize
from geplug.device import model as dm
from geplug.device.ir import dtype_bytes, numel
from geplug.device.passes import fuse

NETWORKS: dict[str, Callable[[], onnx.ModelProto]] = {
    "bert": lambda: nb.bert(layers=2, hidden=128, heads=4, seq=32, batch=2),
    "bert_torchscript": lambda: nb.bert(layers=1, hidden=64, heads=4, seq=16, batch=2,
                                        style="torchscript"),
    "gpt2": lambda: nb.gpt2(layers=1, hidden=64, heads=4, seq=16),
    "resnet18": lambda: nb.resnet18(batch=1, res=64),
    "mobilenet_v2": lambda: nb.mobilenet_v2(batch=1, res=64),
    "mobilenet_v2_torchscript": lambda: nb.mobilenet_v2(batch=1, res=64, style="torchscript"),
    "lstm": lambda: nb.lstm(seq=10, batch=2, inputs=32, hidden=32),
    "mlp": lambda: nb.mlp(),
    "chain": lambda: nb.chain(2000),
}
PRODUCTS = ("atlas_a2", "atlas_350")
MODES = ("must_keep_origin_dtype", "allow_fp32_to_fp16")


@contextmanager
def _reference_paths(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every device-model function of a compile replaced by its reference."""
    with monkeypatch.context() as m:
        m.setattr(rt, "device_graph", ref.device_graph)
        m.setattr(rt, "optimize", ref.optimize)
        m.setattr(rt, "device_infos", ref.device_infos)
        m.setattr(dm, "fuse", lambda opt, caps, *, engines=None, patterns=None, _nodes=None:
                  ref.fuse(opt, caps, engines=engines, patterns=patterns))
        m.setattr(dm, "_device_dtypes", lambda graph, opt, decisions, nodes=None:
                  ref.device_dtypes(graph, opt, decisions))
        m.setattr(dm, "node_works", lambda nodes, graph, classes: [
            cost.node_work(n, graph, k) for n, k in zip(nodes, classes, strict=True)])
        yield


def _everything(compiled: Any) -> str:
    """Every field of the compiled model's device model, decisions and op records, as
    text (``repr`` of a float is exact, so equal text is equal to the bit)."""
    device = compiled.device
    g = device.graph
    out: list[object] = [
        (g.folded, g.views, g.eliminated, g.device_nodes, sorted(g.known),
         sorted(g.alias.items()), sorted(g.producer.items())),
        [attrs.astuple(f) for f in g.fusions],
        [(attrs.astuple(p.task), attrs.astuple(p.cost), p.engine, p.dtype, p.stream_id,
          p.start_ns, p.duration_ns, repr(p.works)) for p in device.tasks],
        [attrs.astuple(t) for t in device.schedule.tasks], device.schedule.makespan_ns,
        repr(device.memory), device.issue_mode, device.unresolved,
        sorted(device.node_task.items()), device.buffer_optimize,
        [repr(d) for d in compiled.decisions], [repr(r) for r in compiled._records],
    ]
    return repr(out)


def _compile(product: str, mode: str, model: onnx.ModelProto, fusion: bool) -> str:
    cost._WORK_CACHE.clear()  # each path computes its own works
    with geplug.initialize_system(product, {"precision_mode": mode}) as system:
        return _everything(system.compile(model, fusion=fusion))


@pytest.mark.parametrize("net", sorted(NETWORKS))
@pytest.mark.parametrize("product", [
    pytest.param(p, marks=pytest.mark.requires_products(p)) for p in PRODUCTS])
def test_compiled_device_model_equals_the_reference_passes_to_the_bit(
        net: str, product: str, monkeypatch: pytest.MonkeyPatch) -> None:
    model = NETWORKS[net]()
    for mode in MODES:
        for fusion in (True, False):
            fast = _compile(product, mode, model, fusion)
            with _reference_paths(monkeypatch):
                reference = _compile(product, mode, model, fusion)
            assert fast == reference, (net, product, mode, fusion)


@pytest.mark.requires_products("atlas_a2")
@pytest.mark.parametrize("net", sorted(NETWORKS))
def test_each_fast_pass_equals_its_reference(net: str) -> None:
    imported = import_model(NETWORKS[net]())
    with geplug.initialize_system("atlas_a2", {"precision_mode": MODES[1]}) as system:
        caps = system.product.graph
        graph = device_graph(imported)
        assert graph == ref.device_graph(imported)
        opt = optimize(graph, caps)
        assert opt == ref.optimize(graph, caps)
        infos = rt.device_infos(imported, opt)
        assert infos == ref.device_infos(imported, opt)
        decisions = {d.node: d for d in geplug.precision.decide(infos, system.product,
                                                                system.config)}
        engines = {n: d.engine for n, d in decisions.items()}
        for patterns in (None, ()):
            fused = fuse(opt, caps, engines=engines, patterns=patterns)
            assert fused == ref.fuse(opt, caps, engines=engines, patterns=patterns)
            assert fused.tasks == ref.fuse(opt, caps, engines=engines,
                                           patterns=patterns).tasks
        # held dtypes: an entry equal to the graph's dtype may be left out, the bytes agree
        fused = fuse(opt, caps, engines=engines)
        held, reference = (dm._device_dtypes(graph, fused, decisions),
                           ref.device_dtypes(graph, fused, decisions))
        for name, t in graph.tensors.items():
            assert numel(t.shape) * dtype_bytes(held.get(name, t.dtype)) == numel(
                t.shape) * dtype_bytes(reference.get(name, t.dtype))
        nodes = list(graph.nodes)
        classes = [system.product.op(n.op_type).op_class for n in nodes]
        assert cost.node_works(nodes, graph, classes) == [
            cost.node_work(n, graph, k) for n, k in zip(nodes, classes, strict=True)]


def test_attributes_are_read_for_every_node_of_a_model_importing_another_domain() -> None:
    """A model importing a domain besides ONNX's may carry attributes no ONNX schema
    declares: device_graph then reads every node's (here a Relu's ``group``, ONNX's own
    Relu has none; the reference reads them all)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    relu = helper.make_node("Relu", ["x"], ["y"], name="r")
    model = helper.make_model(helper.make_graph([relu], "g", [x], [y]), opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    imported = import_model(model)
    imported.model.graph.node[0].attribute.append(helper.make_attribute("group", 3))
    graph = device_graph(imported)
    assert graph.nodes[0].attrs == {"group": 3}
    assert graph == ref.device_graph(imported)
