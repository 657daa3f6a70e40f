"""Each collective of the ``hccl`` process group timed by the HCCL model and emitted.

Collectives run on the device's communication stream, beside compute, as HCCL's stream
does under torch_npu: a collective is launched when the host issues it (DDP: when a
gradient bucket's hook fires during backward), at the compute stream's simulated clock
then (the torch runtime's, which compiled graphs advance), and starts on this rank when
the communication stream is free too; a slow rank (``GEPLUG_SIM_SLOW_RANK``) and the
rank-to-rank variation reach it later because every kernel of theirs is longer
(:attr:`geplug_torch.runtime.TorchRuntime.compute_factor`). The ranks exchange their
arrival times (through the job's store), so every rank knows when the
last one arrived: the collective begins then and takes the HCCL model's time over the job's
topology; each rank's task runs from its own arrival to the common end, its
synchronisation is the wait for the last rank. Compute goes on meanwhile; it waits for the
communication stream only where the result is needed: the work's ``wait()`` (a synchronous
collective), the optimizer step (DDP's reduced gradients) and the end of a step
(:meth:`~geplug_torch.runtime.TorchRuntime.wait_comm`). The task is a ``COMMUNICATION``
:class:`~geplug.events.TaskEvent` with the model's :class:`~geplug.events.CommInfo`, sent to
every profiling system of the runtime (its own when its config profiles, and each recording
``geplug_torch.profiler``), filed under the current training step, so ``PROF_*`` gets the
communication tracks and ``communication.json`` and the profiler's ``*_ascend_pt`` its
per-step ``ASCEND_PROFILER_OUTPUT`` communication files.
"""

from __future__ import annotations

import atexit
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from geplug.device.schedule import STREAMS
from geplug.events import OpRecord, RunInfo, TaskEvent
from geplug.hccl import CollectiveCost, comm_info, simulate
from geplug.hccl.faults import exec_timeout_error
from geplug_torch.distributed.rankenv import JobEnv

__all__ = ["COMM_STREAM", "HCCL_OPS", "CommClock", "CommModel", "Exchange", "Issued"]

COMM_STREAM = STREAMS["communication"]
"""The stream id of communication tasks (the core device model's communication stream)."""

HCCL_OPS = {
    "allreduce": ("allReduce", "HcomAllReduce"), "allgather": ("allGather", "HcomAllGather"),
    "reducescatter": ("reduceScatter", "HcomReduceScatter"),
    "broadcast": ("broadcast", "HcomBroadcast"), "reduce": ("reduce", "HcomReduce"),
    "alltoall": ("alltoall", "HcomAllToAll"), "alltoallv": ("alltoallv", "HcomAllToAllV"),
    "send": ("send", "HcomSend"), "recv": ("receive", "HcomReceive"),
    "barrier": ("barrier", "HcomBarrier"),
}
"""kind -> (HCCL's op word in task names, Ascend op type)."""

Exchange = Callable[[float], Sequence[float]]
"""Sends this rank's arrival (µs) and returns every rank's, in rank order."""


@attrs.frozen
class CommModel:
    """The model an eager job's communication tasks are filed under (no compiled graph)."""

    model_id: int
    name: str
    dynamic_shape: bool = False


@attrs.frozen
class Issued:
    """One issued collective: the runtime whose streams it used and when it ends there."""

    runtime: Any
    end_us: float

    def wait(self) -> None:
        """The compute stream waits for this collective (its work's ``wait()``)."""
        self.runtime.wait_comm(self.end_us)


