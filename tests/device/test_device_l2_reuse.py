"""On-chip reuse: intermediate tensors that fit in the product's L2 move at L2 bandwidth
(geplug.device.cost.l2_resident_bytes; docs/device-model.md, "On-chip reuse")."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from geplug.cli.main import main
from geplug.device import Graph, Node, Tensor, build_device_model, optimize
from geplug.device.cost import l2_resident_bytes
from geplug.device.training import training_step
from geplug.products.schema import GraphCaps, Product
from geplug.testing.plugin import require_product

_MIB = 1 << 20


def _chain(batch: int, width: int = 1 << 19) -> Graph:
    """x -> Relu -> h -> Sigmoid -> y: ``h`` is the one intermediate tensor (float16; at
    batch 1 each tensor is 1 MiB)."""
    t = {n: Tensor(name=n, dtype="float16", shape=(batch, width), kind=k)  # type: ignore[arg-type]
         for n, k in (("x", "input"), ("h", "activation"), ("y", "activation"))}
    nodes = [Node(name="relu", op_type="Relu", inputs=("x",), outputs=("h",)),
             Node(name="sig", op_type="Sigmoid", inputs=("h",), outputs=("y",))]
    return Graph(name="chain", nodes=nodes, tensors=t, inputs=("x",), outputs=("y",))


def _with_l2(product: Product, mib: float, gbps: float = 8000.0) -> Product:
    compute = attrs.evolve(product.compute, l2_cache_mib=mib, l2_bandwidth_gbps=gbps)
    return attrs.evolve(product, compute=compute)


def _model(product: Product, batch: int):  # type: ignore[no-untyped-def]
    return build_device_model(optimize(_chain(batch), GraphCaps()), product, fusion=False,
                              check_memory=False)


@pytest.mark.requires_products("atlas_a2")
def test_an_intermediate_that_fits_in_l2_moves_faster_per_byte_than_one_that_does_not() -> None:
    a2 = require_product("atlas_a2")
    small = _model(_with_l2(a2, mib=64.0), batch=1)  # the window (x, h twice, y: 4 MiB) fits
    large = _model(_with_l2(a2, mib=2.0), batch=1)  # it does not
    for plan in small.tasks:
        assert plan.cost.l2_bytes == pytest.approx(1 * _MIB)  # h's write, then its read
    assert all(plan.cost.l2_bytes == 0 for plan in large.tasks)
    per_byte_small = sum(p.cost.memory_us for p in small.tasks) / sum(
        p.cost.bytes_moved for p in small.tasks)
    per_byte_large = sum(p.cost.memory_us for p in large.tasks) / sum(
        p.cost.bytes_moved for p in large.tasks)
    assert per_byte_small < 0.8 * per_byte_large


@pytest.mark.requires_products("atlas_a2")
def test_a_product_without_an_l2_declaration_moves_every_byte_at_memory_bandwidth() -> None:
    declared = require_product("atlas_a2")
    bare = _with_l2(declared, mib=0.0, gbps=0.0)
    model = _model(bare, batch=1)
    c = bare.compute
    for plan in model.tasks:
        assert plan.cost.l2_bytes == 0.0
        assert plan.cost.memory_us == pytest.approx(plan.cost.memory_no_l2_us)
    relu = model.tasks[0].cost
    cores = c.vector_cores
    used = min(cores, -(-int(relu.bytes_moved) // c.vector_bytes_per_core))
    rate = c.memory_bandwidth_gbps * 1e9 * c.vector_bandwidth_fraction * used / cores
    assert relu.memory_us == pytest.approx(relu.bytes_moved / rate * 1e6)
    assert _model(declared, batch=1).makespan_us < model.makespan_us


def test_graph_inputs_outputs_and_weights_are_never_l2_traffic() -> None:
    sizes = {"x": 1.0, "w": 1.0, "h": 1.0, "y": 1.0}
    tasks = [(("x", "w"), ("h",)), (("h",), ("y",))]
    served = l2_resident_bytes(tasks, sizes, capacity_bytes=1e9, eligible={"h"},
                               fixed={"w"})
    assert served == [1.0, 1.0]  # h written by the first task, read by the second
    assert l2_resident_bytes(tasks, sizes, capacity_bytes=1e9, eligible=set()) == [0.0, 0.0]


def test_the_working_set_between_producer_and_last_reader_must_fit() -> None:
    sizes = {"a": 10.0, "b": 10.0, "c": 10.0, "d": 10.0}
    tasks = [((), ("a",)), (("a",), ("b",)), (("b",), ("c",)), (("a", "c"), ("d",))]
    # a lives from task 0 to task 3: a once, b and c each written and read (counted twice,
    # the conservative bound), d -> 60 bytes
    assert l2_resident_bytes(tasks, sizes, capacity_bytes=60.0, eligible={"a"}) == [
        10.0, 10.0, 0.0, 10.0]
    assert l2_resident_bytes(tasks, sizes, capacity_bytes=59.0, eligible={"a"}) == [0.0] * 4


def test_a_window_too_large_for_l2_fits_when_cut_into_batch_slices() -> None:
    sizes = {"x": 64.0, "h": 64.0, "y": 64.0, "w": 4.0}
    tasks = [(("x", "w"), ("h",)), (("h",), ("y",))]
    whole = l2_resident_bytes(tasks, sizes, capacity_bytes=100.0, eligible={"h"}, fixed={"w"})
    sliced = l2_resident_bytes(tasks, sizes, capacity_bytes=100.0, eligible={"h"},
                               fixed={"w"}, slices={"h": 4})
    assert whole == [0.0, 0.0]
    assert sliced == [64.0, 64.0]  # (x + h + y) / 4 + w = 52 bytes per slice


@pytest.mark.requires_products("atlas_a2")
def test_a_training_forward_saves_its_activations_so_gets_no_l2_reuse() -> None:
    product = require_product("atlas_a2")
    model = _model(product, batch=1)
    assert any(p.cost.l2_bytes for p in model.tasks)
    step = training_step(model, product)
    forward = [t for t in step.tasks if t.phase == "forward"]
    for task, plan in zip(forward, model.tasks, strict=True):
        assert task.duration_us == pytest.approx(
            plan.cost.overhead_us + max(plan.cost.compute_us, plan.cost.memory_no_l2_us))
        assert task.duration_us >= plan.cost.duration_us


@pytest.mark.requires_products("atlas_a2")
def test_a_card_declaring_l2_capacity_without_its_bandwidth_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "capabilities.toml"
    path.write_text('schema_version = 1\n[product]\nname = "acme_l2"\nextends = "atlas_a2"\n'
                    'display_name = "Acme L2"\nsoc_versions = ["Ascend910B9-L2"]\n'
                    'description = "L2 without bandwidth"\n[compute]\n'
                    'source = "acme datasheet"\nl2_cache_mib = 64.0\nl2_bandwidth_gbps = 0.0\n',
                    encoding="utf-8")
    assert main(["validate-card", str(path)]) == 1
    out = capsys.readouterr()
    text = out.out + out.err
    assert "compute.l2_bandwidth_gbps" in text and "l2_cache_mib = 64.0" in text


def _conv_bn_relu(batch: int) -> Graph:
    """Conv2D (64 -> 64, 3x3 over 56x56) -> BatchNorm -> Relu: one fused task (float16)."""
    shapes = {"x": (batch, 64, 56, 56), "w": (64, 64, 3, 3), "c": (batch, 64, 56, 56),
              "s": (64,), "b": (64,), "m": (64,), "v": (64,), "n": (batch, 64, 56, 56),
              "y": (batch, 64, 56, 56)}
    kinds = {"x": "input", "w": "weight", "s": "weight", "b": "weight", "m": "weight",
             "v": "weight"}
    t = {k: Tensor(name=k, dtype="float16", shape=v, kind=kinds.get(k, "activation"))  # type: ignore[arg-type]
         for k, v in shapes.items()}
    nodes = [Node(name="conv", op_type="Conv2D", inputs=("x", "w"), outputs=("c",),
                  attrs={"pads": [1, 1, 1, 1]}),
             Node(name="bn", op_type="BatchNorm", inputs=("c", "s", "b", "m", "v"),
                  outputs=("n",)),
             Node(name="relu", op_type="Relu", inputs=("n",), outputs=("y",))]
    return Graph(name="cbr", nodes=nodes, tensors=t, inputs=("x",), outputs=("y",))


@pytest.mark.requires_products("atlas_train")
def test_a_training_steps_batchnorm_gradient_intermediate_follows_the_l2_rule() -> None:
    train = require_product("atlas_train")  # 32 MB L2
    bare = _with_l2(train, mib=0.0, gbps=0.0)

    def bn_grad_us(product: Product) -> float:
        model = build_device_model(optimize(_conv_bn_relu(8), product.graph), product,
                                   check_memory=False)
        assert len(model.tasks) == 1  # conv + BN + ReLU fused
        step = training_step(model, product)
        return sum(t.duration_us for t in step.tasks
                   if t.op_type in ("BNTrainingUpdateGrad", "BNTrainingReduceGrad"))

    with_l2, without = bn_grad_us(train), bn_grad_us(bare)
    # dy' (one tensor of the conv output's size) is written and read through L2 instead
    # of memory: ~2 of the ~6 passes over it
    assert with_l2 < 0.8 * without


@pytest.mark.requires_products("atlas_a2")
def test_buffer_optimize_off_costs_every_byte_at_memory_bandwidth() -> None:
    a2 = require_product("atlas_a2")  # declares L2 (compute.l2_cache_mib)
    graph = optimize(_chain(batch=1), GraphCaps())
    default = build_device_model(graph, a2, fusion=False, check_memory=False)
    off = build_device_model(graph, a2, fusion=False, check_memory=False,
                             buffer_optimize="off_optimize")
    assert (default.buffer_optimize, off.buffer_optimize) == ("l2_optimize", "off_optimize")
    assert all(p.cost.l2_bytes > 0 for p in default.tasks)
    assert all(p.cost.l2_bytes == 0 for p in off.tasks)
    moved = sum(p.cost.bytes_moved for p in default.tasks)
    assert moved == sum(p.cost.bytes_moved for p in off.tasks)
    assert sum(p.cost.memory_us for p in off.tasks) / moved > 1.25 * sum(
        p.cost.memory_us for p in default.tasks) / moved
    for plan in off.tasks:
        assert plan.cost.memory_us == pytest.approx(plan.cost.memory_no_l2_us)


def test_an_unknown_buffer_optimize_is_a_compile_error(geplug_product: Product) -> None:
    from geplug.errors import CompileError

    with pytest.raises(CompileError, match="buffer_optimize 'l2' is not one of"):
        build_device_model(optimize(_chain(batch=1), GraphCaps()), geplug_product,
                           check_memory=False, buffer_optimize="l2")
