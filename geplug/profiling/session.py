"""One profiling collection: the ``PROF_*`` directory of one system and its collectors.

Created on the system's first profiling event; every event is appended to raw files under
``device_{id}/data`` and ``host/data`` as it arrives; :meth:`ProfilingSession.close` (from
``geplug_shutdown_system``) stops the samplers and writes the summaries with streaming passes.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
import warnings
from array import array
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from geplug.device import copy_us
from geplug.profiling import storage
from geplug.profiling.api_collector import ApiCollector
from geplug.profiling.device_samplers import SAMPLER_ITEMS, WindowSampler
from geplug.profiling.hccl import CommCollector
from geplug.profiling.host_sampler import HostSampler
from geplug.profiling.layout import ANALYZE, OUTPUT_DIR, new_prof_name, us_to_ns, write_json
from geplug.profiling.markers import MarkerCollector
from geplug.profiling.memcpy import CopyLog
from geplug.profiling.memory_records import MemoryCollector
from geplug.profiling.options import Effective
from geplug.profiling.rawlog import DEFAULT_SLICE_BYTES, RawLog
from geplug.profiling.records import RecordLog
from geplug.profiling.step_trace import StepTraceCollector
from geplug.profiling.task_collector import TaskCollector

if TYPE_CHECKING:
    from geplug.events import (
        ApiCall,
        GraphEvent,
        MarkerEvent,
        StepBatchEvent,
        StepEvent,
        StepTasksEvent,
        TaskEvent,
        TaskTable,
    )
    from geplug.runtime.system import System

__all__ = ["ProfilingSession"]


@attrs.frozen
class _Prepared:
    """What the batched path derives once from a :class:`~geplug.events.TaskTable`."""

    n: int
    rec: np.ndarray
    """(n, 5) int64 records with the step and start shift still to add."""
    buf: np.ndarray
    """(n, 5) int64 scratch the step's records are computed into (appended at once)."""
    offset_us: list[float]
    offset_ns: list[int]
    duration_ns: list[int]
    comm: list[bool]
    comm_idx: list[int]
    trace_idx: list[int]
    """The tasks step_trace must see (first/last compute, named fp/bp ops, first comm)."""
    names: tuple[str, ...]
    """The tasks' op names (the memory records' task times)."""

    @classmethod
    def of(cls, table: TaskTable, tasks: TaskCollector, eff: Effective) -> _Prepared:
        sigs, comm = [], []
        for task in table.tasks:
            sig, is_comm = tasks.sig_of(task)
            sigs.append(sig)
            comm.append(is_comm)
        n = len(sigs)
        rec = np.zeros((n, 5), dtype=np.int64)
        if n:
            rec[:, 0] = sigs
            rec[:, 2] = table.offset_ns
            rec[:, 3] = table.duration_ns
            rec[:, 4] = table.wait_ns
        compute = [i for i in range(n) if not comm[i]]
        comm_idx = [i for i in range(n) if comm[i]]
        trace = set(comm_idx[:1]) | set(compute[:1]) | set(compute[-1:])
        names = {eff.fp_point, eff.bp_point} - {""}
        trace |= {i for i in compute if table.tasks[i].op.name in names}
        return cls(n, rec, np.empty_like(rec), (table.offset_ns / 1000).tolist(),
                   table.offset_ns.tolist(), table.duration_ns.tolist(), comm, comm_idx,
                   sorted(trace), tuple(t.op.name for t in table.tasks))

SLICE_BYTES = DEFAULT_SLICE_BYTES
"""Raw slice size (module attribute: tests lower it to exercise ageing)."""


