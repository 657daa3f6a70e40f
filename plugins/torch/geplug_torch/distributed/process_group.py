"""The ``hccl`` process group: gloo moves the data, geplug's HCCL model times it.

:class:`HcclProcessGroup` is a Python ``torch.distributed.ProcessGroup`` (the form
``Backend.register_backend`` accepts for third-party backends written in Python) that owns a
``ProcessGroupGloo`` over the same store: every collective is first timed and emitted by
:class:`~geplug_torch.distributed.timing.CommClock`, then handed to gloo - results are
gloo's, exactly. Gloo's work object is returned inside a :class:`TimedWork`: its ``wait()``
(what a synchronous collective calls) also makes the simulated compute stream wait for the
collective, as torch_npu's HCCL work does; its future (what DDP's reducer waits on) is
gloo's, so DDP's gradient allreduces overlap the rest of backward until the optimizer.

At creation the rank environment is checked (:func:`read_job_env`) and the ranks rendezvous
on the store with HCCL's set-up behaviour: a rank that never joins makes the others fail with
``EI0006`` after ``HCCL_CONNECT_TIMEOUT`` + 20 s (really waited), and ``GEPLUG_SIM_ABSENT_RANK``
rehearses it without the wait (simulated time, as in ONNX jobs).
"""

from __future__ import annotations

import contextlib
import os
import time
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import (
    AllgatherOptions,
    AllreduceOptions,
    AllToAllOptions,
    BarrierOptions,
    BroadcastOptions,
    ProcessGroupGloo,
    ReduceOptions,
    ReduceScatterOptions,
    Work,
)

from geplug.errors import HcclError
from geplug.hccl.faults import ENV as FAULT_ENV
from geplug.hccl.faults import exec_timeout_error
from geplug_torch.distributed.rankenv import JobEnv, read_job_env, resolve_product
from geplug_torch.distributed.timing import HCCL_OPS, CommClock, Issued

__all__ = ["HcclProcessGroup", "TimedWork", "create"]

_JOIN = "geplug_hccl_join/"
_ARRIVE = "geplug_hccl_arrive/"
_FOREVER = timedelta(seconds=2147483647)
"""HCCL_EXEC_TIMEOUT=0 (never time out)."""
_PythonProcessGroup: Any = dist.ProcessGroup
"""torch's ProcessGroup with its Python trampoline (its stubs describe the C++ overloads,
not the Python override signatures torch calls, so the base is typed ``Any``)."""
_PythonWork: Any = Work
"""torch's Work with its Python trampoline (``wait`` and ``get_future`` overridable)."""


class TimedWork(_PythonWork):
    """Gloo's work for one collective, whose ``wait()`` is also the compute stream's wait."""

    def __init__(self, inner: Any, issued: Issued) -> None:
        super().__init__()
        self.inner = inner
        self.issued = issued

    def wait(self, timeout: timedelta = timedelta(0)) -> bool:
        """Wait for gloo; the simulated compute stream waits for the collective's end."""
        self.issued.wait()
        return bool(self.inner.wait(timeout))

    def get_future(self) -> Any:
        """Gloo's future (DDP's reducer waits on it: no compute-stream wait until the
        optimizer step, :meth:`~geplug_torch.runtime.TorchRuntime.optimizer_step`)."""
        return self.inner.get_future()


def _dtype(t: torch.Tensor) -> str:
    return str(t.dtype).replace("torch.", "")


def _span(ranks: list[int]) -> str:
    return ", ".join(str(r) for r in ranks[:16]) + (" ..." if len(ranks) > 16 else "")


def _absent_error(job: JobEnv, absent: list[int], simulated: bool) -> HcclError:
    waiting = [r for r in range(job.size) if r not in absent]
    how = "(simulated)" if simulated else "(waited)"
    return HcclError(
        f"EI0006: Getting socket times out. Reason: rank(s) {_span(absent)} never joined "
        f"communicator hccl_world_group; rank(s) {_span(waiting)} waited HCCL_CONNECT_TIMEOUT "
        f"{job.settings.connect_timeout_s} s + 20 s = {job.settings.connect_wait_s} s {how} "
        "in init_process_group('hccl') and failed. Check the processes of the ranks named "
        "(did they start, did they crash earlier?); if they start late, raise "
        "HCCL_CONNECT_TIMEOUT", code="EI0006", ranks=absent,
        option="GEPLUG_SIM_ABSENT_RANK" if simulated else "HCCL_CONNECT_TIMEOUT")


def _rendezvous(store: Any, job: JobEnv) -> None:
    """Every rank announces itself; a missing one is HCCL's connect time-out."""
    absent = sorted(job.faults.absent_ranks)
    if absent:  # rehearsed: nothing waits, every rank (the absent one too) ends with it
        raise _absent_error(job, absent, simulated=True)
    store.set(f"{_JOIN}{job.rank}", "1")
    keys = [f"{_JOIN}{r}" for r in range(job.size)]
    try:
        store.wait(keys, timedelta(seconds=job.settings.connect_wait_s))
    except Exception:  # the store's own time-out (DistStoreError / RuntimeError)
        missing = [r for r, k in enumerate(keys) if not store.check([k])]
        raise _absent_error(job, missing or list(range(job.size)), simulated=False) from None


