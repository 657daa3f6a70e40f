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
    # one kernel on the cube cores and the vector cores of a SoC that splits them
    assert task.cost.task_type == "MIX_AIC"
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


def test_causal_fraction_aligns_the_diagonal_as_the_mask_does() -> None:
    # torch's is_causal (and ONNX's without a cache): query i sees keys 0..i, so one
    # query block against four key blocks computes only the first
    assert causal_fraction(128, 512) == pytest.approx(1 / 4)
    # after a key cache (ONNX's past_key) the diagonal ends at the last key: every key
    assert causal_fraction(128, 512, bottom_right=True) == 1.0
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


@pytest.mark.requires_products("atlas_a2", "atlas_train")
@pytest.mark.parametrize("causal", [False, True])
def test_without_the_fused_kernel_attention_costs_its_decomposition(causal: bool) -> None:
    """atlas_train's SoC (the 910) has no FlashAttentionScore: every score is computed
    (no causal block skipping), the score matrix goes through memory between the kernels
    (4 passes, 6 with the mask), the softmax does not overlap the cube."""
    fused, _ = _model(_attention(causal=causal))
    plain, p = _model(_attention(causal=causal), "atlas_train")
    assert not p.compute.fused_attention
    assert plain.tasks[0].cost.cube_flops == pytest.approx(4.0 * B * H * S * S * D)
    scores = B * H * S * S
    io = 4 * B * H * S * D * 2
    assert plain.tasks[0].cost.bytes_moved == pytest.approx(
        io + (6 if causal else 4) * scores * 2)
    assert fused.tasks[0].cost.bytes_moved == pytest.approx(io)
    assert plain.tasks[0].cost.task_type == "AI_CORE"


@pytest.mark.requires_products("atlas_train")
def test_without_the_fused_kernel_the_gradient_is_the_decompositions_four_gemms() -> None:
    plain, _ = _model(_attention("FlashAttentionScoreGrad"), "atlas_train")
    assert plain.tasks[0].cost.cube_flops == pytest.approx(2 * 4.0 * B * H * S * S * D)


@pytest.mark.requires_products("atlas_a2", "atlas_train")
def test_without_the_fused_kernel_the_score_matrices_count_in_the_memory_plan() -> None:
    """The decomposition holds S and P (B x H x S x S each) in memory during the task: a
    long sequence that fits on the A2 with the fused kernel may not fit on the 910."""
    fused, _ = _model(_attention())
    plain, _ = _model(_attention(), "atlas_train")
    scores = B * H * S * S * 2  # float16
    assert plain.memory.activation_peak_bytes - fused.memory.activation_peak_bytes == \
        pytest.approx(2 * scores, rel=0.01)
    assert plain.memory.peak_tensors[0] == ("fa/scratch", 2 * scores)