class ProfilingSession:
    """The collectors of one system and the ``PROF_*`` directory they write."""

    def __init__(self, system: System, eff: Effective) -> None:
        self.system = system
        self.eff = eff
        self.product = system.product
        self.device_id = int(system.device_id)
        self.start_time = time.time()
        self._pid = os.getpid()
        name, self.ts14 = new_prof_name(self.start_time)
        self.root = os.path.join(eff.output_root, name)
        self.guard = storage.StorageGuard(eff.output_root, self.root, eff.storage_limit_mb)
        self.closed = False
        self.base_us: int | None = None
        """The time base (whole µs since the epoch): the first task's start, rounded down.

        Raw task records hold integer ns relative to it, so no absolute float64 µs (step 0.25
        µs at ~1.8e15) is ever stored; absolute times are rebuilt when formatting."""
        dev = f"device_{self.device_id}"
        self.device_dir = os.path.join(self.root, dev)
        self.host_dir = os.path.join(self.root, "host")
        for d in (os.path.join(self.device_dir, "data"), os.path.join(self.host_dir, "data"),
                  os.path.join(self.root, OUTPUT_DIR), os.path.join(self.root, ANALYZE)):
            os.makedirs(d, exist_ok=True)
        ddata = os.path.join(self.device_dir, "data")
        hdata = os.path.join(self.host_dir, "data")

        def log(stem: str, where: str = ddata, *, ageable: bool = True) -> RawLog:
            return RawLog(where, stem, self.device_id, self.guard, slice_bytes=SLICE_BYTES,
                          ageable=ageable)

        self.write_info()
        self.tasks = TaskCollector(
            RecordLog(ddata, "task_time", self.device_id, self.guard, fields=5,
                      slice_bytes=SLICE_BYTES),
            log("op_info", ageable=False))
        self.record_tasks = eff.task_level != "off" or eff.aicpu or eff.hccl or eff.l2
        self.copies = CopyLog()
        """Host<->device copies (MEMCPY_ASYNC tasks), kept while tasks are recorded."""
        self._copy_ns: dict[int, int] = {}
        """Bytes -> the device model's copy cost in ns (a few sizes per run)."""
        self._extend_task = self.tasks.tasks.extend
        self.steps = (StepTraceCollector(log("training_trace", ageable=False), eff.fp_point,
                                         eff.bp_point) if eff.training_trace else None)
        self.api = (ApiCollector(log("api_event", hdata), runtime_api=eff.runtime_api,
                                 ge_api=eff.ge_api not in ("", "off"))
                    if eff.runtime_api or eff.ge_api not in ("", "off") else None)
        # task_time collects communication data too (the collector's deprecation of the hccl
        # switch says so); the files are written when hccl is on or a communication task ran
        self.comm = CommCollector() if eff.hccl or eff.task_level != "off" else None
        self.markers = MarkerCollector(log("msproftx", hdata)) if eff.msproftx else None
        self.samplers: list[tuple[str, WindowSampler]] = []
        self.model_memory: dict[int, int] = {}
        """Model id -> device bytes its memory plan holds (GraphEvent.memory_bytes)."""
        self.memory = (MemoryCollector() if eff.task_memory or eff.sys_hardware_mem_freq
                       else None)
        """The memory plans and task times the memory records replay (task_memory or the
        memory sampler on)."""
        for option, kind in SAMPLER_ITEMS.items():
            freq = getattr(eff, option)
            if freq:
                self.samplers.append((kind, WindowSampler(option, freq, log(kind + "_sample"))))
        self.host = HostSampler(eff.host_sys, eff.host_sys_usage, eff.host_freq,
                                log("host_sample", hdata))
        self.host.start()
        self._step_open: dict[tuple[int, int], int] = {}
        self.step_times = array("q")
        """Finished steps, flattened (Iteration ID, begin ns, end ns, ...)."""
        self._tables: dict[int, _Prepared] = {}
        """TaskTable.key -> what the batched path derived from it (bounded)."""
        self._handlers: dict[str, Callable[[Any], None]] = {
            "task": self.on_task,
            "step_tasks": self.on_step_tasks,
            "step_batch": self.on_step_batch,
            "graph": self.on_graph,
            "step": self.on_step,
            "api": self.on_api,
            "marker": self.on_marker,
        }

    # -- metadata ------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        """The host process id recorded with tasks and API calls: the collecting process's,
        also when the export runs in a forked worker."""
        return self._pid

    def rank_info(self) -> tuple[int, int]:
        """(rank id, rank size) of the system (0, 1 without a rank table)."""
        info = self.system.rank
        rank = getattr(info, "rank_id", 0) or 0
        size = getattr(info, "rank_size", 1) or 1
        return int(rank), int(size)

    def rank_id(self) -> int:
        """The rank id readers see (-1 when the job has no rank)."""
        rank = getattr(self.system.rank, "rank_id", None)
        return -1 if rank is None else int(rank)

    def link_type(self) -> str:
        """The product's first interconnect: HCCS where declared, else PCIe."""
        targets = [t.upper() for t in self.product.profiling.interconnect_targets]
        return "HCCS" if "HCCS" in targets else "PCIE"

    def info(self) -> dict[str, Any]:
        """``info.json.{id}`` content (formats.md §6.2)."""
        cm = self.product.compute
        rank = getattr(self.system.rank, "rank_id", None)
        return {
            "rank_id": -1 if rank is None else int(rank),
            "hostUid": str(uuid.getnode()),
            "hostname": socket.gethostname(),
            "pid": str(os.getpid()),
            "platform_version": (self.product.soc_versions or (self.product.name,))[0],
            "product": self.product.name,
            "simulated": True,
            "devices": str(self.device_id),
            "DeviceInfo": [{
                "id": self.device_id,
                "ai_core_num": cm.ai_cores,
                "aiv_num": cm.vector_cores if self.product.profiling.split_cores else 0,
                "aic_frequency": str(cm.clock_mhz),
                "aiv_frequency": str(cm.clock_mhz),
                "ai_cpu_num": 0,
            }],
            "profiling_options": self.system.config.config.profiling_options.items()
            if self.system.config.config.profiling_options else {},
        }

    def write_info(self) -> None:
        """Write ``device_{id}/info.json.{id}`` and the start info (complete or absent)."""
        path = os.path.join(self.device_dir, f"info.json.{self.device_id}")
        write_json(path, self.info())
        self.guard.register(path, ageable=False)
        start = os.path.join(self.device_dir, f"start_info.{self.device_id}")
        write_json(start, {"collectionTimeBegin": str(int(self.start_time * 1e6)),
                            "clockMonotonicRaw": str(time.monotonic_ns())})
        self.guard.register(start, ageable=False)

    # -- events --------------------------------------------------------------------------

    def handle(self, event: Any) -> None:
        """Dispatch one profiling event."""
        if self.closed or self.guard.stopped:
            return
        handler = self._handlers.get(event.kind)
        if handler is not None:
            handler(event)

    def on_graph(self, ev: GraphEvent) -> None:
        """A compiled graph: validate fp/bp names; note the memory the model holds."""
        if ev.memory_bytes:
            self.model_memory[ev.run.model_id] = ev.memory_bytes
        if self.memory is not None:
            self.memory.on_graph(ev.run.model_id, ev.memory_plans)
        if self.steps is not None:
            self.steps.on_graph(ev)

    def on_task(self, ev: TaskEvent) -> None:
        """A device task from a backend that emits one event per task (a task that was also
        in a batched step record is skipped: it is collected from the batch)."""
        if ev.in_batch:
            return
        sig, comm = self.tasks.sig_of(ev)
        run_base = ev.run.time_base_us
        start = run_base + ev.start_us  # absolute (0.25 µs float resolution: aggregates only)
        dur = ev.duration_us
        if self.record_tasks:
            base = self.base_us
            if base is None:
                base = self.base_us = run_base or int(ev.start_us // 1)
            # exact: the integer offset of the run's base plus a small relative time
            # (a backend without a base sends absolute floats: start - base is then exact)
            extend = self._extend_task
            extend((sig, ev.run.step,
                    (run_base - base) * 1000 + round(ev.start_us * 1000) if run_base
                    else round((ev.start_us - base) * 1000),
                    round(dur * 1000), round(ev.wait_us * 1000)))
            self.tasks.tasks.maybe_flush()
        if self.steps is not None:
            start_ns = run_base * 1000 + round(ev.start_us * 1000) if run_base \
                else us_to_ns(ev.start_us)
            self.steps.on_task(ev.run.model_id, ev.op.name, start_ns, round(dur * 1000), comm)
        if comm and self.comm is not None:
            self.comm.on_task(ev.op.name, ev.op.op_type, start, dur, ev.bytes_moved, ev.comm)
        if self.samplers:
            for _, sampler in self.samplers:
                sampler.add(start, dur, ev.bytes_moved, comm)
        if self.memory is not None and self.eff.task_memory:
            t0 = run_base * 1000 + round(ev.start_us * 1000) if run_base \
                else us_to_ns(ev.start_us)
            self.memory.on_tasks(ev.run.model_id, ev.run.step, (ev.op.name,), (t0,),
                                 (t0 + round(dur * 1000),))

    def _prepared(self, table: TaskTable) -> _Prepared:
        prep = self._tables.get(table.key)
        if prep is None:
            if len(self._tables) >= 256:
                self._tables.clear()
            prep = self._tables[table.key] = _Prepared.of(table, self.tasks, self.eff)
        return prep

    def on_step_tasks(self, ev: StepTasksEvent) -> None:
        """Every task of a step at once (the hot path: one call per step, vectorised); a
        whole-step record also carries the step's boundaries and host calls."""
        whole = ev.begin_us is not None and ev.end_us is not None
        run_base = ev.run.time_base_us
        if whole:
            self._bound(ev.run, "begin", ev.begin_us)  # type: ignore[arg-type]
            api, copies = self.api, self.record_tasks
            if api is not None or copies:
                step = ev.run.step
                for call in ev.calls:
                    start, dur = call[1], call[2]
                    start_ns = (run_base * 1000 + round(start * 1000) if run_base
                                else us_to_ns(start))
                    if api is not None:
                        api.on_values("runtime", call[0], start_ns, dur)
                    if copies and len(call) > 3:
                        self._copy(step, call[3], call[4], start_ns, dur)
        self._tasks_of_step(ev, run_base)
        if whole:
            self._bound(ev.run, "end", ev.end_us)  # type: ignore[arg-type]

    def on_step_batch(self, ev: StepBatchEvent) -> None:
        """Consecutive whole-step records as columns: the step times, the copies' device
        tasks and every task record of the batch in a few numpy operations. The
        per-step collectors (step trace, memory, API calls, samplers) and a backend
        without a time base take the steps one by one (:meth:`StepBatchEvent.records`),
        so both paths record the same rows."""
        run_base = ev.run.time_base_us
        if (self.steps is not None or self.memory is not None or self.api is not None
                or self.samplers or not run_base or not len(ev.steps)):
            for record in ev.records():
                self.on_step_tasks(record)
            return
        base_ns = run_base * 1000
        steps = ev.steps
        prep = self._prepared(ev.table)
        # the task records first: a write that fails (disk full, a storage warning made an
        # error) leaves no step time or copy claiming steps whose tasks are missing
        if prep.n and self.record_tasks:
            base = self.base_us
            if base is None:
                base = self.base_us = run_base
            shift = np.zeros((len(steps), 1, 5), dtype=np.int64)
            shift[:, 0, 1] = steps
            shift[:, 0, 2] = (run_base - base) * 1000 + ev.start_ns
            block = np.empty((len(steps), prep.n, 5), dtype=np.int64)
            np.add(prep.rec, shift, out=block)  # every step's records in one pass
            self.tasks.tasks.extend_block(block.reshape(-1, 5))
            if self.guard.stopped:  # collection stopped while writing them
                return
        if self._step_open:
            for step in steps.tolist():
                self._step_open.pop((ev.run.model_id, step), None)
        # _bound: an integer ns time is base * 1000 + round(µs * 1000) (rint: half to even)
        times = np.empty((len(steps), 3), dtype=np.int64)
        times[:, 0] = steps + 1
        times[:, 1] = np.rint(ev.begin_us * 1000).astype(np.int64) + base_ns
        times[:, 2] = np.rint(ev.end_us * 1000).astype(np.int64) + base_ns
        self.step_times.frombytes(times.tobytes())
        if self.record_tasks:
            copies = [(j, c) for j, c in enumerate(ev.calls) if len(c) > 3]
            if copies:  # _copy, per copy column; rows in step order
                rows = np.empty((len(steps), len(copies), 5), dtype=np.int64)
                for k, (j, (_, call_us, direction, nbytes)) in enumerate(copies):
                    start = np.rint(ev.call_start_us[:, j] * 1000).astype(np.int64) + base_ns
                    dur_ns = min(self._copy_device_ns(nbytes), round(call_us * 1000))
                    rows[:, k, 0] = steps
                    rows[:, k, 1] = self.copies.operation(direction)
                    rows[:, k, 2] = nbytes
                    rows[:, k, 3] = start + round(call_us * 1000) - dur_ns
                    rows[:, k, 4] = dur_ns
                self.copies.extend_rows(rows)
        if self.comm is not None and prep.comm_idx:
            tasks = ev.table.tasks
            off = prep.offset_us
            for start_ns in ev.start_ns.tolist():
                start0 = run_base + start_ns / 1000
                for i in prep.comm_idx:
                    task = tasks[i]
                    self.comm.on_task(task.op.name, task.op.op_type, start0 + off[i],
                                      task.duration_us, task.bytes_moved, task.comm)

    def _tasks_of_step(self, ev: StepTasksEvent, run_base: int) -> None:
        prep = self._prepared(ev.table)
        if not prep.n:
            return
        if self.record_tasks:
            base = self.base_us
            if base is None:
                base = self.base_us = run_base or ev.start_ns // 1000
            # one broadcast add into the table's own buffer: step and start shift per row
            np.add(prep.rec, (0, ev.run.step, (run_base - base) * 1000 + ev.start_ns
                              if run_base else ev.start_ns - base * 1000, 0, 0), out=prep.buf)
            self.tasks.tasks.extend_array(prep.buf)
        start0 = run_base + ev.start_ns / 1000  # absolute µs float: aggregates only
        start0_ns = run_base * 1000 + ev.start_ns
        tasks = ev.table.tasks
        off = prep.offset_us
        if self.steps is not None:
            model = ev.run.model_id
            for i in prep.trace_idx:
                task = tasks[i]
                self.steps.on_task(model, task.op.name, start0_ns + prep.offset_ns[i],
                                   prep.duration_ns[i], prep.comm[i])
        if self.comm is not None:
            for i in prep.comm_idx:
                task = tasks[i]
                self.comm.on_task(task.op.name, task.op.op_type, start0 + off[i],
                                  task.duration_us, task.bytes_moved, task.comm)
        if self.samplers:
            for i, task in enumerate(tasks):
                for _, sampler in self.samplers:
                    sampler.add(start0 + off[i], task.duration_us, task.bytes_moved,
                                prep.comm[i])
        if self.memory is not None and self.eff.task_memory:
            starts = ev.table.offset_ns + start0_ns
            self.memory.on_tasks(ev.run.model_id, ev.run.step, prep.names, starts.tolist(),
                                 (starts + ev.table.duration_ns).tolist())

    @property
    def base_ns(self) -> int:
        """The time base in integer ns since the epoch (0 before the first task)."""
        return (self.base_us or 0) * 1000

    def on_step(self, ev: StepEvent) -> None:
        """A step boundary (kept as integer ns for STEP_TIME and the per-step overlap)."""
        self._bound(ev.run, ev.phase, ev.time_us)

    def _bound(self, run: Any, phase: str, time_us: float) -> None:
        base = run.time_base_us
        ns = base * 1000 + round(time_us * 1000) if base else us_to_ns(time_us)
        key = (run.model_id, run.step)
        if phase == "begin":
            self._step_open[key] = ns
        else:
            begin = self._step_open.pop(key, None)
            if begin is not None:
                self.step_times.extend((run.step + 1, begin, ns))
        if self.steps is not None:
            self.steps.on_bound(run.model_id, run.step, phase, ns)
        if self.memory is not None:
            self.memory.on_bound(run.model_id, run.step, phase, ns)
        if phase == "end" and self.samplers:
            absolute = base + time_us
            for _, sampler in self.samplers:
                sampler.advance(absolute)

    def on_api(self, ev: ApiCall) -> None:
        """A host API call (its start kept as exact integer ns since the epoch); a copy is
        also a device task (:mod:`geplug.profiling.memcpy`)."""
        copy = ev.copy if self.record_tasks else None
        if self.api is not None or copy is not None:
            base = ev.run.time_base_us
            start_ns = base * 1000 + round(ev.start_us * 1000) if base else us_to_ns(ev.start_us)
            if self.api is not None:
                self.api.on_call(ev, start_ns)
            if copy is not None:
                self._copy(ev.run.step, copy[0], copy[1], start_ns, ev.duration_us)

    def _copy(self, step: int, direction: str, nbytes: int, start_ns: int,
              call_us: float) -> None:
        """A copy's device task: the device model's copy cost (``copy_us``: the product's
        fixed cost plus bytes over its host link), ending with the host call that waits for
        it; a call longer than that spent the rest issuing it."""
        dur_ns = self._copy_device_ns(nbytes)
        end_ns = start_ns + round(call_us * 1000)
        if dur_ns > end_ns - start_ns:
            dur_ns = end_ns - start_ns
        self.copies.add(step, direction, nbytes, end_ns - dur_ns, dur_ns)

    def _copy_device_ns(self, nbytes: int) -> int:
        """The device model's time for a copy of ``nbytes`` (``copy_us``), ns; cached."""
        dur_ns = self._copy_ns.get(nbytes)
        if dur_ns is None:
            dur_ns = self._copy_ns[nbytes] = round(copy_us(nbytes, self.product) * 1000)
        return dur_ns

    def on_marker(self, ev: MarkerEvent) -> None:
        """A user marker."""
        if self.markers is not None:
            self.markers.on_marker(ev)

    # -- closing -------------------------------------------------------------------------

    def close(self) -> None:
        """Stop sampling, close raw files, write every summary; idempotent."""
        if self.closed:
            return
        self.closed = True
        self.host.stop()
        for _, sampler in self.samplers:
            sampler.close()
        logs: list[RawLog | RecordLog] = [self.tasks.tasks, self.tasks.ops, self.host.log]
        logs += [s.log for _, s in self.samplers]
        for part in (self.steps, self.api, self.markers):
            if part is not None:
                logs.append(part.log)
        for log in logs:
            log.close()
        try:
            self._finish()
        except OSError as exc:
            warnings.warn(
                storage.ProfilingStorageWarning(
                    f"profiling summaries under {self.root!r} are incomplete: {exc}; the raw "
                    "data under device_*/data and host/data stays readable"
                ),
                stacklevel=2,
            )
        finally:
            self.guard.finish()

    def _finish(self) -> None:
        """Write the notice, the summaries and the end info (skipped when the disk is low)."""
        self.guard.register(self.host.write_notice(self.host_dir), ageable=False)
        if self.guard.disk_is_low():
            if not self.guard.stopped:
                self.guard.stop(f"20 MB or less free on the disk of {self.root!r}")
            warnings.warn(
                storage.ProfilingStorageWarning(
                    f"profiling summaries were not written to {self.root!r}: the disk has 20 MB "
                    "or less free; the raw data under device_*/data and host/data is complete"
                ),
                stacklevel=3,
            )
            return
        from geplug.profiling.export import export

        export(self)
        end = os.path.join(self.device_dir, f"end_info.{self.device_id}")
        write_json(end, {"collectionTimeEnd": str(int(time.time() * 1e6))})
        self.guard.register(end, ageable=False)


