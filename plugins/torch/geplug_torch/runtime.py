"""The torch backend's runtime: what ``geplug_init_system`` returns for ``backend="torch"``.

It owns the training state of one system (the iteration counter, the shared device clock),
compiles the graphs ``torch.compile`` hands to :func:`geplug_torch.backend` and emits the
events of each run (:mod:`geplug_torch.emit`) to the system's writers and, while a
:mod:`geplug_torch.profiler` is recording, to the profiler's own system.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from geplug.events import GraphEvent, RunInfo, StepEvent

if TYPE_CHECKING:
    from geplug.runtime.system import System
    from geplug_torch.model import TrainingModel

__all__ = ["TorchRuntime"]


class TorchRuntime:
    """Training state and compiled models of one system (see the module docstring)."""

    def __init__(self, system: System) -> None:
        from geplug_torch._torch import require_torch
        from geplug_torch.steps import install_optimizer_hook

        require_torch("the geplug torch backend")
        self.system = system
        self.models: list[TrainingModel] = []
        self.static_models: list[Any] = []
        """Models compiled through the backend contract (:mod:`geplug_torch.static`)."""
        self.iteration = 0
        """The current training iteration (0-based; dump_step counts these)."""
        self.saw_training_step = False
        """An optimizer or profiler step was seen (inference calls stop advancing steps)."""
        self.user_config: Any = None
        """The SessionConfig as the user gave it (a profiler's system starts from it)."""
        self.clock_us = 0.0
        """The compute stream's clock (µs after ``base_us``)."""
        self.comm_free_us = 0.0
        """When the communication stream is next free: collectives run there, beside
        compute (:mod:`geplug_torch.distributed.timing`)."""
        self.base_us = int(time.time() * 1e6)
        self._open: dict[int, tuple[Any, int]] = {}
        """model id -> (the model, the iteration whose StepEvent begin was emitted); the
        model is a :class:`~geplug_torch.model.TrainingModel` or the record communication
        tasks of an eager job are filed under."""
        self._lock = threading.RLock()
        self._advanced_since_profiler_step = False
        self._compute_factor: float | None = None
        from geplug_torch.memory import DeviceMemory

        self.memory = DeviceMemory(system.product, system.config.config.soc_version or "",
                                   system.device_id)
        """The device memory of the job's graphs, parameters, gradients, optimizer states
        and saved activations (:mod:`geplug_torch.memory`)."""
        install_optimizer_hook(self)

    # -- compile ---------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The backend name (the plugin name of :mod:`geplug_torch.hooks`)."""
        return "torch"

    def compile(self, model: Any, *, name: str = "", **options: Any) -> Any:
        """Compile a :class:`~geplug_torch.static.TorchModel` (a module and its inputs) for
        the product: the backend contract's path (``geplug.backend``). Training goes through
        ``torch.compile(model, backend=geplug_torch.backend(...))``."""
        from geplug.errors import CompileError
        from geplug_torch.static import StaticModel, TorchModel

        unknown = sorted(set(options) - {"fusion"})
        if unknown:
            raise CompileError(f"unknown compile option {unknown[0]!r}; the torch backend "
                               "accepts name= and fusion=", node="")
        fusion = options.get("fusion", True)
        if not isinstance(fusion, bool):
            raise CompileError(f"compile option fusion={fusion!r}: expected True (the "
                               "product's fusion patterns) or False (one task per op)", node="")
        if not isinstance(model, TorchModel):
            raise CompileError(
                f"the torch backend compiles geplug_torch.TorchModel(module, inputs=...), not "
                f"{type(model).__name__} objects: wrap the module with its inputs, or train "
                "it with torch.compile(model, backend=geplug_torch.backend(product=..., "
                "config=...)); ONNX models are compiled by the simulator backend", node=name)
        compiled = StaticModel(self, model, name=name, fusion=fusion)
        self.static_models.append(compiled)
        return compiled

    def sample_models(self) -> list[Any]:
        """Small torch models with inputs (the backend conformance suite, demos)."""
        from geplug_torch.samples import sample_models

        return sample_models()

    def add_model(self, model: TrainingModel) -> None:
        """Register a compiled model (its ops are validated by the profiling writers when
        its graphs are complete)."""
        with self._lock:
            self.models.append(model)

    def announce(self, model: TrainingModel) -> None:
        """Emit the GraphEvent of ``model`` (forward and backward ops) to every profiler."""
        for system in self.profile_systems():
            self._announce(model, system)

    def announce_all(self, system: System) -> None:
        """Emit every registered model's GraphEvent to ``system`` (a profiler's system opened
        after the models were compiled: its writers need their ops and memory plans), the
        static models' (:mod:`geplug_torch.static`) included."""
        with self._lock:
            models = list(self.models)
            models += [s._holder for s in self.static_models if not s.closed]
        for model in models:
            if model.graphs:
                self._announce(model, system)

    def _announce(self, model: TrainingModel, system: System) -> None:
        system.emit_profile(GraphEvent(run=self.run_info(model, -1, system),
                                       ops=model.records(), memory_bytes=model.memory_bytes,
                                       memory_plans=model.memory_plans))

    # -- events ----------------------------------------------------------------------------

    @property
    def profilers(self) -> list[Any]:
        """The recording :class:`geplug_torch.profiler.profile` objects."""
        from geplug_torch.steps import active_profilers

        return [p for p in active_profilers() if p.recording]

    def profile_systems(self) -> list[System]:
        """The systems profiling events go to: this one when its config turns profiling on,
        and every active profiler's."""
        targets = [self.system] if self.system.profiling_enabled else []
        for prof in self.profilers:
            sub = prof.system_for(self)
            if sub is not None:
                targets.append(sub)
        return targets

    def run_info(self, model: Any, step: int, system: System | None = None) -> RunInfo:
        """The RunInfo of ``model`` at ``step`` for events to ``system`` (default: own)."""
        return RunInfo(system=system or self.system, model_name=model.name,
                       model_id=model.model_id, step=step, device_id=self.system.device_id,
                       dynamic_shape=model.dynamic_shape, time_base_us=self.base_us)

    @property
    def compute_factor(self) -> float:
        """How many times its calibrated time this rank's device compute takes: in a job of
        2+ ranks, its ``GEPLUG_SIM_SLOW_RANK`` factor times its rank-to-rank variation
        (:func:`geplug_torch.distributed.rankenv.rank_compute_factor`); 1.0 alone."""
        if self._compute_factor is None:
            import os

            from geplug_torch.distributed.rankenv import rank_compute_factor

            self._compute_factor = rank_compute_factor(os.environ)
        return self._compute_factor

    def now(self) -> float:
        """The simulated device clock, µs after ``base_us``.

        It advances only by simulated time (op durations, the gradient refresh): the host's
        own speed - the CPU running the kernels - never shows in device times, so an
        iteration's time is its forward, backward and refresh on the product.
        """
        return self.clock_us

    def wait_comm(self, end_us: float | None = None) -> None:
        """The compute stream waits for the communication stream: for the collective ending
        at ``end_us`` (its work's ``wait()``), or for every collective issued (``None``: the
        optimizer reads the reduced gradients, the step ends)."""
        with self._lock:
            until = self.comm_free_us if end_us is None else end_us
            self.clock_us = max(self.clock_us, until)

    # -- steps -----------------------------------------------------------------------------

    def begin(self, model: Any, phase: str) -> int:
        """The iteration a run of ``model``'s ``phase`` graph belongs to (opening its step);
        ``phase`` ``"communication"``: a collective filed under ``model``'s steps."""
        with self._lock:
            if phase in ("forward", "inference") and model.backward_done_in == self.iteration:
                self._advance()  # a forward after this iteration's backward: a new iteration
            step = self.iteration
            opened = self._open.get(model.model_id)
            if opened is None or opened[1] != step:
                self._open[model.model_id] = (model, step)
                t = self.now()
                for prof in self.profilers:
                    prof.record_step(self, model, step, "begin", t)
                for system in self.profile_systems():
                    system.emit_profile(StepEvent(run=self.run_info(model, step, system),
                                                  phase="begin", time_us=t))
            return step

    def finish(self, model: TrainingModel, phase: str, step: int) -> None:
        """After a run: an inference call is a step of its own until training steps appear."""
        with self._lock:
            if phase == "backward":
                model.backward_done_in = step
            elif phase == "inference" and not self.saw_training_step:
                self._advance()

    def optimizer_step(self, optimizer: Any) -> None:
        """``optimizer.step()`` ran: the gradient refresh ends the iteration."""
        with self._lock:
            iteration = self.iteration
            if self._open:
                self.saw_training_step = True
                self.wait_comm()  # the update reads the reduced gradients
                self.clock_us = (self.now() + self._refresh_us(optimizer)
                                 * self.compute_factor)
                self._advance()
                self._advanced_since_profiler_step = True
            # every optimizer's states count, the second of a step too (its iteration has
            # ended already): NpuOutOfMemoryError out of step() if they do not fit
            self.memory.after_optimizer_step(optimizer, iteration)

    def profiler_step(self) -> None:
        """The profiler's ``step()``: ends the iteration unless optimizer.step() already did."""
        with self._lock:
            self.saw_training_step = True
            if not self._advanced_since_profiler_step and self._open:
                self._advance()
            self._advanced_since_profiler_step = False

    def close_open_steps(self) -> None:
        """End the open steps now (a profiler stops mid-iteration)."""
        with self._lock:
            if self._open:
                self._advance()

    def _advance(self) -> None:
        self.wait_comm()  # a step ends when both streams are done (its makespan)
        t = self.now()
        opened = list(self._open.values())
        self._open.clear()
        for model, step in opened:
            for prof in self.profilers:
                prof.record_step(self, model, step, "end", t)
            for system in self.profile_systems():
                system.emit_profile(StepEvent(run=self.run_info(model, step, system),
                                              phase="end", time_us=t))
        self.iteration += 1

    def _refresh_us(self, optimizer: Any) -> float:
        """Modelled device time of the optimizer's update (one fused vector op per tensor:
        parameter, gradient and two moments read, parameter and moments written)."""
        from geplug_torch.cost import refresh_time_us

        return refresh_time_us(self.system.product, optimizer)

    def close(self) -> None:
        """End the open step (the last iteration's events are complete)."""
        with self._lock:
            if self._open:
                self._advance()
            for model in self.models:
                model.close()
            for static in self.static_models:
                static.close()
            self.static_models.clear()
