"""A compiled model: one onnxruntime session of the rewritten graph, plus its op facts.

``run(inputs, step=None)`` checks the feeds, runs the session and emits the events the
configuration asks for (DESIGN.md "Data flow"): data dump events on dump steps (from a
second session exposing every op's device tensors), profiling events on the simulated
device timeline, and an exception dump plus :class:`~geplug.errors.AICoreError` when a fault
is injected (``inject_fault(node)`` or env ``GEPLUG_SIM_FAULT_NODE``, a fault-injection aid).
"""

from __future__ import annotations

import hashlib
import os
import struct
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import ml_dtypes
import numpy as np

from geplug.errors import AICoreError, CompileError
from geplug.events import (
    ApiCall,
    DumpEvent,
    OpRecord,
    RunInfo,
    StepEvent,
    TaskEvent,
    TensorRecord,
)
from geplug.precision import OpDecision
from geplug_simulator.cost import OpCost
from geplug_simulator.importer import ImportedModel
from geplug_simulator.rewrite import RewrittenModel, TensorRef, to_device

if TYPE_CHECKING:
    import onnxruntime

    from geplug.runtime.system import System

__all__ = ["FAULT_ENV", "CompiledModel", "InputError"]

FAULT_ENV = "GEPLUG_SIM_FAULT_NODE"
"""Environment variable naming a node at which a simulated AI Core error is raised."""
HOST_LINK_GBPS = 25.0
"""Modelled host<->device copy bandwidth (PCIe 4.0 x16 order of magnitude)."""

_NP_DTYPES: dict[str, Any] = {
    "float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16,
    "float64": np.float64, "int8": np.int8, "int16": np.int16, "int32": np.int32,
    "int64": np.int64, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32,
    "uint64": np.uint64, "bool": np.bool_,
}


class InputError(CompileError):
    """A missing, unknown, mis-shaped or wrong-dtype input; ``node`` names the input."""


def _wants_tensors(system: System, step: int) -> bool:
    try:
        from geplug.dump.policy import wants_tensors
    except ImportError:  # the dump package predates its policy module
        return False
    return bool(wants_tensors(system.config, step))


def _format_of(op_type: str, rank: int) -> str:
    if rank == 4 and op_type in ("Conv2D", "Pooling", "LRN", "BatchNorm", "Conv2DTranspose"):
        return "NCHW"
    return "ND"


