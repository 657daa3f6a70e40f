"""Each collective of the ``hccl`` process group timed by the HCCL model and emitted.

A collective starts on this rank when its simulated device clock (the torch runtime's, which
compiled graphs advance) reaches it; a slow rank (``GEPLUG_SIM_SLOW_RANK``) and the
rank-to-rank variation reach it later because every kernel of theirs is longer
(:attr:`geplug_torch.runtime.TorchRuntime.compute_factor`). The ranks exchange their
arrival times (through the job's store), so every rank knows when the
last one arrived: the collective begins then and takes the HCCL model's time over the job's
topology; each rank's task runs from its own arrival to the common end, its
synchronisation is the wait for the last rank. The task is a ``COMMUNICATION``
:class:`~geplug.events.TaskEvent` with the model's :class:`~geplug.events.CommInfo`, sent to
every profiling system of the runtime (its own when its config profiles, and each recording
``geplug_torch.profiler``), so ``PROF_*`` gets the communication tracks and
``communication.json`` and the profiler's ``*_ascend_pt`` its ``ASCEND_PROFILER_OUTPUT``
communication files.
"""

from __future__ import annotations

import atexit
from collections.abc import Callable, Sequence
from typing import Any

from geplug.events import OpRecord, RunInfo, TaskEvent
from geplug.hccl import CollectiveCost, comm_info, simulate
from geplug.hccl.faults import exec_timeout_error
from geplug_torch.distributed.rankenv import JobEnv

__all__ = ["HCCL_OPS", "CommClock", "Exchange"]

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
        self._costs: dict[tuple[str, float, int], CollectiveCost] = {}
        self._own: Any = None
        self._model_ids: dict[int, tuple[int, str]] = {}

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
            import geplug

            system = geplug.initialize_system(self.job.product, None, backend="torch")
            self._own = system.runtime
            atexit.register(_shutdown, system)
        return self._own

    def _model(self, runtime: Any) -> tuple[int, str]:
        """The model id and name communication tasks are filed under (the first compiled
        model's, so they share its steps; else one of their own)."""
        if runtime.models:
            m = runtime.models[0]
            return m.model_id, m.name
        key = id(runtime)
        found = self._model_ids.get(key)
        if found is None:
            mid = runtime.system.next_model_id()
            found = self._model_ids[key] = (mid, f"graph_{mid}")
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
                   *, root: int = 0, peer: int = -1) -> None:
        """Time one collective on this rank and emit its task (``peer``: the other rank of a
        send / recv, which is timed without an exchange: only two ranks take part)."""
        word, op_type = HCCL_OPS[kind]
        name = f"hcom_{word}__{self.tag}_{self.seq}_1"
        self.seq += 1
        runtime = self.runtime()
        j = self.job
        now = float(runtime.now())
        arrival = max(now, self.last_end)
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
            import attrs

            info = attrs.evolve(info, rank=j.rank, links=(), peers=())
        targets = runtime.profile_systems()
        if targets:
            mid, mname = self._model(runtime)
            for system in targets:
                run = RunInfo(system=system, model_name=mname, model_id=mid,
                              step=runtime.iteration, device_id=runtime.system.device_id,
                              time_base_us=runtime.base_us)
                op = OpRecord(name=name, op_type=op_type, onnx_op=kind, engine="AI_CORE",
                              dtype=dtype, task_id=system.next_task_id(), stream_id=1,
                              task_type="COMMUNICATION", collective=True)
                system.emit_profile(TaskEvent(
                    run=run, op=op, start_us=arrival, duration_us=end - arrival,
                    wait_us=begin - arrival, bytes_moved=sum(b for _, b, _ in info.links),
                    input_shapes=[tuple(shape)], input_dtypes=[dtype],
                    output_shapes=[tuple(shape)], output_dtypes=[dtype], comm=info))
        runtime.clock_us = end
        self.last_end = end

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
