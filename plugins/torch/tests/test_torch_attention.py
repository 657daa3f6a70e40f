"""scaled_dot_product_attention through torch.compile: FlashAttentionScore and its gradient
carry attention's matrix work on the cube (issue 10: it was costed as a vector op with no
cube FLOPs), the causal mask skipping the blocks above the diagonal."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import geplug_torch  # noqa: E402

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")

B, H, S, D = 2, 4, 512, 32


class _Attn(torch.nn.Module):
    def __init__(self, causal: bool) -> None:
        super().__init__()
        self.qkv = torch.nn.Linear(H * D, 3 * H * D)
        self.causal = causal

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = (t.view(B, S, H, D).transpose(1, 2)
                   for t in self.qkv(x).chunk(3, dim=-1))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return y.sum()


def _trained(causal: bool):  # type: ignore[no-untyped-def]
    be = geplug_torch.backend(product="atlas_a2",
                              config={"precision_mode": "must_keep_origin_dtype"})
    compiled = torch.compile(_Attn(causal), backend=be)
    compiled(torch.randn(B, S, H * D)).backward()
    (model,) = be.models
    be.shutdown()
    return model


def _task(model, phase: str, op_type: str):  # type: ignore[no-untyped-def]
    (task,) = [p for p in model.graphs[phase].device.tasks if p.task.op_type == op_type]
    return task


@pytest.mark.parametrize("causal", [False, True])
def test_attention_and_its_gradient_are_cube_work(causal: bool) -> None:
    model = _trained(causal)
    fwd = _task(model, "forward", "FlashAttentionScore")
    grad = _task(model, "backward", "FlashAttentionScoreGrad")
    blocks = S // 128
    share = (blocks + 1) / (2 * blocks) if causal else 1.0
    # Q K^T and P V: 4 B H S^2 D, an independent count; the gradient's five GEMMs 2.5x
    assert fwd.cost.cube_flops == pytest.approx(4.0 * B * H * S * S * D * share)
    assert grad.cost.cube_flops == pytest.approx(2.5 * fwd.cost.cube_flops)
    # the gradient reads query, key, value and dy as CANN's kernel does
    node = {n.name: n for n in model.graphs["backward"].device.graph.graph.nodes}[
        grad.task.members[0]]
    shapes = [model.graphs["backward"].device.graph.graph.tensor(t).shape
              for t in node.inputs[:4]]
    assert shapes == [(B, H, S, D)] * 4


def test_lowered_attention_keeps_its_softmax_statistics_in_float32(tmp_path) -> None:
    """Under allow_fp32_to_fp16 the attention runs in float16, but its logsumexp (CANN's
    softmax_max/softmax_sum, float32 for every data dtype) is written and read by the
    gradient in float32: in the dump and in the gradients' accuracy."""
    import glob
    import os

    from geplug.dump.reader import read_dump

    torch.manual_seed(0)
    net, ref = _Attn(True), _Attn(True)
    ref.load_state_dict(net.state_dict())
    be = geplug_torch.backend(product="atlas_a2", config={
        "precision_mode": "allow_fp32_to_fp16", "enable_dump": True,
        "dump_path": str(tmp_path), "dump_step": "0", "dump_mode": "all"})
    x = torch.randn(B, S, H * D)
    torch.compile(net, backend=be)(x).backward()
    be.shutdown()
    ref(x).backward()
    (fwd,) = glob.glob(os.path.join(str(tmp_path), "**", "FlashAttentionScore.*"),
                       recursive=True)
    dump = read_dump(fwd)
    assert [t.dtype for t in dump.outputs] == ["float16", "float32"]
    (grad,) = glob.glob(os.path.join(str(tmp_path), "**", "FlashAttentionScoreGrad.*"),
                        recursive=True)
    assert read_dump(grad).inputs[5].dtype == "float32"
    # the gradient as float16 attention with float32 statistics gives it (~1e-3; rounding
    # the logsumexp to float16 made it ~2.5x worse)
    got, want = net.qkv.weight.grad, ref.qkv.weight.grad
    assert float((got - want).norm() / want.norm()) < 2e-3


def _as_eager_on_the_910(net: torch.nn.Module, weight):  # type: ignore[no-untyped-def]
    """Train ``net`` one step through torch.compile on atlas_train (no fused attention
    kernels) and eagerly (a copy): loss and the gradient of ``weight(net)`` agree to 1e-5.
    Returns the compiled model."""
    import copy

    ref = copy.deepcopy(net)
    be = geplug_torch.backend(product="atlas_train",
                              config={"precision_mode": "must_keep_origin_dtype"})
    x = torch.randn(B, S, H * D)
    loss = torch.compile(net, backend=be)(x)
    loss.backward()
    (model,) = be.models
    be.shutdown()
    want = ref(x)
    want.backward()
    assert loss.item() == pytest.approx(want.item(), rel=1e-5)
    got, grad = weight(net).grad, weight(ref).grad
    assert float((got - grad).norm() / grad.norm()) < 1e-5
    return model


@pytest.mark.geplug_requires_products("atlas_train")
def test_without_the_fused_kernels_attention_runs_torch_npus_math_path() -> None:
    """On the 910 (no FlashAttentionScore: ``[compute] fused_attention = false``) the same
    module runs as torch_npu's math path: Q K^T and P V on the cube as BatchMatMulV2, the
    softmax as SoftmaxV2, the gradient as their gradients; the probability matrix is saved
    for the backward (a forward output). Values as eager."""
    torch.manual_seed(0)
    model = _as_eager_on_the_910(_Attn(True), lambda net: net.qkv.weight)
    kinds = {phase: [p.task.op_type for p in model.graphs[phase].device.tasks]
             for phase in ("forward", "backward")}
    assert not any(k.startswith("FlashAttention") for ks in kinds.values() for k in ks)
    assert "SoftmaxV2" in kinds["forward"] and "SoftmaxGrad" in kinds["backward"]
    fwd_bmm = [p for p in model.graphs["forward"].device.tasks
               if p.task.op_type == "BatchMatMulV2"]
    # every score is computed (no causal block skipping): 4 B H S^2 D on the cube
    assert sum(p.cost.cube_flops for p in fwd_bmm) == pytest.approx(4.0 * B * H * S * S * D)
    # the probabilities (B H S S float32) stay for the backward
    saved = model.graphs["forward"].device.memory.output_bytes
    assert saved >= B * H * S * S * 4


@pytest.mark.geplug_requires_products("atlas_train")
def test_the_math_path_takes_a_boolean_mask_and_checkpointed_attention() -> None:
    """A boolean ``attn_mask`` masks (SDPA's meaning, not an additive 0/1), and attention
    inside ``torch.utils.checkpoint`` runs the math path too (no fused gradient)."""
    from torch.utils.checkpoint import checkpoint

    class Masked(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = _Attn(False)
            self.mask = torch.rand(S, S) > 0.3

        def block(self, x: torch.Tensor) -> torch.Tensor:
            q, k, v = (t.view(B, S, H, D).transpose(1, 2)
                       for t in self.inner.qkv(x).chunk(3, dim=-1))
            return torch.nn.functional.scaled_dot_product_attention(q, k, v,
                                                                    attn_mask=self.mask)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return checkpoint(self.block, x, use_reentrant=False).square().sum()

    torch.manual_seed(0)
    model = _as_eager_on_the_910(Masked(), lambda net: net.inner.qkv.weight)
    assert not any(p.task.op_type.startswith("FlashAttention")
                   for phase in model.graphs.values() for p in phase.device.tasks)
