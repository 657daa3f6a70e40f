"""``geplug_torch.profiler.profile``: torch_npu.profiler.profile's signature and layout.

A collection runs from the first recorded step of the schedule (or ``start()`` without a
schedule) to the end of its active window (or ``stop()``). For it the profiler opens, per
torch runtime, a geplug system of the same product and configuration with profiling on
and ``profiling_options.output`` set to the collection's ``*_ascend_pt`` directory (through
``geplug.open_device`` on the runtime's device for a product without ``initialize_system``,
an inference product: torch_npu profiles those too); the runtime sends that system the
same task and step events it sends its own (the core's writers then produce ``PROF_*``).
When the collection ends those systems are shut down and ``ASCEND_PROFILER_OUTPUT/`` is
derived from ``PROF_*`` and the framework-op records (:mod:`geplug_torch.profiler.ascend_pt`);
then ``on_trace_ready(prof)`` is called.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import attrs

from geplug.errors import ProfilingError
from geplug_torch.profiler.options import (
    ProfilerAction,
    ProfilerActivity,
    TraceHandler,
    _ExperimentalConfig,
    tensorboard_trace_handler,
)

if TYPE_CHECKING:
    from geplug.runtime.system import System
    from geplug_torch.graph import CompiledGraph
    from geplug_torch.model import TrainingModel
    from geplug_torch.runtime import TorchRuntime

__all__ = ["PROFILE_MEMORY_FREQ", "Collection", "CommRun", "OpRun", "StepMark", "profile"]

PROFILE_MEMORY_FREQ = "50"
"""The memory sampling rate torch_npu sets with ``profile_memory=True`` (its profiler
manager sets ``ACL_PROF_SYS_HARDWARE_MEM_FREQ`` to "50")."""


@attrs.frozen
class OpRun:
    """One run of a compiled graph during a collection: its ops start at ``starts``."""

    model_id: int
    model_name: str
    graph: CompiledGraph
    step: int
    starts: tuple[float, ...]
    base_us: int
    device_id: int


@attrs.frozen
class CommRun:
    """One collective during a collection: on the communication stream from ``start_us``
    (this rank's arrival) to ``end_us``, filed under ``step``."""

    model_id: int
    step: int
    name: str
    start_us: float
    end_us: float
    base_us: int


@attrs.frozen
class StepMark:
    """A step boundary of one model on the device clock (µs after ``base_us``)."""

    model_id: int
    step: int
    phase: str
    time_us: float
    base_us: int


class Collection:
    """The state of one collection (one ``*_ascend_pt`` directory)."""

    def __init__(self, prof: profile, root: str) -> None:
        self.prof = prof
        self.root = root
        self.systems: dict[int, System] = {}
        self.runs: list[OpRun] = []
        self.comms: list[CommRun] = []
        self.steps: list[StepMark] = []
        self.start_ns = time.time_ns()
        self.start_perf = time.perf_counter_ns()
        self.lock = threading.Lock()

    def system_for(self, runtime: TorchRuntime) -> System | None:
        """The profiling system of ``runtime`` (opened on first use)."""
        if ProfilerActivity.NPU not in self.prof.activities:
            return None
        key = id(runtime)
        opened = False
        with self.lock:
            system = self.systems.get(key)
            if system is None:
                system = self.systems[key] = self._open(runtime)
                opened = True
        if opened:
            runtime.announce_all(system)
        return system

    def _open(self, runtime: TorchRuntime) -> System:
        """The profiling system of ``runtime``: its product, opened by the API the product
        serves (an inference product's through ``open_device``, on the runtime's device)."""
        from geplug.config.model import ProfilingOptions
        from geplug_torch._open import open_system

        base = runtime.system
        opts = self.prof.experimental_config.profiling_options(self.root,
                                                               self.prof.activities)
        if self.prof.profile_memory and ProfilerActivity.NPU in self.prof.activities:
            # torch_npu: profile_memory turns on ACL_PROF_TASK_MEMORY and samples the
            # device memory at 50 Hz (ACL_PROF_SYS_HARDWARE_MEM_FREQ "50")
            opts.update(task_memory="on", sys_hardware_mem_freq=PROFILE_MEMORY_FREQ)
        from geplug.config.defaults import graph_run_mode
        from geplug.config.model import SessionConfig

        user = runtime.user_config or SessionConfig(front_end="python")
        if graph_run_mode(user, base.product)[0] == 0 or \
                not base.product.profiling.training_trace:
            # no iteration trace in online inference (an inference product's run mode) or
            # on a product without one: GE refuses training_trace there (R21)
            opts.pop("training_trace", None)
        cfg = attrs.evolve(user, profiling_mode=True,
                           profiling_options=ProfilingOptions(**opts))
        return open_system(base.product, cfg, manager=base.manager, device_id=base.device_id)


class profile:
    """torch_npu.profiler.profile (see the module docstring).

    ``activities`` default both CPU and NPU; ``schedule`` from
    :func:`~geplug_torch.profiler.schedule` (none: record from ``start()`` to ``stop()``);
    ``on_trace_ready`` usually :func:`~geplug_torch.profiler.tensorboard_trace_handler`,
    whose directory receives each collection; ``record_shapes`` adds Input Dims to the
    framework ops; ``profile_memory`` collects the CANN operator memory and the device
    memory (task_memory and sys_hardware_mem at 50 Hz, as torch_npu asks CANN) and writes
    ``operator_memory.csv``, ``memory_record.csv`` and ``npu_module_mem.csv`` (and the
    ``OP_MEMORY`` / ``MEMORY_RECORD`` / ``NPU_MODULE_MEM`` tables of the DB export) from the
    compiled graphs' memory plans; ``with_stack`` is accepted (call stacks are not simulated:
    Call Stack is empty).
    """

    def __init__(
        self,
        activities: Iterable[ProfilerActivity] | None = None,
        schedule: Callable[[int], ProfilerAction] | None = None,
        on_trace_ready: Callable[[Any], Any] | None = None,
        record_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_flops: bool = False,
        with_modules: bool = False,
        experimental_config: _ExperimentalConfig | None = None,
        use_cuda: bool | None = None,
    ) -> None:
        from geplug_torch._torch import require_torch

        require_torch("geplug_torch.profiler.profile")
        acts = frozenset(activities) if activities is not None else frozenset(ProfilerActivity)
        for a in acts:
            if not isinstance(a, ProfilerActivity):
                raise ProfilingError(f"profile(activities=...): {a!r} is not a "
                                     "ProfilerActivity; use ProfilerActivity.CPU / .NPU")
        if experimental_config is not None and not isinstance(experimental_config,
                                                              _ExperimentalConfig):
            raise ProfilingError("profile(experimental_config=...) must be a "
                                 "geplug_torch.profiler._ExperimentalConfig, got "
                                 f"{type(experimental_config).__name__}")
        self.activities = acts
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.experimental_config = experimental_config or _ExperimentalConfig()
        self.step_num = 0
        self.outputs: list[str] = []
        """The ``*_ascend_pt`` directories written, in order."""
        self._action = ProfilerAction.NONE
        self._collection: Collection | None = None
        self._started = False

    # -- torch_npu API ---------------------------------------------------------------------

    @property
    def recording(self) -> bool:
        """Whether a collection is open."""
        return self._collection is not None

    def start(self) -> None:
        """Start profiling (the schedule's step 0 begins)."""
        from geplug_torch.steps import add_profiler

        if self._started:
            return
        self._started = True
        add_profiler(self)
        self._action = self.schedule(self.step_num) if self.schedule else \
            ProfilerAction.RECORD
        if self._action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._begin()

    def step(self) -> None:
        """End the current step (training iteration) and move the schedule on."""
        from geplug_torch.steps import runtimes

        for runtime in runtimes():
            runtime.profiler_step()
        prev = self._action
        self.step_num += 1
        new = self.schedule(self.step_num) if self.schedule else ProfilerAction.RECORD
        if prev == ProfilerAction.RECORD_AND_SAVE and self._collection is not None:
            self._finish()
        self._action = new
        if new in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE) and \
                self._collection is None:
            self._begin()

    def stop(self) -> None:
        """Stop profiling; an open collection is written and handed to on_trace_ready."""
        from geplug_torch.steps import remove_profiler, runtimes

        if not self._started:
            return
        if self._collection is not None:
            for runtime in runtimes():
                runtime.close_open_steps()
            self._finish()
        remove_profiler(self)
        self._started = False

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def export_chrome_trace(self, path: str) -> str:
        """Copy the last collection's ``trace_view.json`` to ``path``."""
        import shutil

        if not self.outputs:
            raise ProfilingError("export_chrome_trace: no collection has been written yet; "
                                 "call it after stop() or from on_trace_ready")
        src = os.path.join(self.outputs[-1], "ASCEND_PROFILER_OUTPUT", "trace_view.json")
        shutil.copyfile(src, path)
        return path

    # -- runtime side ----------------------------------------------------------------------

    def system_for(self, runtime: TorchRuntime) -> System | None:
        """The system profiling events of ``runtime`` go to (``None``: not recording NPU)."""
        c = self._collection
        return c.system_for(runtime) if c is not None else None

    def record_ops(self, runtime: TorchRuntime, model: TrainingModel, graph: CompiledGraph,
                   step: int, starts: list[float]) -> None:
        """One graph run's op start times (the framework-op track of trace_view.json)."""
        c = self._collection
        if c is not None:
            c.runs.append(OpRun(model.model_id, model.name, graph, step, tuple(starts),
                                runtime.base_us, runtime.system.device_id))

    def record_comm(self, runtime: TorchRuntime, model: Any, step: int, name: str,
                    start_us: float, end_us: float) -> None:
        """One collective's span on the communication stream (communication.json's steps,
        step_trace_time.csv's communication columns)."""
        c = self._collection
        if c is not None:
            c.comms.append(CommRun(model.model_id, step, name, start_us, end_us,
                                   runtime.base_us))

    def record_step(self, runtime: TorchRuntime, model: Any, step: int, phase: str,
                    t: float) -> None:
        """A step boundary of ``model`` (step_trace_time.csv, ProfilerStep#N)."""
        c = self._collection
        if c is not None:
            c.steps.append(StepMark(model.model_id, step, phase, t, runtime.base_us))

    # -- collections -----------------------------------------------------------------------

    def _handler(self) -> TraceHandler:
        h = self.on_trace_ready
        return h if isinstance(h, TraceHandler) else tensorboard_trace_handler()

    def _begin(self) -> None:
        handler = self._handler()
        now = time.time()
        ts17 = time.strftime("%Y%m%d%H%M%S", time.localtime(now)) + f"{int(now * 1000) % 1000:03d}"
        root = os.path.join(handler.dir_name, f"{handler.worker_name}_{ts17}_ascend_pt")
        try:
            os.makedirs(root, exist_ok=True)
        except OSError as exc:
            raise ProfilingError(f"cannot create the profiler output {root!r} "
                                 f"({exc.strerror or exc}); pass tensorboard_trace_handler a "
                                 "writable directory") from None
        self._collection = Collection(self, root)

    def _finish(self) -> None:
        from geplug_torch.profiler.ascend_pt import write_ascend_pt

        c = self._collection
        self._collection = None
        if c is None:
            return
        errors: list[BaseException] = []
        for system in c.systems.values():
            try:
                system.shutdown()
            except Exception as exc:  # every system is closed before the first is raised
                errors.append(exc)
        if errors:
            raise errors[0]
        write_ascend_pt(c)
        self.outputs.append(c.root)
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)
