"""The core device model on its own IR: folding, views, dead nodes, fusion, schedule, memory
(no onnx: the IR is what every backend builds)."""

from __future__ import annotations

import attrs
import pytest

from geplug.device import (
    DeviceMemoryError,
    Graph,
    Node,
    Tensor,
    build_device_model,
    optimize,
)
from geplug.products.schema import GraphCaps
from geplug.testing.plugin import require_product

CAPS = GraphCaps(fusion=("matmul_bias_act", "elementwise_chain"))


def _t(name: str, shape: tuple[int, ...], kind: str = "activation",
       dtype: str = "float32") -> Tensor:
    return Tensor(name=name, dtype=dtype, shape=shape, kind=kind)  # type: ignore[arg-type]


def _graph(constant_as_node: bool) -> Graph:
    """x @ w + b -> relu -> reshape (via Shape) -> y, plus a dead branch."""
    tensors = [_t("x", (8, 64), "input"), _t("w", (64, 64), "weight"), _t("m", (8, 64)),
               _t("b", (64,), "activation" if constant_as_node else "weight"),
               _t("a", (8, 64)), _t("r", (8, 64)), _t("s", (2,)), _t("y", (8, 64)),
               _t("dead", (8, 64))]
    nodes = [Node(name="mm", op_type="MatMulV2", inputs=("x", "w"), outputs=("m",))]
    if constant_as_node:
        nodes.append(Node(name="cst", op_type="Constant", outputs=("b",)))
    nodes += [Node(name="add", op_type="Add", inputs=("m", "b"), outputs=("a",)),
              Node(name="relu", op_type="Relu", inputs=("a",), outputs=("r",)),
              Node(name="shape", op_type="Shape", inputs=("r",), outputs=("s",)),
              Node(name="reshape", op_type="Reshape", inputs=("r", "s"), outputs=("y",)),
              Node(name="unused", op_type="Exp", inputs=("r",), outputs=("dead",))]
    return Graph(name="g", nodes=nodes, tensors={t.name: t for t in tensors},
                 inputs=("x",), outputs=("y",))


def test_constants_shapes_and_views_are_no_tasks_and_dead_nodes_are_removed() -> None:
    opt = optimize(_graph(constant_as_node=True), CAPS)
    assert opt.folded == ("cst", "shape")
    assert opt.views == ("reshape",)
    assert opt.eliminated == ("unused",)
    assert opt.device_nodes == ("mm", "add", "relu")
    assert opt.root("y") == "r"


def test_a_constant_node_and_a_weight_give_the_same_device_nodes_and_predecessors() -> None:
    a = optimize(_graph(constant_as_node=True), CAPS)
    b = optimize(_graph(constant_as_node=False), CAPS)
    assert a.device_nodes == b.device_nodes
    add = next(n for n in a.graph.nodes if n.name == "add")
    assert a.device_predecessors(add) == b.device_predecessors(add) == ("mm",)


def test_a_matmul_bias_relu_chain_is_one_task_named_as_fe_names_fused_ops() -> None:
    product = require_product("atlas_a2")
    opt = optimize(_graph(constant_as_node=False), CAPS)
    model = build_device_model(opt, attrs.evolve(product, graph=CAPS))
    (task,) = model.tasks
    assert task.name == "mmaddrelu" and task.task.op_type == "MatMulV2"
    assert task.task.members == ("mm", "add", "relu") and task.task.pattern == "matmul_bias_act"
    assert model.node_task["relu"] == "mmaddrelu"