class CompiledModel:
    """A model compiled for one product; see the module docstring."""

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
    ) -> None:
        self.system = system
        self.imported = imported
        self.name = imported.name
        self.decisions = decisions
        self.rewritten = rewritten
        self.costs = dict(costs)
        self.op_times: dict[str, float] = {n: c.duration_us for n, c in costs.items()}
        """Simulated device time per node, microseconds (the product's compute model)."""
        self.ops = records
        self.model_id = model_id
        self.kernel_meta_files = kernel_meta_files
        self._session: onnxruntime.InferenceSession | None = session
        self._dump_session: onnxruntime.InferenceSession | None = None
        self._dump_names: list[str] = []
        self._factory = session_factory
        self._step = 0
        self._fault: str | None = None
        self._clock_us = 0.0
        self._lock = threading.Lock()
        self._records = {r.name: r for r in records}
        self._input_types = {n: imported.types.get(n) for n in imported.inputs}
        self.simulated_time_us = float(sum(self.op_times.values()))
        """Modelled device time of one step (ops only, no host copies)."""
        self._symbolic = any(
            t is not None and (t.shape is None or any(d is None for d in t.shape))
            for t in self._input_types.values()
        )
        self._cost_signature: tuple[tuple[int, ...], ...] | None = None

    # -- public API ------------------------------------------------------------------------

    def inject_fault(self, node: str | None) -> None:
        """Raise a simulated AI Core error when ``node`` runs (``None`` clears it).

        A fault-injection aid for exercising exception dumps; the same as setting
        ``GEPLUG_SIM_FAULT_NODE=<node>``.
        """
        if node is not None and node not in self._records:
            raise CompileError(
                f"inject_fault: model {self.name!r} has no node {node!r}; nodes: "
                + ", ".join(list(self._records)[:20]), node=node,
            )
        self._fault = node

    def decision(self, node: str) -> OpDecision:
        """The decision of ``node``."""
        for d in self.decisions:
            if d.node == node:
                return d
        raise KeyError(node)

    def run(self, inputs: Mapping[str, Any], step: int | None = None) -> dict[str, np.ndarray]:
        """Run one step; returns ``{output name: array}`` in the model's output dtypes."""
        if self._session is None:
            raise CompileError(f"model {self.name!r} was closed; compile it again", node="")
        self.system._check_open()
        feeds = self._check_inputs(inputs)
        if self._symbolic:
            self._refresh_costs(feeds)
        with self._lock:
            if step is None:
                step = self._step
            self._step = max(self._step, step + 1)
        fault = self._fault or os.environ.get(FAULT_ENV) or None
        if fault is not None and fault not in self._records:
            fault = None
        dump = _wants_tensors(self.system, step)
        outputs = list(self.imported.outputs)
        if dump or fault is not None:
            values = self._run_exposed(feeds)
        else:
            values = dict(zip(outputs, self._session.run(outputs, feeds), strict=True))
        self._emit(step, feeds, values, dump=dump, fault=fault)
        return {name: values[name] for name in outputs}

    def close(self) -> None:
        """Release the onnxruntime sessions."""
        self._session = None
        self._dump_session = None

    # -- inputs ----------------------------------------------------------------------------

    def _check_inputs(self, inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
        if not isinstance(inputs, Mapping):
            raise InputError(
                f"inputs must be a mapping of input name to array, got {type(inputs).__name__}; "
                f"the model's inputs are {list(self.imported.inputs)}", node="",
            )
        unknown = [k for k in inputs if k not in self._input_types]
        if unknown:
            raise InputError(
                f"model {self.name!r} has no input {unknown[0]!r}; its inputs are "
                f"{list(self.imported.inputs)}", node=unknown[0],
            )
        feeds: dict[str, Any] = {}
        for name, tt in self._input_types.items():
            if name not in inputs:
                raise InputError(
                    f"input {name!r} of model {self.name!r} is missing; give it as "
                    f"{{{name!r}: array}}"
                    + (f" ({tt.dtype}, shape {list(tt.shape or ())})" if tt else ""),
                    node=name,
                )
            value = inputs[name]
            if tt is None and not isinstance(value, np.ndarray):
                feeds[name] = value  # a sequence / optional input: passed as given
                continue
            array = value if isinstance(value, np.ndarray) else np.asarray(value)
            if tt is not None:
                want = _NP_DTYPES.get(tt.dtype)
                if want is not None and array.dtype != want:
                    if not isinstance(value, np.ndarray) and np.can_cast(
                        array.dtype, want, casting="same_kind"
                    ):
                        array = array.astype(want)
                    else:
                        raise InputError(
                            f"input {name!r} has dtype {array.dtype}, the model expects "
                            f"{tt.dtype}; convert it with .astype(numpy.{tt.dtype})"
                            if tt.dtype != "bfloat16" else
                            f"input {name!r} has dtype {array.dtype}, the model expects "
                            "bfloat16 (ml_dtypes.bfloat16)", node=name,
                        )
                if tt.shape is not None:
                    ok = array.ndim == len(tt.shape) and all(
                        d is None or d == a for d, a in zip(tt.shape, array.shape, strict=True)
                    )
                    if not ok:
                        want_shape = ["?" if d is None else d for d in tt.shape]
                        raise InputError(
                            f"input {name!r} has shape {list(array.shape)}, the model expects "
                            f"{want_shape} ('?' = any size); reshape the array", node=name,
                        )
            feeds[name] = array
        return feeds

    def _refresh_costs(self, feeds: Mapping[str, np.ndarray]) -> None:
        """Re-model op times for the concrete input shapes (symbolic dims count as 1 at
        compile time); cached per input-shape signature."""
        arrays = {k: a for k, a in feeds.items() if isinstance(a, np.ndarray)}
        signature = tuple(tuple(a.shape) for a in arrays.values())
        if signature == self._cost_signature:
            return
        costs = self._factory.costs_for_shapes(self, {k: a.shape for k, a in arrays.items()})
        if costs is not None:
            self.costs = costs
            self.op_times = {n: c.duration_us for n, c in costs.items()}
            self.simulated_time_us = float(sum(self.op_times.values()))
        self._cost_signature = signature

    # -- exposed run (dump, fault) ----------------------------------------------------------

    def _run_exposed(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self._dump_session is None:
            self._dump_session, self._dump_names = self._factory.exposed(self.rewritten)
        names = list(self.imported.outputs) + [
            n for n in self._dump_names if n not in self.imported.outputs
        ]
        result = self._dump_session.run(names, dict(feeds))
        return dict(zip(names, result, strict=True))

    def _tensor(self, ref: TensorRef, values: Mapping[str, np.ndarray],
                feeds: Mapping[str, np.ndarray]) -> TensorRecord | None:
        array = values.get(ref.name)
        if array is None:
            array = feeds.get(ref.name)
        if array is None:
            array = self.rewritten.constant(ref.name)
        if array is None:
            return None
        dtype = ref.dtype or str(array.dtype)
        if dtype in ("float16", "bfloat16", "float32") and array.dtype.kind == "f":
            array = to_device(np.asarray(array), dtype)
        return TensorRecord(name=ref.source, array=np.asarray(array), dtype=dtype)

    # -- events ----------------------------------------------------------------------------

    def _emit(self, step: int, feeds: Mapping[str, np.ndarray], values: Mapping[str, np.ndarray],
              *, dump: bool, fault: str | None) -> None:
        system = self.system
        prof = system.profiling_enabled
        if not (dump or prof or fault):
            return
        run = RunInfo(system=system, model_name=self.name, model_id=self.model_id, step=step,
                      device_id=system.device_id)
        now = time.time() * 1e6
        t = max(now, self._clock_us)
        if prof:
            system.emit_profile(StepEvent(run=run, phase="begin", time_us=t))
            for name, arr in feeds.items():
                dur = max(getattr(arr, "nbytes", 0) / (HOST_LINK_GBPS * 1e9) * 1e6, 1.0)
                system.emit_profile(ApiCall(run=run, name=f"aclrtMemcpy(H2D:{name})",
                                            start_us=t, duration_us=dur))
                t += dur
        launch = self.system.product.compute.launch_overhead_us
        for op in self.ops:
            refs_in = self.rewritten.op_inputs.get(op.name, ())
            refs_out = self.rewritten.op_outputs.get(op.name, ())
            if dump or op.name == fault:
                ins = [r for x in refs_in if (r := self._tensor(x, values, feeds)) is not None]
                outs = [r for x in refs_out if (r := self._tensor(x, values, feeds)) is not None]
            if dump:
                system.emit_dump(DumpEvent(kind="data", run=run, op=op, inputs=ins, outputs=outs,
                                           timestamp_us=int(t)))
            if op.name == fault:
                self._raise_fault(run, op, ins, outs, int(t))
            cost = self.costs[op.name]
            if prof:
                types = self.imported.types
                node_in = [r.source for r in refs_in]
                node_out = [r.source for r in refs_out]
                def shape(n: str, types: Mapping[str, Any] = types) -> tuple[int, ...]:
                    t = types.get(n)
                    return tuple(int(d or 1) for d in ((t.shape or ()) if t else ()))
                system.emit_profile(TaskEvent(
                    run=run, op=op, start_us=t, duration_us=cost.duration_us,
                    wait_us=launch, flops=cost.flops, bytes_moved=cost.bytes_moved,
                    input_shapes=[shape(n) for n in node_in],
                    input_dtypes=[r.dtype for r in refs_in],
                    input_formats=[_format_of(op.op_type, len(shape(n))) for n in node_in],
                    output_shapes=[shape(n) for n in node_out],
                    output_dtypes=[r.dtype for r in refs_out],
                    output_formats=[_format_of(op.op_type, len(shape(n))) for n in node_out],
                    cube_fraction=cost.cube_fraction,
                ))
            t += cost.duration_us + launch
        if prof:
            for name in self.imported.outputs:
                arr = values[name]
                dur = max(getattr(arr, "nbytes", 0) / (HOST_LINK_GBPS * 1e9) * 1e6, 1.0)
                system.emit_profile(ApiCall(run=run, name=f"aclrtMemcpy(D2H:{name})",
                                            start_us=t, duration_us=dur))
                t += dur
            system.emit_profile(StepEvent(run=run, phase="end", time_us=t))
        self._clock_us = t

    def _raise_fault(self, run: RunInfo, op: OpRecord, ins: list[TensorRecord],
                     outs: list[TensorRecord], ts: int) -> None:
        cost = self.costs[op.name]
        workspace = hashlib.sha256(f"{op.name}:{op.task_id}".encode()).digest() * 32
        tiling = struct.pack("<4I", cost.block_dim, len(ins), len(outs), op.task_id)
        message = (
            f"simulated AI Core error at node {op.name!r} (op type {op.op_type}, task_id "
            f"{op.task_id}, stream_id {op.stream_id}); injected with inject_fault() or "
            f"{FAULT_ENV}"
        )
        results = self.system.emit_dump(DumpEvent(
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

    def __repr__(self) -> str:
        return (f"<CompiledModel {self.name!r} on {self.system.product.name} "
                f"ops={len(self.decisions)}>")
