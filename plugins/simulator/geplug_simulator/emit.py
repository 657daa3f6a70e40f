"""The events of one simulated step (DESIGN.md "Data flow"): data dump events on dump steps,
profiling events on the simulated device timeline, an exception dump at an injected fault.

Profiling a tiny model must stay cheap, so the static part of every op's events is built once
(:class:`OpPlan`: its tensors, duration and the fields of a validated ``TaskEvent`` with
shapes, dtypes, formats, FLOPs and bytes) and rebuilt only when the op times are re-modelled; a step
then only stamps those fields with the step's ``RunInfo`` and start time (:func:`stamp`).
Nothing is built or emitted when neither profiling, dumping nor a fault asks for it.

The device stream runs the tasks back to back: each task's duration already contains the
product's ``launch_overhead_us`` (:mod:`geplug_simulator.cost`), so ``wait_us`` is 0.
"""

from __future__ import annotations

import hashlib
import os
import struct
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from geplug.device import copy_us
from geplug.errors import AICoreError, GeplugWarning
from geplug.events import (
    ApiCall,
    DumpEvent,
    OpRecord,
    RunInfo,
    StepBatchEvent,
    StepEvent,
    StepTasksEvent,
    TaskEvent,
    TaskTable,
    TensorRecord,
    expand_tasks,
)
from geplug.runtime.result import Overflow
from geplug_simulator.importer import TensorType
from geplug_simulator.rewrite import TensorRef, to_device

if TYPE_CHECKING:
    from geplug.device.formats import Layout
    from geplug.runtime.system import System
    from geplug_simulator.compiled import CompiledModel

__all__ = [
    "FAULT_ENV",
    "FaultEnvWarning",
    "OpPlan",
    "StepEmitter",
    "fault_node",
    "format_of",
    "stamp",
    "task_fields",
    "wants_tensors",
]

FAULT_ENV = "GEPLUG_SIM_FAULT_NODE"
"""Environment variable naming a node at which a simulated AI Core error is raised."""

_NCHW_OPS = frozenset({"Conv2D", "Pooling", "LRN", "BatchNorm", "Conv2DTranspose"})
_STATIC_TASK_FIELDS = tuple(
    a.name for a in attrs.fields(TaskEvent) if a.name not in ("run", "start_us")
)
_new = object.__new__
_set = object.__setattr__


def _overflows(event: DumpEvent, system: System) -> list[Overflow]:
    """The overflow ``event``'s op starts (the dump writer's rule), as run-result findings."""
    try:
        from geplug.dump.overflow import find_overflow
    except ImportError:  # geplug installed without its dump package
        return []
    cfg = system.config.config
    finding = find_overflow(event, saturation=system.product.dump.overflow_mode == "saturation",
                            debug_mode=cfg.dump_debug_mode or "all")
    if finding is None:
        return []
    op = event.op
    return [Overflow(step=event.run.step, op_name=op.name, op_type=op.op_type,
                     output=event.outputs[t.index].name if t.index < len(event.outputs) else "",
                     nan=t.nan, pos_inf=t.pos_inf, neg_inf=t.neg_inf, saturated=t.saturated)
            for t in finding.outputs]


def wants_tensors(system: System, step: int) -> bool:
    """Whether the dump writers need this step's tensors (``geplug.dump.policy``)."""
    try:
        from geplug.dump.policy import wants_tensors as policy
    except ImportError:  # geplug installed without its dump package
        return False
    return bool(policy(system.config, step))


def format_of(op_type: str, rank: int) -> str:
    """The device format a 4-D tensor of an image op is reported in (else ``ND``)."""
    return "NCHW" if rank == 4 and op_type in _NCHW_OPS else "ND"


Held = tuple[tuple[int, ...], "Layout | None", str]
"""A tensor of a task event: its logical shape, the layout the device holds it in
(``DeviceModel.formats``; ``None``: plain) and the dtype it is held in."""


def event_layout(op_type: str, ins: Sequence[Held], outs: Sequence[Held]) -> dict[str, Any]:
    """The shapes and formats of a task event (``TaskEvent`` fields), each tensor as the
    device holds it: one in a device format with that layout's shape and name
    (``NC1HWC0`` 5-D, ``FRACTAL_Z``), any other with its logical shape in the format its
    op type reports (:func:`format_of`). Both backends' emitters use it."""
    def shapes(held: Sequence[Held]) -> list[tuple[int, ...]]:
        return [f.shape(s, d) if f is not None else s for s, f, d in held]

    def formats(held: Sequence[Held]) -> list[str]:
        return [f.format if f is not None else format_of(op_type, len(s)) for s, f, _ in held]

    return {"input_shapes": shapes(ins), "input_formats": formats(ins),
            "output_shapes": shapes(outs), "output_formats": formats(outs)}


