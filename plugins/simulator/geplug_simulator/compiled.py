"""A compiled model: one onnxruntime session of the rewritten graph, plus its op facts.

``run(inputs, step=None)`` checks the feeds (:mod:`geplug_simulator.inputs`), runs the
session and emits the events the configuration asks for (:mod:`geplug_simulator.emit`): data
dump events on dump steps (from a second session exposing every op's device tensors),
profiling events on the simulated device timeline, and an exception dump plus
:class:`~geplug.errors.AICoreError` when a fault is injected (``inject_fault(node)`` or env
``GEPLUG_SIM_FAULT_NODE``, a fault-injection aid).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from geplug.backend import TensorSpec
from geplug.device import DeviceModel
from geplug.errors import CompileError, RunError
from geplug.events import OpRecord
from geplug.precision import OpDecision
from geplug.runtime.result import RunResult
from geplug_simulator.cost import OpCost
from geplug_simulator.emit import FAULT_ENV, StepEmitter, fault_node, wants_tensors
from geplug_simulator.importer import ImportedModel, TensorType
from geplug_simulator.inputs import InputError, check_inputs
from geplug_simulator.rewrite import RewrittenModel

if TYPE_CHECKING:
    import onnxruntime

    from geplug.runtime.system import System

__all__ = ["FAULT_ENV", "CompiledModel", "InputError"]


class CompiledModel:
    """A model compiled for one product; see the module docstring.

    Public attributes: ``name``, ``system``, ``decisions`` (one
    :class:`~geplug.precision.OpDecision` per node, in execution order), ``op_times``
    (simulated device µs per node), ``simulated_time_us`` (one step), ``costs`` (FLOPs,
    bytes, block_dim per node), ``ops`` (the :class:`~geplug.events.OpRecord` of each node),
    ``kernel_meta_files``, ``model_id``.
    """

    def __init__(
        self,
        *,
        system: System,
        imported: ImportedModel,
        decisions: tuple[OpDecision, ...],
        rewritten: RewrittenModel,
        session: onnxruntime.InferenceSession,
        costs: Mapping[str, OpCost],
        records: tuple[OpRecord, ...],
        model_id: int,
        kernel_meta_files: tuple[str, ...],
        session_factory: Any,
        device: DeviceModel,
        notes: tuple[str, ...] = (),
        fusion: bool = True,
    ) -> None:
        self.system = system
        self.imported = imported
        self.name = imported.name
        self.decisions = decisions
        self.rewritten = rewritten
        self.ops = records
        self.model_id = model_id
        self.kernel_meta_files = kernel_meta_files
        self.device = device
        """The device model (geplug.device): tasks, schedule, memory plan, graph passes."""
        self.fusion = fusion
        """Whether the product's fusion patterns were applied (compile option fusion=)."""
        self.notes = notes
        """What compile wants the user to know (dimensions left to run time)."""
        self.types: Mapping[str, TensorType] = imported.types
        """Tensor types and shapes (symbolic dims fixed by the last fed shapes)."""
        self._session: onnxruntime.InferenceSession | None = session
        self._dump_session: onnxruntime.InferenceSession | None = None
        self._dump_names: list[str] = []
        self._factory = session_factory
        self._step = 0
        self._fault: str | None = None
        self._fault_env_warned: set[str] = set()
        """GEPLUG_SIM_FAULT_NODE values already reported as naming no node of this model."""
        self._lock = threading.Lock()
        self._records = {r.name: r for r in records}
        self._node_task = dict(device.node_task)
        # static per compiled model, so a step does not rebuild them: what a fault may name,
        # the AI CPU nodes, the output names
        self._fault_targets = {**self._node_task, **self._records}
        self._aicpu = tuple(d.node for d in decisions if d.engine == "AI_CPU")
        self._outputs = list(imported.outputs)
        self._by_node = {d.node: d for d in decisions}
        self._input_types = {n: imported.types.get(n) for n in imported.inputs}
        self._symbolic = any(
            t is not None and (t.shape is None or any(d is None for d in t.shape))
            for t in self._input_types.values()
        )
        self._cost_signature: tuple[tuple[int, ...], ...] | None = None
        self._shape_cache: dict[tuple[tuple[int, ...], ...], Any] = {}
        self._emitter = StepEmitter(self)
        self._set_costs(costs)

    # -- public API (the geplug.backend.CompiledModel contract) ---------------------------

    @property
    def inputs(self) -> dict[str, TensorSpec]:
        """The graph inputs ``run`` takes, in order, with their dtypes and shapes."""
        specs: dict[str, TensorSpec] = {}
        for name in self.imported.inputs:
            tt = self.types.get(name)
            specs[name] = TensorSpec(name=name, dtype=tt.dtype if tt else "float32",
                                     shape=tuple(tt.shape) if tt and tt.shape is not None
                                     else None)
        return specs

    @property
    def outputs(self) -> tuple[str, ...]:
        """The output names of the mapping ``run`` returns, in graph order."""
        return tuple(self.imported.outputs)

    @property
    def dynamic_shape(self) -> bool:
        """Whether a graph input has a symbolic or unknown dimension (a dynamic-shape graph)."""
        return self._symbolic

    def inject_fault(self, node: str | None) -> None:
        """Raise a simulated AI Core error when ``node`` runs (``None`` clears it).

        A fault-injection aid for exercising exception dumps; the same as setting
        ``GEPLUG_SIM_FAULT_NODE=<node>``.
        """
        node = self._node_task.get(node, node) if node is not None else None
        if node is not None and node not in self._records:
            raise CompileError(
                f"inject_fault: model {self.name!r} has no node {node!r}; nodes: "
                + ", ".join(list(self._records)[:20]), node=node,
            )
        self._fault = node

    def decision(self, node: str) -> OpDecision:
        """The decision of ``node`` (``KeyError`` naming the known nodes when absent)."""
        try:
            return self._by_node[node]
        except KeyError:
            raise KeyError(f"model {self.name!r} has no node {node!r}; nodes: "
                           + ", ".join(list(self._by_node)[:20])) from None

    def run(self, inputs: Mapping[str, Any], step: int | None = None) -> RunResult:
        """Run one step; returns ``{output name: array}`` in the model's output dtypes, a
        :class:`~geplug.runtime.result.RunResult` that also carries the step's findings
        (``overflows``, ``nonfinite_outputs``, ``aicpu_fallbacks``).

        ``step`` numbers the iteration for dumps and profiling (default: one more than the
        last step run); it must be a non-negative integer.
        """
        if self._session is None:
            raise CompileError(f"model {self.name!r} was closed; compile it again", node="")
        self.system._check_open()
        if step is not None and (isinstance(step, bool) or not isinstance(step, int)
                                 or step < 0):
            raise RunError(f"model {self.name!r}: run(step={step!r}): step must be an integer "
                           ">= 0 (or None for the next step)", argument="step")
        feeds = check_inputs(self.name, inputs, self.imported.inputs, self._input_types)
        if self._symbolic:
            self._refresh_costs(feeds)
        with self._lock:
            if step is None:
                step = self._step
            self._step = max(self._step, step + 1)
        fault = fault_node(self._fault, self._fault_targets, model=self.name,
                           warned=self._fault_env_warned)
        fault = self._node_task.get(fault, fault) if fault is not None else None
        dump = wants_tensors(self.system, step)
        outputs = self._outputs
        if dump or fault is not None:
            values = self._run_exposed(feeds)
        else:
            values = dict(zip(outputs, self._ort_run(self._session, outputs, feeds),
                              strict=True))
        found = self._emitter.emit(step, feeds, values, dump=dump, fault=fault)
        return RunResult({name: values[name] for name in outputs}, step=step, overflows=found,
                         aicpu_fallbacks=self._aicpu)

    def close(self) -> None:
        """Release the onnxruntime sessions."""
        self._session = None
        self._dump_session = None

    # -- timing ----------------------------------------------------------------------------

    @property
    def memory(self) -> Any:
        """The memory plan (:class:`geplug.device.MemoryPlan`): weights, activation peak,
        workspace, total and the SoC's HBM capacity, bytes."""
        return self.device.memory

    def _set_costs(self, costs: Mapping[str, OpCost]) -> None:
        self.costs = dict(costs)
        self.op_times: dict[str, float] = {n: c.duration_us for n, c in self.costs.items()}
        """Simulated device time per task, microseconds (the product's compute model)."""
        self.simulated_time_us = self.device.makespan_us
        """Modelled time of one step: the makespan of the stream schedule (tasks, AI CPU
        tasks and host<->device copies on their streams)."""
        self._emitter.invalidate()

    def _refresh_costs(self, feeds: Mapping[str, Any]) -> None:
        """Re-model the device for the concrete input shapes (dimensions open at compile);
        cached per input-shape signature."""
        arrays = {k: a for k, a in feeds.items() if isinstance(a, np.ndarray)}
        signature = tuple(tuple(a.shape) for a in arrays.values())
        if signature == self._cost_signature:
            return
        cached = self._shape_cache.get(signature)
        if cached is None:
            cached = self._factory.costs_for_shapes(
                self, {k: a.shape for k, a in arrays.items()}, feeds=arrays)
            if cached is not None:
                self._shape_cache[signature] = cached
        if cached is not None:
            self.types, self.device, costs, records = cached
            if [r.name for r in records] != [r.name for r in self.ops]:
                # the shapes changed the tasks (a format conversion appears or goes): the
                # records, and what a fault may name, follow them
                self.ops = records
                self._records = {r.name: r for r in records}
                self._node_task = dict(self.device.node_task)
                self._fault_targets = {**self._node_task, **self._records}
            self._set_costs(costs)
        self._cost_signature = signature

    # -- exposed run (dump, fault) ----------------------------------------------------------

    def _run_exposed(self, feeds: Mapping[str, Any]) -> dict[str, np.ndarray]:
        if self._dump_session is None:
            self._dump_session, self._dump_names = self._factory.exposed(self.rewritten)
        names = list(self.imported.outputs) + [
            n for n in self._dump_names if n not in self.imported.outputs
        ]
        result = self._ort_run(self._dump_session, names, dict(feeds))
        return dict(zip(names, result, strict=True))

    def _ort_run(self, session: onnxruntime.InferenceSession, names: list[str],
                 feeds: Mapping[str, Any]) -> list[Any]:
        """``session.run``; a kernel failure becomes a :class:`RunError` naming the model and
        node (never onnxruntime's own exception and traceback)."""
        try:
            return list(session.run(names, dict(feeds)))
        except Exception as exc:
            text = str(exc).strip()
            first = text.splitlines()[0] if text else type(exc).__name__
            found = re.search(r"Name:'([^']+)'", text)
            where = f" at node {found.group(1)!r}" if found else ""
            raise RunError(
                f"model {self.name!r} failed to run{where}: {first}. onnxruntime's CPU kernels, "
                "which the simulator runs on, refuse these inputs or this operator's "
                "attributes", argument="inputs") from None

    def __repr__(self) -> str:
        return (f"<CompiledModel {self.name!r} on {self.system.product.name} "
                f"ops={len(self.decisions)}>")
