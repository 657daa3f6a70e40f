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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from geplug.profiling import storage
from geplug.profiling.api_collector import ApiCollector
from geplug.profiling.device_samplers import SAMPLER_ITEMS, WindowSampler
from geplug.profiling.hccl import CommCollector
from geplug.profiling.host_sampler import HostSampler
from geplug.profiling.layout import ANALYZE, OUTPUT_DIR, new_prof_name, write_json
from geplug.profiling.markers import MarkerCollector
from geplug.profiling.options import Effective
from geplug.profiling.rawlog import DEFAULT_SLICE_BYTES, RawLog
from geplug.profiling.records import RecordLog
from geplug.profiling.step_trace import StepTraceCollector
from geplug.profiling.task_collector import TaskCollector

if TYPE_CHECKING:
    from geplug.events import ApiCall, GraphEvent, MarkerEvent, StepEvent, TaskEvent
    from geplug.runtime.system import System

__all__ = ["ProfilingSession"]

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
        for option, kind in SAMPLER_ITEMS.items():
            freq = getattr(eff, option)
            if freq:
                self.samplers.append((kind, WindowSampler(option, freq, log(kind + "_sample"))))
        self.host = HostSampler(eff.host_sys, eff.host_sys_usage, eff.host_freq,
                                log("host_sample", hdata))
        self.host.start()
        self._handlers: dict[str, Callable[[Any], None]] = {
            "task": self.on_task,
            "graph": self.on_graph,
            "step": self.on_step,
            "api": self.on_api,
            "marker": self.on_marker,
        }

    # -- metadata ------------------------------------------------------------------------

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
        """A compiled graph: validate fp/bp names."""
        if self.steps is not None:
            self.steps.on_graph(ev)

    def on_task(self, ev: TaskEvent) -> None:
        """A device task (the hot path: one call per op per step)."""
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
            self.steps.on_task(ev.run.model_id, ev.op.name, start, dur, comm)
        if comm and self.comm is not None:
            self.comm.on_task(ev.op.name, ev.op.op_type, start, dur, ev.bytes_moved, ev.comm)
        if self.samplers:
            for _, sampler in self.samplers:
                sampler.add(start, dur, ev.bytes_moved, comm)

    @property
    def base_ns(self) -> int:
        """The time base in integer ns since the epoch (0 before the first task)."""
        return (self.base_us or 0) * 1000

    def on_step(self, ev: StepEvent) -> None:
        """A step boundary."""
        if ev.run.time_base_us:
            ev = attrs.evolve(ev, time_us=ev.run.time_base_us + ev.time_us)
        if self.steps is not None:
            self.steps.on_step(ev)
        if ev.phase == "end":
            for _, sampler in self.samplers:
                sampler.advance(ev.time_us)

    def on_api(self, ev: ApiCall) -> None:
        """A host API call."""
        if ev.run.time_base_us:
            ev = attrs.evolve(ev, start_us=ev.run.time_base_us + ev.start_us)
        if self.api is not None:
            self.api.on_call(ev)

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


