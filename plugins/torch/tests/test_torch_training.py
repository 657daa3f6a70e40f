"""Training a small GPT through torch.compile onto a simulated product (forward + backward)."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")

import geplug_torch  # noqa: E402
from torch_helpers import GPT, train  # noqa: E402

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")

KEEP = {"precision_mode": "must_keep_origin_dtype"}


@pytest.fixture
def a2_backend():
    be = geplug_torch.backend(product="atlas_a2", config=KEEP)
    yield be
    be.shutdown()


def test_gpt_trains_five_steps_equal_to_eager_float32(a2_backend):
    model = GPT()
    eager = copy.deepcopy(model)
    compiled = torch.compile(model, backend=a2_backend)
    got = train(compiled, 5)
    want = train(eager, 5)
    assert len(got) == 5
    for g, w in zip(got, want, strict=True):
        assert abs(g - w) <= 1e-5 * abs(w)
    assert got[-1] < got[0]  # it really trained


def test_forward_and_backward_graphs_map_to_ascend_op_types(a2_backend):
    compiled = torch.compile(GPT(layers=1), backend=a2_backend)
    train(compiled, 1)
    (model,) = a2_backend.models
    fw = {op.record.op_type for op in model.graphs["forward"].ops}
    bw = {op.record.op_type for op in model.graphs["backward"].ops}
    assert {"MatMulV2", "BatchMatMulV2", "SoftmaxV2", "LayerNorm", "Gelu", "Gather"} <= fw
    assert {"MatMulV2", "BatchMatMulV2", "SoftmaxGrad", "LayerNormGrad", "GeluGrad",
            "EmbeddingDenseGrad"} <= bw
    assert all(op.record.name.startswith("gradients/") for op in model.graphs["backward"].ops)


def test_every_op_is_decided_by_the_precision_resolution(a2_backend):
    compiled = torch.compile(GPT(layers=1), backend=a2_backend)
    train(compiled, 1)
    decisions = a2_backend.decisions()
    assert decisions and all("must_keep_origin_dtype" in d.reason for d in decisions)
    assert {d.dtype for d in decisions if d.original_dtype == "float32"} == {"float32"}


def test_an_unlisted_aten_op_gets_the_products_default_entry(a2_backend):
    compiled = torch.compile(GPT(layers=1), backend=a2_backend)
    train(compiled, 1)
    product = a2_backend.system.product
    grads = [d for d in a2_backend.decisions() if d.op_type == "LayerNormGrad"]
    assert grads and "LayerNormGrad" not in product.ops
    assert grads[0].op_class == product.default_op.op_class


def test_steps_are_counted_at_optimizer_step(a2_backend):
    compiled = torch.compile(GPT(layers=1), backend=a2_backend)
    train(compiled, 3)
    assert a2_backend.runtime.iteration == 3


def test_graph_breaks_are_counted_and_reported(a2_backend):
    def fn(x):
        y = torch.relu(x) * 2
        print("", end="")  # a graph break: print is not traceable
        return y + 1

    compiled = torch.compile(fn, backend=a2_backend)
    x = torch.randn(4, 4)
    assert torch.equal(compiled(x), torch.relu(x) * 2 + 1)
    report = a2_backend.report()
    assert report["graph_breaks"] >= 1
    assert len(report["graphs"]) == 2


def test_graph_time_is_the_core_schedules_span(a2_backend):
    compiled = torch.compile(GPT(layers=1), backend=a2_backend)
    train(compiled, 1)
    (model,) = a2_backend.models
    overhead = a2_backend.system.product.compute.task_overhead_us["graph"]
    for graph in model.graphs.values():
        assert all(op.duration_us >= overhead for op in graph.ops)
        last = max(op.start_us + op.duration_us for op in graph.ops)
        assert graph.span_us == pytest.approx(last - min(op.start_us for op in graph.ops))
    assert model.simulated_time_us == pytest.approx(sum(g.span_us for g in model.graphs.values()))


def test_a_matmul_is_timed_by_the_core_cost_of_its_own_shapes(a2_backend):
    from geplug.device import Graph, Node, Tensor, node_work, task_cost

    class Proj(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(256, 512))

        def forward(self, x):
            return (x.view(-1, 256) @ self.w).sum()

    compiled = torch.compile(Proj(), backend=a2_backend)
    compiled(torch.randn(8, 16, 256)).backward()
    (model,) = a2_backend.models
    (mm,) = [op for op in model.graphs["forward"].ops if op.record.op_type == "MatMulV2"]
    product = a2_backend.system.product
    tensors = {"a": Tensor(name="a", dtype="float32", shape=(128, 256)),
               "b": Tensor(name="b", dtype="float32", shape=(256, 512)),
               "y": Tensor(name="y", dtype="float32", shape=(128, 512))}
    node = Node(name="mm", op_type="MatMulV2", inputs=("a", "b"), outputs=("y",))
    graph = Graph(name="g", nodes=(node,), tensors=tensors)
    # y is written here and read once by the sum: it stays in L2 (on-chip reuse), so its
    # write moves at the L2 bandwidth, as docs/device-model.md "On-chip reuse" says.
    want = task_cost([node], [node_work(node, graph, "matrix")], ["float32"],
                     engine="AI_CORE", bytes_moved=4 * (128 * 256 + 256 * 512 + 128 * 512),
                     product=product, l2_bytes=4 * 128 * 512)
    assert mm.flops == want.flops == 2 * 128 * 256 * 512
    assert mm.duration_us == pytest.approx(want.duration_us, abs=1e-3)


def test_matmul_bias_activation_is_fused_by_the_products_patterns(a2_backend):
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    compiled = torch.compile(model, backend=a2_backend)
    compiled(torch.randn(4, 32)).sum().backward()
    report = a2_backend.report()
    forward = report["graphs"][0]["phases"]["forward"]
    assert "matmul_bias_act" in a2_backend.system.product.graph.fusion
    fused = [f for f in forward["fusions"] if f["pattern"] == "matmul_bias_act"]
    assert fused and forward["tasks"] < forward["ops"]
    names = {op.record.name for op in a2_backend.models[0].graphs["forward"].ops}
    assert fused[0]["name"] in names  # the task is named as FE names a fused op


def test_the_report_carries_the_core_memory_plan(a2_backend):
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    compiled = torch.compile(model, backend=a2_backend)
    compiled(torch.randn(4, 64)).sum().backward()
    memory = a2_backend.report()["graphs"][0]["phases"]["forward"]["memory"]
    params = sum(p.numel() * 4 for p in model.parameters())
    assert memory["weights_bytes"] >= params  # parameters are resident on the device
    assert memory["capacity_bytes"] > memory["total_bytes"] > 0


def test_npu_mem_reports_the_hbm_the_training_graphs_memory_plans_hold(tmp_path):
    import csv
    import glob
    import json
    import os

    options = {"output": str(tmp_path), "task_time": "l1", "sys_hardware_mem_freq": "100"}
    cfg = {**KEEP, "profiling_mode": True, "profiling_options": json.dumps(options)}
    be = geplug_torch.backend(product="atlas_a2", config=cfg)
    train(torch.compile(GPT(layers=1), backend=be), 2)
    be.shutdown()
    (path,) = glob.glob(os.path.join(str(tmp_path), "PROF_*", "mindstudio_profiler_output",
                                     "npu_mem_*.csv"))
    with open(path, newline="") as f:
        _header, *rows = list(csv.reader(f))
    (model,) = be.models
    plans = [g.device.memory.total_bytes for g in model.graphs.values()]
    assert rows and model.memory_bytes >= max(plans) > 0
    assert all(float(r[3]) == pytest.approx(model.memory_bytes / 1024) for r in rows)
