"""Fused attention (FlashAttentionScore and its gradient) costed on the cube
(geplug.device.cost.ATTENTION_OPS): its GEMMs' FLOPs, the causal blocks it skips, the
score matrix kept out of memory, the vector softmax pipelined with the cube, and the
training step's gradient task."""

from __future__ import annotations

import pytest

from geplug.device import Graph, Node, Tensor, build_device_model, optimize
from geplug.device.cost import causal_fraction, node_work
from geplug.device.training import training_step
from geplug.testing.plugin import require_product

B, H, S, D = 2, 8, 1024, 64


def _attention(op_type: str = "FlashAttentionScore", causal: bool = False,
               dtype: str = "float16", s_kv: int = S) -> Graph:
    """q, k, v in BNSD -> one fused attention -> out."""
    shapes = {"q": (B, H, S, D), "k": (B, H, s_kv, D), "v": (B, H, s_kv, D),
              "dy": (B, H, S, D), "out": (B, H, S, D)}
    tensors = {n: Tensor(name=n, dtype=dtype, shape=s, kind="input" if n != "out"
                         else "activation") for n, s in shapes.items()}
    ins = ("q", "k", "v", "dy") if op_type.endswith("Grad") else ("q", "k", "v")
    node = Node(name="fa", op_type=op_type, inputs=ins, outputs=("out",),
                attrs={"causal": causal})
    return Graph(name="attn", nodes=[node], tensors=tensors, inputs=ins, outputs=("out",))


def _model(graph: Graph, product: str = "atlas_a2"):  # type: ignore[no-untyped-def]
    p = require_product(product)
    return build_device_model(optimize(graph, p.graph), p), p


@pytest.mark.requires_products("atlas_a2")
def test_forward_attention_is_two_gemms_per_head_on_the_cube() -> None:
    model, _ = _model(_attention())
    (task,) = model.tasks
    # Q K^T and P V per batch and head: 4 B H S^2 D
    assert task.cost.cube_flops == pytest.approx(4.0 * B * H * S * S * D)
    assert task.cost.task_type in ("AI_CORE", "MIX_AIC")
    # the score matrix (B H S S) never reaches memory: q, k, v in, out written
    assert task.cost.bytes_moved == pytest.approx(4 * B * H * S * D * 2)


@pytest.mark.requires_products("atlas_a2")
def test_causal_attention_computes_the_blocks_on_and_below_the_diagonal() -> None:
    full, _ = _model(_attention())
    causal, _ = _model(_attention(causal=True))
    blocks = S // 128
    share = (blocks + 1) / (2 * blocks)  # 36 of 64 blocks at S = 1024
    assert causal_fraction(S, S) == pytest.approx(share)
    assert causal.tasks[0].cost.cube_flops == pytest.approx(
        full.tasks[0].cost.cube_flops * share)
    assert causal.tasks[0].duration_ns < full.tasks[0].duration_ns


def test_causal_fraction_aligns_a_shorter_query_to_the_last_keys() -> None:
    # one query block against four key blocks: it sees every key (bottom-right aligned)
    assert causal_fraction(128, 512) == 1.0
    assert causal_fraction(256, 256) == pytest.approx(3 / 4)
    assert causal_fraction(100, 100) == 1.0  # a single block


@pytest.mark.requires_products("atlas_a2")
def test_the_gradient_recomputes_the_scores_five_gemms() -> None:
    fwd, _ = _model(_attention(causal=True))
    grad, _ = _model(_attention("FlashAttentionScoreGrad", causal=True))
    assert grad.tasks[0].cost.cube_flops == pytest.approx(
        2.5 * fwd.tasks[0].cost.cube_flops)


@pytest.mark.requires_products("atlas_a2")
def test_softmax_runs_beside_the_cube_so_time_is_the_longer_of_the_two() -> None:
    graph = _attention()
    model, product = _model(graph)
    work = node_work(graph.nodes[0], graph, "matrix")
    c = product.compute
    assert work.exp_elements == pytest.approx(B * H * S * S)
    vector_us = ((work.vector_flops + work.exp_elements * c.transcendental_flops)
                 / (c.vector_tflops["float16"] * c.vector_efficiency * 1e12) * 1e6)
    task = model.tasks[0].cost
    assert task.compute_us >= vector_us - 1e-9
    # not the sum of the two: the kernel pipelines them
    from geplug.device.cost import cube_time_us
    cube_us = sum(cube_time_us(g, c, "float16")[0] for g in work.gemms)
    assert task.compute_us == pytest.approx(max(cube_us, vector_us))


@pytest.mark.requires_products("atlas_a2")
def test_bfloat16_attention_is_faster_than_float32() -> None:
    bf16, _ = _model(_attention(dtype="bfloat16"))
    fp32, _ = _model(_attention(dtype="float32"))
    assert bf16.tasks[0].duration_ns * 2 < fp32.tasks[0].duration_ns


@pytest.mark.requires_products("atlas_a2")
def test_training_step_runs_one_attention_gradient_task() -> None:
    model, product = _model(_attention(causal=True))
    step = training_step(model, product)
    grads = [t for t in step.tasks if t.phase == "backward"]
    assert [t.op_type for t in grads] == ["FlashAttentionScoreGrad"]
    assert grads[0].flops > 2.5 * model.tasks[0].cost.cube_flops  # + the softmax's work
    assert grads[0].bytes_moved == pytest.approx(2 * model.tasks[0].cost.bytes_moved)


def test_bsh_layout_reads_the_head_count_from_the_node() -> None:
    t = {n: Tensor(name=n, dtype="float16", shape=(B, S, H * D), kind="input")
         for n in ("q", "k", "v")}
    t["out"] = Tensor(name="out", dtype="float16", shape=(B, S, H * D), kind="activation")
    node = Node(name="fa", op_type="FlashAttentionScore", inputs=("q", "k", "v"),
                outputs=("out",), attrs={"q_num_heads": H})
    g = Graph(name="bsh", nodes=[node], tensors=t, inputs=("q", "k", "v"), outputs=("out",))
    work = node_work(node, g, "matrix")
    assert work.cube_flops == pytest.approx(4.0 * B * H * S * S * D)
    assert not work.unresolved