def task_fields(template: TaskEvent) -> tuple[tuple[str, Any], ...]:
    """The ``(field, value)`` pairs :func:`stamp` copies from ``template``."""
    return tuple((name, getattr(template, name)) for name in _STATIC_TASK_FIELDS)


def stamp(fields: Sequence[tuple[str, Any]], run: RunInfo, start_us: float) -> TaskEvent:
    """The ``TaskEvent`` with ``fields`` (from :func:`task_fields`) at ``run``, ``start_us``.

    Equal to ``attrs.evolve(template, run=run, start_us=start_us)`` but without running the
    record's converters again: every field of the template was converted and checked when it
    was constructed, and ``run`` / ``start_us`` come from the simulator itself.
    """
    event = _new(TaskEvent)
    for name, value in fields:
        _set(event, name, value)
    _set(event, "run", run)
    _set(event, "start_us", start_us)
    return event


@attrs.frozen
class OpPlan:
    """The static facts of one op's events (see the module docstring)."""

    record: OpRecord
    inputs: tuple[TensorRef, ...]
    outputs: tuple[TensorRef, ...]
    duration_us: float
    task: tuple[tuple[str, Any], ...] = ()
    """The static fields of its ``TaskEvent`` (empty until profiling asks for them)."""
    task_run: Any = None
    """The placeholder ``RunInfo`` of the template (for the static task table)."""


@attrs.frozen
class StepTemplate:
    """What every profiled step of one plan set and one set of copy sizes shares: the task
    table and the modelled host<->device copies (call name, duration µs, bytes), so a step
    costs a clock reading and one queued record (:meth:`StepEmitter.deferred_events`)."""

    key: tuple[int, ...]
    """The bytes of each input, then of each output, the copies were modelled for."""
    table: TaskTable
    h2d: tuple[tuple[str, float, int], ...]
    d2h: tuple[tuple[str, float, int], ...]

    def walk(self, begin: float,
             calls: list[tuple[Any, ...]] | None = None) -> tuple[float, int, float]:
        """The step from ``begin`` (µs after the time base): the time after its input
        copies (µs), the first task's start (ns) and the step's end (µs); appends the
        copies to ``calls`` as whole-step record entries when given. One function for the
        clock and the record, so they agree to the last bit."""
        t = begin
        for name, duration, nbytes in self.h2d:
            if calls is not None:
                calls.append((name, t, duration, "H2D", nbytes))
            t += duration
        after_h2d = t
        start_ns = round(t * 1000)
        t = (start_ns + self.table.span_ns) / 1000
        for name, duration, nbytes in self.d2h:
            if calls is not None:
                calls.append((name, t, duration, "D2H", nbytes))
            t += duration
        return after_h2d, start_ns, t


def _sizes(feeds: Mapping[str, Any], values: Mapping[str, Any],
           outputs: Iterable[str]) -> tuple[int, ...]:
    """The bytes of each input, then of each of ``outputs`` (a :class:`StepTemplate` key)."""
    return tuple([int(getattr(a, "nbytes", 0)) for a in feeds.values()]
                 + [int(getattr(values[n], "nbytes", 0)) for n in outputs])


def _shape(types: Mapping[str, TensorType], name: str) -> tuple[int, ...]:
    t = types.get(name)
    return tuple(int(d or 1) for d in ((t.shape or ()) if t else ()))


def task_refs(task: Any, rw: Any) -> tuple[tuple[TensorRef, ...], tuple[TensorRef, ...]]:
    """The device tensors a task reads and writes: an unfused node's own; a fused task's
    inputs from outside it and the outputs it hands on (the fused kernel's arguments); a
    TransData's (``Task.inserted``) the tensor it converts and the converted tensor (the
    same values under the task's output name: dumps hold the logical array, docs/dump.md)."""
    if task.inserted:
        ref = rw.ref_of(task.inputs[0])
        if ref is None:
            return (), ()
        return (ref,), (attrs.evolve(ref, source=task.outputs[0]),)
    if len(task.members) == 1:
        m = task.members[0]
        return tuple(rw.op_inputs.get(m, ())), tuple(rw.op_outputs.get(m, ()))
    inside: set[str] = set()
    for m in task.members:
        inside.update(r.source for r in rw.op_outputs.get(m, ()))
    ins: list[TensorRef] = []
    seen: set[str] = set()
    for m in task.members:
        for r in rw.op_inputs.get(m, ()):
            if r.source not in inside and r.source not in seen:
                seen.add(r.source)
                ins.append(r)
    wanted = set(task.outputs)
    outs = [r for m in task.members for r in rw.op_outputs.get(m, ()) if r.source in wanted]
    return tuple(ins), tuple(outs)


