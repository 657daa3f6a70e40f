"""A plain DDP training script, as users run it with torchrun (used by test_torch_hccl_*).

    torchrun --nproc_per_node N hccl_ddp_job.py BACKEND OUT [--profile] [--compile] [--db]
        [--steps=K] [--stall-rank=R]

Trains a small MLP for 3 steps with DistributedDataParallel on ``BACKEND`` (hccl or gloo),
each rank on its own data, and saves every step's gradients to ``OUT/grads_<rank>.pt``;
then all-reduces on a ``new_group`` of rank 0 alone (``OUT/subgroup.pt``).
With ``--profile`` the steps run under geplug_torch.profiler (torch_npu's API), which
writes ``OUT/prof/*_ascend_pt``; with ``--compile`` the model runs through
``torch.compile(backend=geplug_torch.backend(...))`` (its kernels on the simulated device);
``--db`` adds the profiler's database export (``ascend_pytorch_profiler_{rank}.db``);
``--steps=K`` trains K steps instead of 3; ``--stall-rank=R`` makes rank R sleep 120 s after
``init_process_group`` (a rank that never reaches the first collective).
"""

from __future__ import annotations

import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def _option(args: list[str], name: str, default: int) -> int:
    found = [a.split("=", 1)[1] for a in args if a.startswith(f"--{name}=")]
    return int(found[-1]) if found else default


def main(backend: str, out: str, args: list[str]) -> None:
    profile, compiled, db = ("--profile" in args, "--compile" in args, "--db" in args)
    dist.init_process_group(backend)
    rank = dist.get_rank()
    if rank == _option(args, "stall-rank", -1):
        time.sleep(120)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 8))
    if compiled:  # the model on the simulated product through geplug's torch.compile backend
        import geplug_torch

        ddp = DistributedDataParallel(torch.compile(
            model, backend=geplug_torch.backend(product=os.environ["GEPLUG_PRODUCT"])))
    else:
        ddp = DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(100 + rank)
    grads: list[list[torch.Tensor]] = []
    prof = None
    if profile:
        from geplug_torch import profiler

        exports = [profiler.ExportType.Text] + ([profiler.ExportType.Db] if db else [])
        prof = profiler.profile(
            activities=[profiler.ProfilerActivity.CPU, profiler.ProfilerActivity.NPU],
            experimental_config=profiler._ExperimentalConfig(export_type=exports),
            on_trace_ready=profiler.tensorboard_trace_handler(os.path.join(out, "prof")))
        prof.start()
    for _ in range(_option(args, "steps", 3)):
        x = torch.randn(16, 32, generator=gen)
        y = torch.randn(16, 8, generator=gen)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        grads.append([p.grad.detach().clone() for p in model.parameters()])
        opt.step()
        if prof is not None:
            prof.step()
    if prof is not None:
        prof.stop()
    torch.save(grads, os.path.join(out, f"grads_{rank}.pt"))
    sub = dist.new_group([0])  # a sub-group of rank 0 alone (every rank must create it)
    if rank == 0:
        t = torch.full((3,), 2.0)
        dist.all_reduce(t, group=sub)
        torch.save(t, os.path.join(out, "subgroup.pt"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