class HcclProcessGroup(_PythonProcessGroup):
    """See the module docstring."""

    _made = 0
    """hccl groups created in this process (every rank creates the same ones, in order)."""

    def __init__(self, store: Any, rank: int, size: int, timeout: timedelta) -> None:
        super().__init__(rank, size)
        product = resolve_product(os.environ)
        world = os.environ.get("WORLD_SIZE", "").strip()
        if world.isdigit() and int(world) != size:
            # a new_group sub-group: timed as a job of its own size on generated servers;
            # the injected faults name world ranks, so they stay with the world group
            env = {k: v for k, v in os.environ.items()
                   if k not in ("RANK_ID", "RANK_SIZE", "RANK_TABLE_FILE", "DEVICE_ID",
                                "ASCEND_DEVICE_ID", *FAULT_ENV)}
            self.job = read_job_env(product, rank, size, env)
        else:
            self.job = read_job_env(product, rank, size)
        _rendezvous(store, self.job)
        self.store = store
        self._rounds = 0
        """Arrival exchanges so far (equal on every rank: they pair the store keys)."""
        self.gloo: Any = ProcessGroupGloo(store, rank, size, timeout)
        self._kind = "barrier"
        tag = HcclProcessGroup._made
        HcclProcessGroup._made += 1
        self.clock = CommClock(self.job, self._exchange,
                               group="hccl_world_group" if tag == 0 else f"hccl_group_{tag}",
                               tag=tag)
        self.comm_name = (f"{os.environ.get('MASTER_ADDR', '127.0.0.1')}%geplug_"
                          f"{os.environ.get('MASTER_PORT', '0')}_{tag}")
        """The HCCL communicator's name (``get_hccl_comm_name``): the same on every rank
        of the group; ``parallel_group_info`` in profiler_metadata.json is keyed by it."""

    def getBackendName(self) -> str:
        """The backend's name, as torch reports it."""
        return "hccl"

    # torch names the group it creates with this object (``_set_group_name``); a Python
    # process group keeps the names itself (dynamo reads them when it traces a DDP module)

    def setGroupName(self, name: str) -> None:
        """Keep the group's name (torch's ``_set_group_name``)."""
        self._group_name = name

    def getGroupName(self) -> str:
        """The group's name (``group_name``)."""
        return getattr(self, "_group_name", "")

    def setGroupDesc(self, desc: str) -> None:
        """Keep the group's description (torch's ``_set_group_desc``)."""
        self._group_desc = desc

    def getGroupDesc(self) -> str:
        """The group's description (``group_desc``)."""
        return getattr(self, "_group_desc", "")

    def _exchange(self, arrival: float) -> list[float]:
        """Every rank's arrival (µs), through the store: a rank that does not arrive within
        HCCL_EXEC_TIMEOUT (really waited; 0: never) is HCCL's EI0002, not a hang."""
        n, rank, size = self._rounds, self.rank(), self.size()
        self._rounds += 1
        keys = [f"{_ARRIVE}{n}/{r}" for r in range(size)]
        self.store.set(keys[rank], repr(arrival))
        limit = self.job.settings.exec_timeout_s
        started = time.monotonic()
        try:
            self.store.wait(keys, timedelta(seconds=limit) if limit else _FOREVER)
        except Exception:  # the store's time-out (DistStoreError / RuntimeError)
            late = [r for r, k in enumerate(keys) if not self.store.check([k])]
            raise exec_timeout_error(
                f"hcom_{HCCL_OPS[self._kind][0]}__{self.clock.tag}_{self.clock.seq - 1}_1",
                self.clock.group, late or list(range(size)), rank,
                time.monotonic() - started, limit, simulated=False) from None
        every = [float(v) for v in self.store.multi_get(keys)]
        if n:  # every rank has read round n - 1 (it has set its key of round n)
            with contextlib.suppress(Exception):
                self.store.delete_key(f"{_ARRIVE}{n - 1}/{rank}")
        return every

    def _time(self, kind: str, tensors: list[torch.Tensor], **kw: Any) -> Issued:
        self._kind = kind
        nbytes = float(sum(t.numel() * t.element_size() for t in tensors))
        first = tensors[0] if tensors else torch.empty(0)
        return self.clock.collective(kind, nbytes, _dtype(first), tuple(first.shape), **kw)

    # -- collectives (torch's ProcessGroup signatures) -------------------------------------

    def allreduce(self, tensors: list[torch.Tensor],
                  opts: AllreduceOptions = AllreduceOptions()) -> Any:  # noqa: B008
        """allreduce (DDP's gradient buckets come here)."""
        issued = self._time("allreduce", tensors)
        return TimedWork(self.gloo.allreduce(tensors, opts), issued)

    def broadcast(self, tensors: list[torch.Tensor],
                  opts: BroadcastOptions = BroadcastOptions()) -> Any:  # noqa: B008
        """broadcast from ``opts.rootRank``."""
        issued = self._time("broadcast", tensors, root=opts.rootRank)
        return TimedWork(self.gloo.broadcast(tensors, opts), issued)

    def reduce(self, tensors: list[torch.Tensor],
               opts: ReduceOptions = ReduceOptions()) -> Any:  # noqa: B008
        """reduce to ``opts.rootRank``."""
        issued = self._time("reduce", tensors, root=opts.rootRank)
        return TimedWork(self.gloo.reduce(tensors, opts), issued)

    def allgather(self, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor],
                  opts: AllgatherOptions = AllgatherOptions()) -> Any:  # noqa: B008
        """allgather into a list per rank."""
        issued = self._time("allgather", inputs)
        return TimedWork(self.gloo.allgather(outputs, inputs, opts), issued)

    def _allgather_base(self, output: torch.Tensor, input: torch.Tensor,
                        opts: AllgatherOptions = AllgatherOptions()) -> Any:  # noqa: B008
        """allgather into one tensor (all_gather_into_tensor)."""
        issued = self._time("allgather", [input])
        return TimedWork(self.gloo._allgather_base(output, input, opts), issued)

    def reduce_scatter(self, outputs: list[torch.Tensor], inputs: list[list[torch.Tensor]],
                       opts: ReduceScatterOptions = ReduceScatterOptions()) -> Any:  # noqa: B008
        """reduce_scatter of a list per rank."""
        issued = self._time("reducescatter", [t for ts in inputs for t in ts])
        return TimedWork(self.gloo.reduce_scatter(outputs, inputs, opts), issued)

    def _reduce_scatter_base(self, output: torch.Tensor, input: torch.Tensor,
                             opts: ReduceScatterOptions = ReduceScatterOptions()  # noqa: B008
                             ) -> Any:
        """reduce_scatter of one tensor (reduce_scatter_tensor)."""
        issued = self._time("reducescatter", [input])
        return TimedWork(self.gloo._reduce_scatter_base(output, input, opts), issued)

    def alltoall_base(self, output: torch.Tensor, input: torch.Tensor,
                      output_split_sizes: list[int], input_split_sizes: list[int],
                      opts: AllToAllOptions = AllToAllOptions()) -> Any:  # noqa: B008
        """all_to_all_single (alltoallv when split sizes are given)."""
        kind = "alltoallv" if input_split_sizes or output_split_sizes else "alltoall"
        issued = self._time(kind, [input])
        work = self.gloo.alltoall_base(output, input, output_split_sizes, input_split_sizes,
                                       opts)
        return TimedWork(work, issued)

    def alltoall(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor],
                 opts: AllToAllOptions = AllToAllOptions()) -> Any:  # noqa: B008
        """all_to_all of tensor lists."""
        issued = self._time("alltoallv", inputs)
        return TimedWork(self.gloo.alltoall(outputs, inputs, opts), issued)

    def send(self, tensors: list[torch.Tensor], dst: int, tag: int = 0) -> Any:
        """send to rank ``dst``."""
        issued = self._time("send", tensors, peer=dst)
        return TimedWork(self.gloo.send(tensors, dst, tag), issued)

    def recv(self, tensors: list[torch.Tensor], src: int, tag: int = 0) -> Any:
        """recv from rank ``src``."""
        issued = self._time("recv", tensors, peer=src)
        return TimedWork(self.gloo.recv(tensors, src, tag), issued)

    def barrier(self, opts: BarrierOptions = BarrierOptions()) -> Any:  # noqa: B008
        """barrier (a zero-byte collective)."""
        issued = self._time("barrier", [])
        return TimedWork(self.gloo.barrier(opts), issued)


def _outside_dynamo(cls: type, names: tuple[str, ...]) -> None:
    """Keep torch.compile out of ``cls``'s methods called back from C++: DDP's reducer calls
    them (bucket rebuild, gradient allreduce) while a compiled DDP module runs, and dynamo
    would otherwise try to compile each such frame (and fail on the process group, an
    opaque object to it)."""
    for name in names:
        setattr(cls, name, torch._disable_dynamo(getattr(cls, name), recursive=True))


_outside_dynamo(HcclProcessGroup, (
    "allreduce", "broadcast", "reduce", "allgather", "_allgather_base", "reduce_scatter",
    "_reduce_scatter_base", "alltoall_base", "alltoall", "send", "recv", "barrier"))
_outside_dynamo(TimedWork, ("wait", "get_future"))


def create(store: Any, rank: int, size: int, timeout: timedelta) -> HcclProcessGroup:
    """``Backend.register_backend``'s creator: the process group of one ``hccl`` group."""
    return HcclProcessGroup(store, rank, size, timeout)
