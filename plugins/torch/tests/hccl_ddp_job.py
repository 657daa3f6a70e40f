"""A plain DDP training script, as users run it with torchrun (used by test_torch_hccl_*).

    torchrun --nproc_per_node N hccl_ddp_job.py BACKEND OUT [--profile] [--compile]
        [--compile-ddp] [--wide] [--db] [--steps=K] [--stall-rank=R]

Trains a small MLP for 3 steps with DistributedDataParallel on ``BACKEND`` (hccl or gloo),
each rank on its own data, and saves every step's gradients to ``OUT/grads_<rank>.pt``;
then all-reduces on a ``new_group`` of rank 0 alone (``OUT/subgroup.pt``). On hccl it also
counts the collectives torch issues to the backend in each step (``OUT/issued_<rank>.json``).
With ``--profile`` the steps run under geplug_torch.profiler (torch_npu's API), which
writes ``OUT/prof/*_ascend_pt``; with ``--compile`` the model runs through
``torch.compile(backend=geplug_torch.backend(...))`` inside DDP (its kernels on the
simulated device, the backward one graph); with ``--compile-ddp`` the DDP module itself is
compiled (dynamo splits the graph at DDP's buckets, so each bucket's allreduce is launched
while the backward of the layers before it still runs); ``--wide`` trains a 1024-wide MLP
in 1 MB buckets (its gradients fill three); ``--db`` adds the profiler's database export
(``ascend_pytorch_profiler_{rank}.db``); ``--steps=K`` trains K steps instead of 3;
``--stall-rank=R`` makes rank R sleep 120 s after ``init_process_group`` (a rank that
never reaches the first collective).
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

COLLECTIVES = ("allreduce", "broadcast", "allgather", "_allgather_base", "reduce_scatter",
               "_reduce_scatter_base", "reduce", "alltoall", "alltoall_base", "barrier",
               "send", "recv")


def count_collectives(issued: list[int]) -> None:
    """Count every collective torch hands the default group (hccl's Python process group
    itself) into ``issued[-1]``."""
    backend = dist.distributed_c10d._get_default_group()

    def counting(method):
        @torch._dynamo.disable  # called back from DDP's C++ reducer inside compiled code
        def call(*args, **kwargs):
            issued[-1] += 1
            return method(*args, **kwargs)
        return call

    for name in COLLECTIVES:
        setattr(backend, name, counting(getattr(backend, name)))


class MLP(torch.nn.Module):
    """The model (a module class of the script's own: dynamo compiles its forward); the
    widths of its Linear layers, ReLU between them."""

    def __init__(self, widths: tuple[int, ...]) -> None:
        super().__init__()
        layers: list[torch.nn.Module] = []
        for a, b in itertools.pairwise(widths):
            layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
        self.layers = torch.nn.Sequential(*layers[:-1])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def _option(args: list[str], name: str, default: int) -> int:
    found = [a.split("=", 1)[1] for a in args if a.startswith(f"--{name}=")]
    return int(found[-1]) if found else default


def main(backend: str, out: str, args: list[str]) -> None:
    profile, db, wide = ("--profile" in args, "--db" in args, "--wide" in args)
    dist.init_process_group(backend)
    rank = dist.get_rank()
    if rank == _option(args, "stall-rank", -1):
        time.sleep(120)
    torch.manual_seed(0)
    model = MLP((32, 1024, 1024, 8) if wide else (32, 64, 8))
    npu = None
    if "--compile" in args or "--compile-ddp" in args:  # geplug's torch.compile backend
        import geplug_torch

        npu = geplug_torch.backend(product=os.environ["GEPLUG_PRODUCT"])
    inner = torch.compile(model, backend=npu) if "--compile" in args else model
    ddp = DistributedDataParallel(inner, bucket_cap_mb=1 if wide else None)
    run = torch.compile(ddp, backend=npu) if "--compile-ddp" in args else ddp
    issued: list[int] = []
    if backend == "hccl":
        count_collectives(issued)
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
        issued.append(0)
        x = torch.randn(16, 32, generator=gen)
        y = torch.randn(16, 8, generator=gen)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(run(x), y)
        loss.backward()
        grads.append([p.grad.detach().clone() for p in model.parameters()])
        opt.step()
        if prof is not None:
            prof.step()
    if prof is not None:
        prof.stop()
    torch.save(grads, os.path.join(out, f"grads_{rank}.pt"))
    if backend == "hccl":
        with open(os.path.join(out, f"issued_{rank}.json"), "w") as fh:
            json.dump(issued, fh)
    sub = dist.new_group([0])  # a sub-group of rank 0 alone (every rank must create it)
    if rank == 0:
        t = torch.full((3,), 2.0)
        dist.all_reduce(t, group=sub)
        torch.save(t, os.path.join(out, "subgroup.pt"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