def _scheduled_table(tasks: Sequence[TaskEvent], schedule: Mapping[str, Any]) -> TaskTable:
    """The task table at the device model's stream schedule: each task at its scheduled
    start (``TaskPlan.start_ns``, relative to the step's first task), so AI CPU tasks overlap
    compute on their own stream as the schedule says; ``wait_ns`` is the idle gap on the
    task's stream before it. Tasks the schedule does not know run back to back."""
    if not tasks or any(t.op.name not in schedule for t in tasks):
        return TaskTable.sequential(tasks)
    plans = [schedule[t.op.name] for t in tasks]
    first = min(p.start_ns for p in plans)
    off = np.array([p.start_ns - first for p in plans], dtype=np.int64)
    dur = np.array([p.duration_ns for p in plans], dtype=np.int64)
    wait = np.zeros(len(plans), dtype=np.int64)
    stream_end: dict[int, int] = {}
    for i, p in enumerate(plans):
        start = int(off[i])
        wait[i] = max(start - stream_end.get(p.stream_id, start), 0)
        stream_end[p.stream_id] = start + int(dur[i])
    task_list: Any = tuple(tasks)
    return TaskTable(tasks=task_list, offset_ns=off, duration_ns=dur, wait_ns=wait)


class StepEmitter:
    """Emits the events of ``compiled``'s steps; keeps the simulated device clock."""

    def __init__(self, compiled: CompiledModel) -> None:
        self.compiled = compiled
        self.clock_us = 0.0
        """The device clock, µs after ``base_us``."""
        self.base_us: int | None = None
        self._plans: list[OpPlan] | None = None
        self._with_tasks = False
        self._table: TaskTable | None = None
        self._template: StepTemplate | None = None
        self._fast: tuple[Any, int, StepTemplate, tuple[str, ...]] | None = None
        """(plugin registry, its generation, template, output names; the template's sizes
        are checked every step, as an output's size may depend on the data) while steps go to
        ``System.defer_profile`` unchanged: the step's whole cost is then a clock reading,
        a size check and one queued record (measured in situ, right after the step's
        kernels, a step's full dispatch costs ~10x what it costs hot)."""
        self._deferring = False
        """Whether whole-step records go through ``System.defer_profile`` (after the first
        one, which is dispatched at once so the ``PROF_*`` directory appears with it)."""

    def invalidate(self) -> None:
        """Forget the plans (the op times or shapes were re-modelled)."""
        self._plans = None
        self._table = None
        self._template = None
        self._fast = None

    def template(self, feeds: Mapping[str, Any], outputs: Mapping[str, Any]) -> StepTemplate:
        """The step template for these inputs and outputs (rebuilt when the plans or the
        copy sizes change)."""
        key = _sizes(feeds, outputs, outputs)
        tpl = self._template
        if tpl is None or tpl.key != key:
            product = self.compiled.system.product

            def copies(direction: str, sizes: Sequence[int],
                       names: Sequence[str]) -> tuple[tuple[str, float, int], ...]:
                return tuple((f"aclrtMemcpy({direction}:{name})", copy_us(n, product), n)
                             for name, n in zip(names, sizes, strict=True))

            n = len(feeds)
            tpl = self._template = StepTemplate(
                key=key, table=self.table(), h2d=copies("H2D", key[:n], list(feeds)),
                d2h=copies("D2H", key[n:], list(outputs)))
        return tpl

    def run_info(self, step: int) -> RunInfo:
        """The ``RunInfo`` of ``step`` (the device clock's base set)."""
        c = self.compiled
        system = c.system
        return RunInfo(system=system, model_name=c.name, model_id=c.model_id, step=step,
                       device_id=system.device_id, dynamic_shape=c.dynamic_shape,
                       time_base_us=self.base_us or 0)

    def step_record(self, tpl: StepTemplate, step: int, begin: float) -> StepTasksEvent:
        """The whole-step record of ``step``, begun at ``begin`` with ``tpl``."""
        calls: list[tuple[Any, ...]] = []
        _, start_ns, end = tpl.walk(begin, calls)
        return StepTasksEvent(run=self.run_info(step), table=tpl.table, start_ns=start_ns,
                              begin_us=begin, end_us=end, calls=tuple(calls))

    def step_batch(self, tpl: StepTemplate,
                   records: Sequence[tuple[StepTemplate, int, float]]) -> StepBatchEvent:
        """The steps ``records`` (all with ``tpl``) as one batch: :meth:`StepTemplate.walk`
        on columns, the same float operations in the same order, so every time equals the
        one-step record's to the last bit."""
        steps = [r[1] for r in records]
        t = np.array([r[2] for r in records], dtype=np.float64)
        begin = t
        starts: list[np.ndarray] = []
        for _, duration, _ in tpl.h2d:
            starts.append(t)
            t = t + duration
        start_ns = np.rint(t * 1000).astype(np.int64)  # round(): half to even, like rint
        t = (start_ns + tpl.table.span_ns) / 1000
        for _, duration, _ in tpl.d2h:
            starts.append(t)
            t = t + duration
        calls = tuple((name, duration, direction, nbytes)
                      for direction, part in (("H2D", tpl.h2d), ("D2H", tpl.d2h))
                      for name, duration, nbytes in part)
        return StepBatchEvent(
            run=self.run_info(steps[0]), table=tpl.table, steps=steps, begin_us=begin,
            start_ns=start_ns, end_us=t, calls=calls,
            call_start_us=np.stack(starts, axis=1) if starts else np.zeros((len(steps), 0)))

    def deferred_events(self, records: Sequence[tuple[StepTemplate, int, float]]
                        ) -> Iterator[StepTasksEvent | StepBatchEvent]:
        """The events of consecutive steps queued with ``System.defer_profile``: one
        :class:`StepBatchEvent` per run of steps with one template, or one whole-step
        record per step when a third-party ``geplug_profile`` plugin appeared meanwhile
        (it is not promised batches)."""
        batch = not self.compiled.system.manager.has_external("geplug_profile")
        i = 0
        while i < len(records):
            tpl = records[i][0]
            j = i + 1
            while j < len(records) and records[j][0] is tpl:
                j += 1
            if batch:
                yield self.step_batch(tpl, records[i:j])
            else:
                for _, step, begin in records[i:j]:
                    yield self.step_record(tpl, step, begin)
            i = j

    def table(self) -> TaskTable:
        """The static task table of the current plans (built once per plan set): the
        batched per-step profiling record carries it, so a step costs one event."""
        if self._table is None:
            plans = [p for p in self.plans(True) if p.task]
            self._table = _scheduled_table(
                [stamp(p.task, p.task_run, 0.0) for p in plans],
                {t.name: t for t in self.compiled.device.tasks})
        return self._table

    def plans(self, with_tasks: bool) -> list[OpPlan]:
        """The per-op plans, with profiling templates when ``with_tasks``."""
        if self._plans is not None and (self._with_tasks or not with_tasks):
            return self._plans
        c = self.compiled
        rw, types = c.rewritten, c.types
        placeholder = RunInfo(system=c.system, model_name=c.name, model_id=c.model_id, step=-1,
                              device_id=c.system.device_id)
        plans: list[OpPlan] = []
        device_tasks = {p.name: p for p in c.device.tasks}
        for op in c.ops:
            device_task = device_tasks[op.name].task
            conv = c.device.conversion(op.name) if device_task.inserted else None
            refs_in, refs_out = task_refs(device_task, rw)
            cost = c.costs[op.name]
            task: tuple[tuple[str, Any], ...] = ()
            if with_tasks:
                layout: dict[str, Any]
                if conv is not None:  # a TransData: each side in its own layout
                    layout = conv.event_layout()
                else:
                    held = c.device.formats.get(op.name, {})
                    layout = event_layout(
                        op.op_type,
                        [(_shape(types, r.source), held.get(r.source), r.dtype)
                         for r in refs_in],
                        [(_shape(types, r.source), held.get(r.source), r.dtype)
                         for r in refs_out])
                task = task_fields(TaskEvent(
                    run=placeholder, op=op, start_us=0.0, duration_us=cost.duration_us,
                    wait_us=0.0, flops=cost.flops, bytes_moved=cost.bytes_moved,
                    input_dtypes=[r.dtype for r in refs_in],
                    output_dtypes=[r.dtype for r in refs_out],
                    cube_fraction=cost.cube_fraction, **layout,
                ))
            plans.append(OpPlan(op, refs_in, refs_out, cost.duration_us, task, placeholder))
        self._plans, self._with_tasks = plans, with_tasks
        self._table = None
        return plans

    def emit(self, step: int, feeds: Mapping[str, Any], values: Mapping[str, np.ndarray], *,
             dump: bool, fault: str | None) -> list[Overflow] | None:
        """The events of one step (nothing when no one asks for them). Returns the overflows
        found in the step's tensors when they were inspected (``dump``), else None.

        A profiled step that only geplug's collectors listen to (no third-party
        ``geplug_profile`` plugin, no fault that could cut it short) is one whole-step
        record; without a dump it is queued (``System.defer_profile``) with the step's
        template and begin time, which is all it costs here."""
        fast = self._fast
        if fast is not None and not dump and fault is None:
            registry, generation, known, names = fast
            try:  # (a non-array input has no nbytes: the full path below decides)
                same = tuple([a.nbytes for a in feeds.values()]
                             + [values[n].nbytes for n in names]) == known.key
            except AttributeError:
                same = False
            if same and registry.generation == generation:
                t = time.time() * 1e6 - self.base_us  # type: ignore[operator]
                if t < self.clock_us:
                    t = self.clock_us
                _, _, self.clock_us = known.walk(t)
                self.compiled.system.defer_profile(self, (known, step, t))
                return None
        c = self.compiled
        system = c.system
        prof = system.profiling_enabled
        found: list[Overflow] | None = [] if dump else None
        if not (dump or prof or fault):
            return found
        if self.base_us is None:  # the device clock: small, exact floats from a µs base
            self.base_us = int(time.time() * 1e6)
        t = max(time.time() * 1e6 - self.base_us, self.clock_us)
        # one whole-step record when only geplug's collectors listen (and no fault can cut
        # the step short); the separate events when a third-party plugin wants them
        whole = prof and not fault and not system.manager.has_external("geplug_profile")
        tpl: StepTemplate | None = None
        if whole:
            tpl = self.template(feeds, {n: values[n] for n in c.imported.outputs})
            if not dump:
                _, _, self.clock_us = tpl.walk(t)
                if self._deferring:
                    system.defer_profile(self, (tpl, step, t))
                    registry = system.manager.pm
                    if hasattr(registry, "generation"):
                        self._fast = (registry, registry.generation, tpl,
                                      tuple(c.imported.outputs))
                else:  # the first at once: the PROF_* directory appears with it
                    self._deferring = True
                    system.emit_profile(self.step_record(tpl, step, t))
                return found
        run = self.run_info(step)
        emit_profile = system.emit_profile
        begin = t
        if tpl is not None:
            t, start_ns, end = tpl.walk(begin)
        elif prof:
            emit_profile(StepEvent(run=run, phase="begin", time_us=t))
            t = self._copies(run, t, "H2D", feeds)
            start_ns = round(t * 1000)
            batch = StepTasksEvent(run=run, table=self.table(), start_ns=start_ns)
            emit_profile(batch)
            if system.manager.has_external("geplug_profile"):
                for task in expand_tasks(batch):  # per-task events for third parties
                    emit_profile(task)
        if dump or fault:
            offsets = self.table().offset_ns.tolist() if prof else None
            t_op = t
            for i, plan in enumerate(self.plans(prof)):
                op = plan.record
                if not (dump or op.name == fault):
                    continue
                if offsets is not None:
                    t_op = t + offsets[i] / 1000
                ins = self._tensors(plan.inputs, values, feeds)
                outs = self._tensors(plan.outputs, values, feeds)
                if dump:
                    event = DumpEvent(kind="data", run=run, op=op, inputs=ins, outputs=outs,
                                      timestamp_us=self.base_us + int(t_op))
                    system.emit_dump(event)
                    if found is not None:
                        found += _overflows(event, system)
                if op.name == fault:
                    self._raise_fault(run, op, ins, outs, self.base_us + int(t_op))
                if offsets is None:
                    t_op += plan.duration_us
        if tpl is not None:
            emit_profile(self.step_record(tpl, step, begin))
            t = end
        elif prof:
            t = (start_ns + self.table().span_ns) / 1000
            t = self._copies(run, t, "D2H", {n: values[n] for n in c.imported.outputs})
            emit_profile(StepEvent(run=run, phase="end", time_us=t))
        else:
            t += sum(p.duration_us for p in self.plans(False))
        self.clock_us = t
        return found

    def _copies(self, run: RunInfo, t: float, direction: str,
                arrays: Mapping[str, Any]) -> float:
        """The modelled copies from ``t`` on as ``ApiCall`` events, each carrying its
        direction and bytes (a MEMCPY_ASYNC task in the profile); returns the time after
        the last."""
        product = run.system.product
        for name, array in arrays.items():
            nbytes = int(getattr(array, "nbytes", 0))
            duration = copy_us(nbytes, product)
            self.compiled.system.emit_profile(ApiCall(
                run=run, name=f"aclrtMemcpy({direction}:{name})", start_us=t,
                duration_us=duration, copy=(direction, nbytes)))
            t += duration
        return t

    def _tensors(self, refs: Sequence[TensorRef], values: Mapping[str, np.ndarray],
                 feeds: Mapping[str, Any]) -> list[TensorRecord]:
        out: list[TensorRecord] = []
        for ref in refs:
            array = values.get(ref.name)
            if array is None:
                array = feeds.get(ref.name)
            if array is None:
                array = self.compiled.rewritten.constant(ref.name)
            if array is None:
                continue
            dtype = ref.dtype or str(array.dtype)
            if dtype in ("float16", "bfloat16", "float32") and array.dtype.kind == "f":
                array = to_device(np.asarray(array), dtype)
            out.append(TensorRecord(name=ref.source, array=np.asarray(array), dtype=dtype))
        return out

    def _raise_fault(self, run: RunInfo, op: OpRecord, ins: list[TensorRecord],
                     outs: list[TensorRecord], ts: int) -> None:
        cost = self.compiled.costs[op.name]
        workspace = hashlib.sha256(f"{op.name}:{op.task_id}".encode()).digest() * 32
        tiling = struct.pack("<4I", cost.block_dim, len(ins), len(outs), op.task_id)
        message = (
            f"simulated AI Core error at node {op.name!r} (op type {op.op_type}, task_id "
            f"{op.task_id}, stream_id {op.stream_id}); injected with inject_fault() or "
            f"{FAULT_ENV}"
        )
        results = self.compiled.system.emit_dump(DumpEvent(
            kind="exception", run=run, op=op, inputs=ins, outputs=outs, timestamp_us=ts,
            workspace=workspace, tiling=tiling, message=message,
        ))
        paths: list[str] = []
        for r in results:
            if isinstance(r, (list, tuple)):
                paths.extend(str(p) for p in r)
            elif r:
                paths.append(str(r))
        where = ("; exception dump: " + ", ".join(paths)) if paths else (
            "; no exception dump was written (enable_exception_dump is 0)"
        )
        raise AICoreError(
            f"AI Core error at node {op.name!r} (op type {op.op_type}){where}",
            node=op.name, op_type=op.op_type, dump_files=paths,
        )


