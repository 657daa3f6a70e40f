"""Running one compiled graph and emitting its events (data dump, overflow, profiling).

Nothing is built when no writer asks: an ordinary step runs the rewritten GraphModule as
generated code. On a step the dump writers want (``geplug.dump.policy.wants_tensors``: a
``dump_step`` step, or every step with ``enable_dump_debug``) the graph runs through an fx
interpreter that keeps each op's inputs and outputs, and one ``DumpEvent`` per op carries
them in the device dtype (a TransData's input and output are the tensor it converts: a dump
holds the logical array, whatever the format). While profiling, each op becomes a
``TaskEvent`` on the runtime's shared device clock (the static fields are built once per
graph; a TransData's shows each side in its own layout); the graph itself is
launched by one ``AscendCL@aclmdlExecute`` API call on the CANN track (graph mode: GE runs
the whole graph from one host call), modelled as one task launch overhead long. The input
batch's copies to the device come before it and the read-back of its results after it
(:mod:`geplug_torch.copies`), on the device clock too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from geplug_simulator.emit import _overflows as overflows_of
from geplug_simulator.emit import event_layout, stamp, task_fields
from geplug_simulator.graphbuild import to_device

from geplug.device import copy_us
from geplug.events import ApiCall, DumpEvent, TaskEvent, TensorRecord
from geplug_torch.lowering import FLOAT32_STATISTICS

if TYPE_CHECKING:
    from geplug_torch.graph import CompiledGraph, GraphOp, TensorMeta
    from geplug_torch.model import TrainingModel

__all__ = ["GraphEmitter", "to_numpy"]


def to_numpy(tensor: Any) -> np.ndarray:
    """A CPU tensor as a numpy array (bfloat16 through float32, then ml_dtypes)."""
    import torch

    t = tensor.detach()
    if t.dtype == torch.bfloat16:
        return to_device(t.float().numpy(), "bfloat16")
    return np.asarray(t.numpy())


def _flat(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flat(v)]
    return []


class GraphEmitter:
    """Runs ``graph`` of ``model`` and emits its events."""

    def __init__(self, model: TrainingModel, graph: CompiledGraph) -> None:
        self.model = model
        self.graph = graph
        self._tasks: list[tuple[tuple[str, Any], ...]] | None = None
        self._tasks_factor = 1.0
        self._prefix = "gradients/" if graph.phase == "backward" else ""
        self._copy_us: tuple[list[tuple[Any, float]], list[tuple[Any, float]]] | None = None
        self.last_overflows: list[Any] | None = None

    def run(self, module: Any, args: list[Any]) -> Any:
        """One training-graph run (AOTAutograd's boxed calling convention): the runtime
        says which iteration it belongs to."""
        model, runtime = self.model, self.model.runtime
        runtime.system._check_open()
        phase = self.graph.phase
        # where the real card would fail to allocate the graph's memory: before its tasks
        runtime.memory.before_graph(model.model_id, model.name, self.graph, args,
                                    runtime.iteration)
        step = runtime.begin(model, phase)
        out = self.run_step(module, args, step)
        runtime.finish(model, phase, step)
        runtime.memory.after_graph(self.graph, args, out)
        return out

    def run_step(self, module: Any, args: list[Any], step: int) -> Any:
        """Run the graph as step ``step`` and emit its events; ``last_overflows`` then holds
        the overflows found in its tensors (``None`` when they were not inspected)."""
        from geplug.dump.policy import wants_tensors

        model, runtime = self.model, self.model.runtime
        system = runtime.system
        system._check_open()
        dump = wants_tensors(system.config, step)
        targets = runtime.profile_systems()
        values: dict[str, Any] | None = None
        if dump:
            values, out = self._run_exposed(module, args)
        else:
            out = module(*args)
        self.last_overflows = [] if dump else None
        if dump or targets or runtime.profilers:
            self._emit(step, values, targets)
        else:
            h2d, d2h = self._copy_spans()
            runtime.clock_us = (runtime.now() + sum(d for _, d in h2d) +
                                self.graph.span_us * runtime.compute_factor +
                                sum(d for _, d in d2h))
        model.runs += 1
        return out

    def _run_exposed(self, module: Any, args: list[Any]) -> tuple[dict[str, Any], Any]:
        import torch.fx

        values: dict[str, Any] = {}

        class Keeper(torch.fx.Interpreter):
            def run_node(self, n: Any) -> Any:
                result = super().run_node(n)
                values[n.name] = result
                return result

        with torch.no_grad():
            out = Keeper(module, garbage_collect_values=False).run(*args)
        return values, out

    def _emit(self, step: int, values: dict[str, Any] | None,
              targets: list[Any]) -> None:
        runtime = self.model.runtime
        system = runtime.system
        run = runtime.run_info(self.model, step)
        runs = [runtime.run_info(self.model, step, s) for s in targets]
        factor = runtime.compute_factor  # a slow or varied rank: every kernel longer
        tasks = self._task_templates(factor) if runs else None
        h2d, d2h = self._copy_spans()
        runtime.clock_us = self._copies(runs, h2d, runtime.now())  # the input batch
        for r in runs:  # graph mode: the host launches the whole graph with one call
            r.system.emit_profile(ApiCall(
                run=r, name=f"AscendCL@aclmdlExecute({self.model.name}:{self.graph.phase})",
                level="acl", start_us=runtime.now(),
                duration_us=system.product.compute.launch_overhead_us))
        t0 = runtime.now()
        base = runtime.base_us
        starts: list[float] = []
        for index, op in enumerate(self.graph.ops):
            t = t0 + op.start_us * factor  # the core's stream schedule
            if values is not None:
                event = DumpEvent(
                    kind="data", run=run, op=op.record,
                    inputs=self._tensors(op, op.inputs, values, inputs=True),
                    outputs=self._tensors(op, op.outputs, values, inputs=False),
                    timestamp_us=base + int(t))
                system.emit_dump(event)
                if self.last_overflows is not None:
                    self.last_overflows += overflows_of(event, system)
            if tasks is not None:
                for r in runs:
                    r.system.emit_profile(stamp(tasks[index], r, t))
            starts.append(t)
        runtime.clock_us = self._copies(runs, d2h, t0 + self.graph.span_us * factor)
        for prof in runtime.profilers:
            prof.record_ops(runtime, self.model, self.graph, step, starts)

    def _copy_spans(self) -> tuple[list[tuple[Any, float]], list[tuple[Any, float]]]:
        """(copy, µs of its host call) of the run's H2D and D2H copies
        (:mod:`geplug_torch.copies`): the host issues the copy (the product's
        ``launch_overhead_us``), then waits for the device's copy task (the device model's
        copy cost)."""
        if self._copy_us is None:
            product = self.model.runtime.system.product
            issue = product.compute.launch_overhead_us
            spans = [(c, issue + copy_us(c.nbytes, product)) for c in self.graph.copies]
            self._copy_us = ([x for x in spans if x[0].direction == "H2D"],
                             [x for x in spans if x[0].direction == "D2H"])
        return self._copy_us

    def _copies(self, runs: list[Any], copies: list[tuple[Any, float]], t: float) -> float:
        """Send ``copies`` one after another from ``t`` (a runtime call whose device part is
        a MEMCPY_ASYNC task on the copy stream); returns the time after the last."""
        for c, dur in copies:
            for r in runs:
                r.system.emit_profile(ApiCall(
                    run=r, name=f"aclrtMemcpy({c.direction}:{c.name})", start_us=t,
                    duration_us=dur, copy=(c.direction, c.nbytes)))
            t += dur
        return t

    def _task_templates(self, factor: float = 1.0) -> list[tuple[tuple[str, Any], ...]]:
        """Each op's static task fields, its duration ``factor`` times the model's."""
        if self._tasks is None or self._tasks_factor != factor:
            self._tasks_factor = factor
            placeholder = self.model.runtime.run_info(self.model, -1)
            self._tasks = [task_fields(TaskEvent(
                run=placeholder, op=op.record, start_us=0.0,
                duration_us=op.duration_us * factor,
                wait_us=0.0, flops=op.flops, bytes_moved=op.bytes_moved,
                input_dtypes=[_device_dtype(op, m, index=i) for i, m in enumerate(op.inputs)],
                output_dtypes=[_device_dtype(op, m, out=True, index=i)
                               for i, m in enumerate(op.outputs)],
                cube_fraction=op.cube_fraction, **_layouts(op),
            )) for op in self.graph.ops]
        return self._tasks

    def _tensors(self, op: GraphOp, metas: tuple[TensorMeta, ...], values: Mapping[str, Any],
                 *, inputs: bool) -> list[TensorRecord]:
        arrays = [_value(values, _holder(op, m.name)) for m in metas]
        records: list[TensorRecord] = []
        placeholders = set(self.graph.placeholders)
        for index, (meta, tensor) in enumerate(zip(metas, arrays, strict=False)):
            if tensor is None:
                continue
            dtype = _device_dtype(op, meta, out=not inputs, index=index)
            array = to_numpy(tensor)
            if array.dtype.kind == "f" and dtype in ("float16", "bfloat16", "float32"):
                array = to_device(array, dtype)
            name = meta.name if meta.name in placeholders else self._prefix + meta.name
            records.append(TensorRecord(name=name, array=array, dtype=dtype))
        return records


def _layouts(op: GraphOp) -> dict[str, Any]:
    """The shapes and formats of ``op``'s task event, each tensor as the device holds it:
    one in a device format (``GraphOp.formats``: 5HD as ``(N, C1, H, W, C0)`` in
    ``NC1HWC0``, a convolution's filter in ``FRACTAL_Z``) with that layout's shape, any
    other with its logical shape in the format its op type reports; a TransData's each
    side likewise (``Conversion.event_layout``), as the real ``ge_task_data`` shows them."""
    if op.conversion is not None:
        return op.conversion.event_layout()
    held = op.formats
    return event_layout(
        op.record.op_type,
        [(tuple(m.shape), held.get(m.name), _device_dtype(op, m, index=i))
         for i, m in enumerate(op.inputs)],
        [(tuple(m.shape), held.get(m.name), _device_dtype(op, m, out=True, index=i))
         for i, m in enumerate(op.outputs)])


def _holder(op: GraphOp, name: str) -> str:
    """The fx value holding tensor ``name`` of ``op``: itself, except a TransData's output,
    which holds its input's values (a format conversion changes no value, and a dump holds
    the logical array)."""
    conv = op.conversion
    return conv.tensor if conv is not None and name == conv.output else name


def _value(values: Mapping[str, Any], name: str) -> Any:
    """The tensor named ``name`` in the device graph: an fx node's value, or a position of
    a multi-output node's tuple (``native_layer_norm:0``)."""
    node, *path = name.split(":")
    value = values.get(node)
    for index in path:
        if not isinstance(value, (list, tuple)) or int(index) >= len(value):
            return None
        value = value[int(index)]
    return _first(value)


def _first(value: Any) -> Any:
    found = _flat(value)
    return found[0] if found else None


def _device_dtype(op: GraphOp, meta: TensorMeta, *, out: bool = False,
                  index: int = -1) -> str:
    """The dtype the device holds ``meta`` in: the decision's (its output dtype for an
    output), except float32 statistics a lowered op keeps (:data:`FLOAT32_STATISTICS`, by
    the tensor's position ``index``) and tensors of another dtype."""
    d = op.decision
    kept = FLOAT32_STATISTICS.get(op.aten) if op.conversion is None else None
    if kept is not None and index in kept[1 if out else 0]:
        return meta.dtype
    if meta.dtype == d.original_dtype and d.dtype:
        return (d.output_dtype or d.dtype) if out else d.dtype
    return meta.dtype