class CommClock:
    """The collectives of one process group on this rank (see the module docstring)."""

    def __init__(self, job: JobEnv, exchange: Exchange, group: str = "hccl_world_group",
                 tag: int = 0) -> None:
        self.job = job
        self.exchange = exchange
        self.group = group
        self.tag = tag
        """Distinguishes groups in op names (0: the world group)."""
        self.seq = 0
        """Collectives issued so far: equal on every rank, so op names pair across ranks."""
        self.last_end = 0.0
        """When this group's last collective ended (on the runtime it ran on)."""
        self._last_runtime: Any = None
        self._costs: dict[tuple[str, float, int], CollectiveCost] = {}
        self._own: Any = None
        self._models: dict[int, CommModel] = {}

    # -- the runtime whose clock and profilers are used ------------------------------------

    def runtime(self) -> Any:
        """The runtime whose clock and profilers the collectives use: a live
        ``geplug_torch.backend`` runtime of the job's product that compiled a model (its
        device clock is the one compute advances), else one of our own (eager training)."""
        from geplug_torch.steps import runtimes

        live = [r for r in runtimes()
                if r.models and r.system.product.name == self.job.product.name]
        if live:
            return live[0]
        if self._own is None or self._own.system.closed:
            from geplug_torch._open import open_system

            system = open_system(self.job.product, None)
            self._own = system.runtime
            atexit.register(_shutdown, system)
        return self._own

    def _model(self, runtime: Any) -> Any:
        """The model communication tasks are filed under (the first compiled model, so they
        share its steps; else one of their own)."""
        if runtime.models:
            return runtime.models[0]
        key = id(runtime)
        found = self._models.get(key)
        if found is None:
            mid = runtime.system.next_model_id()
            found = self._models[key] = CommModel(mid, f"graph_{mid}")
        return found

    # -- timing ----------------------------------------------------------------------------

    def cost(self, kind: str, nbytes: float, peer: int = -1, root: int = 0) -> CollectiveCost:
        """The HCCL model's cost of ``kind`` with ``nbytes`` per rank (cached)."""
        key = (kind, nbytes, peer if kind in ("send", "recv") else root)
        found = self._costs.get(key)
        if found is None:
            j = self.job
            found = self._costs[key] = simulate(j.topology, kind, nbytes, j.settings, j.faults,
                                                root=root, peer=peer)
        return found

    def collective(self, kind: str, nbytes: float, dtype: str, shape: Sequence[int],
                   *, root: int = 0, peer: int = -1) -> Issued:
        """Time one collective on this rank and emit its task (``peer``: the other rank of a
        send / recv, which is timed without an exchange: only two ranks take part)."""
        word, op_type = HCCL_OPS[kind]
        name = f"hcom_{word}__{self.tag}_{self.seq}_1"
        self.seq += 1
        runtime = self.runtime()
        model = self._model(runtime)
        targets = runtime.profile_systems()
        # filed under the current step; a step is opened only for a profile to show it (a
        # stand-in runtime of an eager job keeps no steps nobody records)
        step = runtime.begin(model, "communication") if targets or runtime.profilers else \
            runtime.iteration
        if runtime is not self._last_runtime:  # another device clock: its own origin
            self._last_runtime, self.last_end = runtime, 0.0
        j = self.job
        now = float(runtime.now())  # the compute stream when the host launches it
        arrival = max(now, self.last_end, runtime.comm_free_us)
        if kind in ("send", "recv"):
            src, dst = (j.rank, peer) if kind == "send" else (peer, j.rank)
            cost = self.cost("send", nbytes, peer=dst, root=src)
            begin = arrival
            model_rank = src
        else:
            cost = self.cost(kind, nbytes, root=root)
            arrivals = list(self.exchange(arrival))
            self._exec_check(name, arrivals)
            begin = max(arrivals)
            model_rank = j.rank
        end = begin + cost.duration_us
        info = comm_info(name, kind, cost, model_rank, j.size, begin - arrival, end - arrival,
                         group=self.group)
        if model_rank != j.rank:  # the receiving side of a send: its own rank, no links
            info = attrs.evolve(info, rank=j.rank, links=(), peers=())
        for system in targets:
            run = RunInfo(system=system, model_name=model.name, model_id=model.model_id,
                          step=step, device_id=runtime.system.device_id,
                          time_base_us=runtime.base_us)
            op = OpRecord(name=name, op_type=op_type, onnx_op=kind, engine="AI_CORE",
                          dtype=dtype, task_id=system.next_task_id(), stream_id=COMM_STREAM,
                          task_type="COMMUNICATION", collective=True)
            system.emit_profile(TaskEvent(
                run=run, op=op, start_us=arrival, duration_us=end - arrival,
                wait_us=begin - arrival, bytes_moved=sum(b for _, b, _ in info.links),
                input_shapes=[tuple(shape)], input_dtypes=[dtype],
                output_shapes=[tuple(shape)], output_dtypes=[dtype], comm=info))
        for prof in runtime.profilers:
            prof.record_comm(runtime, model, step, name, arrival, end)
        runtime.comm_free_us = end
        self.last_end = end
        return Issued(runtime, end)

    def _exec_check(self, name: str, arrivals: Sequence[float]) -> None:
        """Simulated HCCL_EXEC_TIMEOUT: ranks arriving further apart than it (device time)
        fail with EI0002 - every rank, as every rank sees the same arrivals."""
        limit = self.job.settings.exec_timeout_s
        spread = max(arrivals) - min(arrivals)
        if limit and spread > limit * 1e6:
            late = max(range(len(arrivals)), key=lambda r: arrivals[r])
            first = min(range(len(arrivals)), key=lambda r: arrivals[r])
            raise exec_timeout_error(name, self.group, [late], first, spread / 1e6, limit,
                                     simulated=True)

    def close(self) -> None:
        """Shut our own system down (its files complete)."""
        if self._own is not None and not self._own.system.closed:
            self._own.system.shutdown()


def _shutdown(system: Any) -> None:
    if not system.closed:
        system.shutdown()