@pytest.mark.parametrize("pname", ["atlas_a2", "atlas_infer", "atlas_train"])
def test_a_batchnorm_no_convolution_took_fuses_with_its_activation(pname: str) -> None:
    """DenseNet's pre-activation BatchNorm on a concat and its ReLU are one vector task
    (GE's BNInference + FE's elementwise UB fusion: the products' ``bn_act``); a BatchNorm
    after a convolution still joins the convolution (``conv_bn_act`` comes first)."""
    product = require_product(pname)
    assert "bn_act" in product.graph.fusion
    stats = ("sc", "bi", "mu", "va")
    tensors = [_t("x", (1, 32, 8, 8), "input"), _t("f", (1, 32, 8, 8), "input"),
               _t("c", (1, 64, 8, 8)), _t("n", (1, 64, 8, 8)), _t("r", (1, 64, 8, 8)),
               _t("w", (16, 64, 1, 1), "weight"), _t("k", (1, 16, 8, 8)),
               _t("n2", (1, 16, 8, 8)), _t("y", (1, 16, 8, 8)),
               *(_t(s, (64,), "weight") for s in stats),
               *(_t(s + "2", (16,), "weight") for s in stats)]
    nodes = [Node(name="cat", op_type="Concat", inputs=("x", "f"), outputs=("c",),
                  attrs={"axis": 1}),
             Node(name="bn", op_type="BatchNorm", inputs=("c", *stats), outputs=("n",)),
             Node(name="relu", op_type="Relu", inputs=("n",), outputs=("r",)),
             Node(name="conv", op_type="Conv2D", inputs=("r", "w"), outputs=("k",),
                  attrs={"group": 1}),
             Node(name="bn2", op_type="BatchNorm", inputs=("k", *(s + "2" for s in stats)),
                  outputs=("n2",)),
             Node(name="relu2", op_type="Relu", inputs=("n2",), outputs=("y",))]
    g = Graph(name="g", nodes=nodes, tensors={t.name: t for t in tensors},
              inputs=("x", "f"), outputs=("y",))
    model = build_device_model(optimize(g, product.graph), product, check_memory=False)
    tasks = [(p.task.members, p.task.pattern) for p in model.tasks if not p.task.inserted]
    assert tasks == [(("cat",), ""), (("bn", "relu"), "bn_act"),
                     (("conv", "bn2", "relu2"), "conv_bn_act")]
    unfused = build_device_model(optimize(g, product.graph), product, check_memory=False,
                                 fusion=False)
    fused_bn = next(p for p in model.tasks if p.name == "bnrelu")
    alone = sum(p.duration_ns for p in unfused.tasks if p.name in ("bn", "relu"))
    assert fused_bn.duration_ns < alone  # one launch and no round trip of n


def test_fusion_off_keeps_one_task_per_device_node() -> None:
    product = require_product("atlas_a2")
    opt = optimize(_graph(constant_as_node=False), CAPS)
    model = build_device_model(opt, attrs.evolve(product, graph=CAPS), fusion=False)
    assert [t.name for t in model.tasks] == ["mm", "add", "relu"]


def test_an_ai_cpu_node_is_not_fused_and_runs_on_its_own_stream_overlapping_compute() -> None:
    product = require_product("atlas_a2")
    tensors = {t.name: t for t in [_t("x", (1024, 1024), "input"), _t("a", (1024, 1024)),
                                   _t("b", (1024, 1024)), _t("y", (1024, 1024)),
                                   _t("z", (1024, 1024))]}
    nodes = [Node(name="cpu", op_type="Exp", inputs=("x",), outputs=("a",)),
             Node(name="aic", op_type="Relu", inputs=("x",), outputs=("b",)),
             Node(name="aic2", op_type="Sigmoid", inputs=("b",), outputs=("y",)),
             Node(name="join", op_type="Add", inputs=("a", "y"), outputs=("z",))]
    graph = Graph(name="g", nodes=nodes, tensors=tensors, inputs=("x",), outputs=("z",))
    opt = optimize(graph, CAPS)

    @attrs.frozen
    class D:
        engine: str
        dtype: str = "float32"
        original_dtype: str = "float32"
        output_dtype: str = "float32"
        op_class: str = "vector"

    decisions = {"cpu": D("AI_CPU"), "aic": D("AI_CORE"), "aic2": D("AI_CORE"),
                 "join": D("AI_CORE")}
    model = build_device_model(opt, attrs.evolve(product, graph=CAPS), decisions,
                               fusion=False)
    by = {t.name: t for t in model.tasks}
    cpu, aic = by[model.node_task["cpu"]], by[model.node_task["aic"]]
    assert cpu.task.members == ("cpu",) and cpu.stream_id != aic.stream_id
    # the AI CPU task and the compute task both start after the input copy: they overlap
    assert cpu.start_ns == aic.start_ns
    join = by["join"]
    assert join.start_ns >= cpu.start_ns + cpu.duration_ns
    serial = sum(t.duration_ns for t in model.tasks)
    assert model.compute_span_us * 1000 < serial


