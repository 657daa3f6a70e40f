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


def test_simulated_times_come_from_the_products_compute_model(a2_backend):
    compiled = torch.compile(GPT(layers=1), backend=a2_backend)
    train(compiled, 1)
    (model,) = a2_backend.models
    launch = a2_backend.system.product.compute.launch_overhead_us
    ops = [op for g in model.graphs.values() for op in g.ops]
    assert all(op.duration_us >= launch for op in ops)
    assert model.simulated_time_us == pytest.approx(sum(op.duration_us for op in ops))
