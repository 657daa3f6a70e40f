"""Attention on a product without the fused attention kernels: torch_npu's math path.

On a SoC with CANN's FlashAttentionScore (``[compute] fused_attention = true``: the A2, A3
and 350 families) torch's ``scaled_dot_product_attention`` runs as that one fused kernel and
its gradient as FlashAttentionScoreGrad (:mod:`geplug_torch.opmap`). A SoC without them (the
910, the 310P) runs attention the way torch_npu falls back to: the math path
(``aten._scaled_dot_product_attention_math``: Q K^T, the scale, the causal or given mask, the
softmax and P V as separate ops), so its profile shows BatchMatMulV2, SoftmaxV2 and the mask's
kernels, its gradient is made of their gradients (SoftmaxGrad and BatchMatMuls), and the
probability matrix is one of the activations the forward saves for the backward: the memory
a real 910 holds. :func:`use_math_attention` rewrites a dynamo graph so AOTAutograd traces
that path (a decomposition of the fused op alone would still leave the fused gradient).
"""

from __future__ import annotations

from typing import Any

__all__ = ["math_attention", "use_math_attention"]


def math_attention(query: Any, key: Any, value: Any, attn_mask: Any = None,
                   dropout_p: float = 0.0, is_causal: bool = False, scale: Any = None,
                   enable_gqa: bool = False) -> Any:
    """``scaled_dot_product_attention`` as torch's math path (same signature and result:
    a boolean mask, True where a score is kept, becomes the additive mask SDPA makes of
    it before its math path)."""
    import torch

    if attn_mask is not None and attn_mask.dtype == torch.bool:
        attn_mask = torch.zeros(attn_mask.shape, dtype=query.dtype).masked_fill(
            attn_mask.logical_not(), float("-inf"))
    return torch.ops.aten._scaled_dot_product_attention_math(
        query, key, value, attn_mask, dropout_p, is_causal, None, scale=scale,
        enable_gqa=enable_gqa)[0]


def use_math_attention(gm: Any) -> int:
    """Point every ``scaled_dot_product_attention`` call of the dynamo graph ``gm`` and of
    its subgraphs (a ``torch.utils.checkpoint`` region's body) at :func:`math_attention`
    (in place); the number of calls rewritten."""
    import torch
    import torch.nn.functional as F

    targets = {F.scaled_dot_product_attention, torch._C._nn.scaled_dot_product_attention}
    count = 0
    for module in gm.modules():
        if not isinstance(module, torch.fx.GraphModule):
            continue
        found = 0
        for node in module.graph.nodes:
            if node.op == "call_function" and node.target in targets:
                node.target = math_attention
                found += 1
        if found:
            module.recompile()
            count += found
    return count