def test_the_activation_peak_reuses_freed_blocks() -> None:
    product = require_product("atlas_a2")
    n = 1 << 20  # 4 MiB float32 tensors in a chain: at most input + output live at once
    names = [f"t{i}" for i in range(6)]
    tensors = {t: _t(t, (n,), "input" if t == "t0" else "activation") for t in names}
    nodes = [Node(name=f"op{i}", op_type="Relu", inputs=(names[i],), outputs=(names[i + 1],))
             for i in range(5)]
    graph = Graph(name="g", nodes=nodes, tensors=tensors, inputs=("t0",), outputs=("t5",))
    model = build_device_model(optimize(graph, GraphCaps()), product)
    assert model.memory.activation_peak_bytes == 2 * 4 * n
    assert model.memory.weights_bytes == 0


def test_exceeding_the_socs_hbm_is_a_compile_error_naming_bytes_and_tensors() -> None:
    product = require_product("atlas_a2")
    n = 6 << 30  # 24 GiB float32 in, 24 GiB out: over 910B4's 32 GiB, under 910B2's 64
    tensors = {"x": _t("x", (n,), "input"), "y": _t("y", (n,))}
    graph = Graph(name="huge", nodes=[Node(name="relu", op_type="Relu", inputs=("x",),
                                           outputs=("y",))],
                  tensors=tensors, inputs=("x",), outputs=("y",))
    opt = optimize(graph, GraphCaps())
    with pytest.raises(DeviceMemoryError) as info:
        build_device_model(opt, product, soc_version="Ascend910B4")
    err = info.value
    assert err.available_bytes == 32 << 30 and err.required_bytes > err.available_bytes
    assert "'x'" in str(err) and "'y'" in str(err) and "207001" in str(err)
    ok = build_device_model(opt, product, soc_version="Ascend910B2")
    # a 64 GB card can allocate what torch_npu reports, not its whole HBM
    assert ok.memory.capacity_bytes == int(60.96 * (1 << 30)) and ok.memory.fits
    assert ok.memory.hbm_bytes == 64 << 30


def _bn_relu(shape: tuple[int, ...], outputs: tuple[str, ...]) -> Graph:
    """x -> BatchNorm (n) -> Relu (y), float32 of ``shape``, with ``outputs``."""
    stats = ("sc", "bi", "mu", "va")
    tensors = [_t("x", shape, "input"), _t("n", shape), _t("y", shape),
               *(_t(s, (shape[1],), "weight") for s in stats)]
    nodes = [Node(name="bn", op_type="BatchNorm", inputs=("x", *stats), outputs=("n",)),
             Node(name="relu", op_type="Relu", inputs=("n",), outputs=("y",))]
    return Graph(name="g", nodes=nodes, tensors={t.name: t for t in tensors},
                 inputs=("x",), outputs=outputs)


def test_a_fused_batchnorm_trains_as_bn_update_with_its_reduce_and_two_gradients() -> None:
    """``training_step`` of a bn_act task: BNTrainingReduce before it, and the BatchNorm's
    BNTrainingUpdateGrad (the ReLU's gradient fused: its mask read) + BNTrainingReduceGrad,
    as for a convolution's BatchNorm - not one generic normalisation gradient."""
    from geplug.device.training import training_step

    product = require_product("atlas_train")
    g = _bn_relu((8, 64, 28, 28), ("y",))
    model = build_device_model(optimize(g, product.graph), product, check_memory=False)
    (task,) = model.tasks
    assert task.task.pattern == "bn_act"
    step = training_step(model, product)
    forward = [(t.op_type, t.phase) for t in step.tasks if t.phase == "forward"]
    backward = [t.op_type for t in step.tasks if t.phase == "backward"]
    assert forward == [("BatchNorm", "forward"), ("BNTrainingReduce", "forward")]
    assert backward == ["BNTrainingUpdateGrad", "BNTrainingReduceGrad"]
    y = 8 * 64 * 28 * 28 * 4
    update, reduce_ = (t for t in step.tasks if t.phase == "backward")
    assert update.bytes_moved > 3 * y and reduce_.bytes_moved == 3 * y  # mask read too


def test_a_batchnorm_whose_output_is_also_read_elsewhere_is_not_fused() -> None:
    """``bn_act`` fuses only a closed chain: a BatchNorm output that is a graph output (or
    read by another node) stays a task of its own."""
    product = require_product("atlas_a2")
    g = _bn_relu((1, 64, 8, 8), ("y", "n"))
    model = build_device_model(optimize(g, product.graph), product, check_memory=False)
    assert [p.task.members for p in model.tasks] == [("bn",), ("relu",)]
