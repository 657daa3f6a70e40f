"""Train a small GPT-style language model a few steps on a simulated Atlas A2, with data
dumps of two iterations and torch_npu's profiler on (geplug-torch; needs torch==2.13.0).

    python examples/torch_gpt/train.py OUT_DIR [--steps 4]

Writes ``OUT_DIR/dump/`` (iterations 1 and 2, forward and backward ops) and
``OUT_DIR/prof/{worker}_{ts}_ascend_pt/`` (iterations 1-2 profiled), then prints the
losses, the device memory peak (where, and what the parameters and AdamW's states take:
``npu.report()["memory"]``) and where to look: ``geplug dump ls OUT_DIR/dump`` and
``geplug profile summary OUT_DIR/prof/*_ascend_pt``.
"""

from __future__ import annotations

import argparse
import math
import os

import geplug_torch
import torch
from geplug_torch import profiler
from torch import nn


class Block(nn.Module):
    """Pre-norm transformer block with causal self-attention written out."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        att = att.masked_fill(torch.triu(torch.ones(t, t, dtype=torch.bool), 1), float("-inf"))
        x = x + self.proj((att.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    """Token + position embeddings, two blocks, a language-model head; returns the loss."""

    def __init__(self, vocab: int = 128, dim: int = 64, heads: int = 4, layers: int = 2,
                 context: int = 32) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(1, context, dim) * 0.02)
        self.blocks = nn.Sequential(*[Block(dim, heads) for _ in range(layers)])
        self.ln, self.head = nn.LayerNorm(dim), nn.Linear(dim, vocab)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = self.head(self.ln(self.blocks(self.tok(idx) + self.pos[:, : idx.shape[1]])))
        return nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())


def main(argv: list[str] | None = None) -> int:
    """Train, dump and profile; prints one line per step."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="output directory (created)")
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args(argv)
    dump_dir = os.path.join(args.out, "dump")
    prof_dir = os.path.join(args.out, "prof")
    os.makedirs(dump_dir, exist_ok=True)
    torch.manual_seed(0)
    npu = geplug_torch.backend(product="atlas_a2", config={
        "precision_mode": "must_keep_origin_dtype",
        "enable_dump": True, "dump_path": dump_dir, "dump_step": "1|2", "dump_mode": "all",
    })
    model = TinyGPT()
    compiled = torch.compile(model, backend=npu)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    idx = torch.randint(0, 128, (8, 32))
    targets = torch.roll(idx, -1, dims=1)
    exp = profiler._ExperimentalConfig(profiler_level=profiler.ProfilerLevel.Level1,
                                       aic_metrics=profiler.AiCMetrics.PipeUtilization)
    with profiler.profile(
            activities=[profiler.ProfilerActivity.CPU, profiler.ProfilerActivity.NPU],
            schedule=profiler.schedule(wait=1, warmup=0, active=2, repeat=1),
            on_trace_ready=profiler.tensorboard_trace_handler(prof_dir),
            record_shapes=True, experimental_config=exp) as prof:
        for step in range(args.steps):
            loss = compiled(idx, targets)
            loss.backward()
            opt.step()
            opt.zero_grad()
            prof.step()
            print(f"step {step}: loss {loss.item():.6f}")
    peak = npu.report()["memory"]["peak"]
    npu.shutdown()
    print(f"device memory peak: {peak['total_bytes'] / 2**20:.1f} MiB at the {peak['where']} "
          f"(parameters {peak['parameters_bytes'] / 2**20:.1f} MiB, AdamW states "
          f"{peak['optimizer_state_bytes'] / 2**20:.1f} MiB)")
    print(f"dumps: geplug dump ls {dump_dir}")
    for path in prof.outputs:
        print(f"profile: geplug profile summary {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
