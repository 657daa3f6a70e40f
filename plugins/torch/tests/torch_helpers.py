"""Models for the geplug-torch tests, built in code (random weights, nothing downloaded)."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

__all__ = ["GPT", "LargeWeightMLP", "Shuffle", "batch", "train"]


class _Attention(nn.Module):
    """Causal self-attention written out (BatchMatMulV2, SoftmaxV2 and their gradients)."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        shape = (b, t, self.heads, c // self.heads)
        q, k, v = (z.view(shape).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), 1)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, t, c))


class _Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = _Attention(dim, heads)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """A small GPT-style language model returning the next-token cross-entropy loss."""

    def __init__(self, vocab: int = 64, dim: int = 32, heads: int = 2, layers: int = 2,
                 context: int = 16) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(1, context, dim) * 0.02)
        self.blocks = nn.Sequential(*[_Block(dim, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        x = self.tok(idx) + self.pos[:, : idx.shape[1]]
        logits = self.head(self.ln(self.blocks(x)))
        return nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]),
                                           targets.view(-1))


class LargeWeightMLP(nn.Module):
    """Two Linear layers whose second has large weights: float16 overflows only when the
    backward pass multiplies a loss-scaled gradient by them."""

    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.fc1 = nn.Linear(width, width)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(width, width)
        with torch.no_grad():
            self.fc1.weight.uniform_(-0.1, 0.1)
            self.fc2.weight.uniform_(50.0, 100.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


def batch(seed: int = 0, vocab: int = 64, size: int = 4, context: int = 16
          ) -> tuple[torch.Tensor, torch.Tensor]:
    """A deterministic (tokens, targets) batch."""
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, vocab, (size, context), generator=g)
    return idx, torch.roll(idx, -1, dims=1)


def train(model: Any, steps: int, *, lr: float = 1e-3, prof: Any = None) -> list[float]:
    """``steps`` AdamW steps on one batch; returns the losses."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    idx, tgt = batch()
    losses = []
    for _ in range(steps):
        loss = model(idx, tgt)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(float(loss.item()))
        if prof is not None:
            prof.step()
    return losses


class Shuffle(nn.Module):
    """A convolution to 58 channels (no whole C0 blocks), H and W swapped (a Transpose: ND
    only), then a transposed convolution: on a product that declares formats, a TransData
    on each side of the Transpose and one on the graph input. Its backward reads the output
    gradient (a graph input) with a plain Conv2D, so the backward graph converts too."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(16, 58, 3, padding=1)
        self.up = nn.ConvTranspose2d(58, 16, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.up(self.conv(x).transpose(2, 3))