class FaultEnvWarning(GeplugWarning):
    """``GEPLUG_SIM_FAULT_NODE`` names no node of the model being run (no fault injected)."""


def fault_node(explicit: str | None, known: Mapping[str, Any], *, model: str = "",
               warned: set[str] | None = None) -> str | None:
    """The node a fault is injected at: ``explicit``, else ``$GEPLUG_SIM_FAULT_NODE`` when it
    names a node of the model.

    An environment value naming no node of this model gets a :class:`FaultEnvWarning`
    naming the variable, the value and the model's nodes, once per value when ``warned``
    (the values already reported) is given. It warns rather than fails: one process may run
    several models, and the value may name a node of another one (``inject_fault`` with an
    unknown node raises, since it is given for this model).
    """
    if explicit is not None:
        return explicit if explicit in known else None
    value = os.environ.get(FAULT_ENV) or None
    if value is None or value in known:
        return value
    if warned is None or value not in warned:
        if warned is not None:
            warned.add(value)
        names = list(known)
        listing = ", ".join(names[:20]) + (f", ... ({len(names)} nodes)" if len(names) > 20
                                           else "")
        warnings.warn(FaultEnvWarning(
            f"{FAULT_ENV}={value!r} names no node of model {model!r}, so no fault is "
            f"injected into it; its nodes: {listing}. Set {FAULT_ENV} to one of them, or "
            "unset it"), stacklevel=3)
    return None
