"""``system.compile(TorchModel(module, inputs))``: a torch module on the core's backend contract.

Besides ``torch.compile`` (training, :mod:`geplug_torch.npu_backend`), the torch backend
serves the contract every backend fulfils (``geplug.backend``: ``geplug run``, ``geplug
demo``-style use, the backend conformance suite): a module with its declared inputs is
exported once (``torch.export``, decomposed to core aten ops), its inference graph compiled
by :func:`geplug_torch.graph.compile_graph` (the core's precision resolution and device
model), and each ``run(inputs, step)`` executes the rewritten graph on numpy feeds with the
same rounding, emitting the step's dump and profiling events. Parameters are constants of
an inference graph (GE folds what only they feed), as in an ATC-built offline model.
"""

from __future__ import annotations

import copy
import threading
import warnings
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from geplug.backend import TensorSpec
from geplug.errors import CompileError, RunError
from geplug.events import StepEvent
from geplug.runtime.result import RunResult

if TYPE_CHECKING:
    from geplug.device import MemoryPlan
    from geplug.precision import OpDecision
    from geplug_torch.graph import CompiledGraph
    from geplug_torch.runtime import TorchRuntime

__all__ = ["StaticModel", "TorchModel"]


def _specs(value: Any) -> dict[str, TensorSpec]:
    out: dict[str, TensorSpec] = {}
    for name, spec in dict(value).items():
        if isinstance(spec, TensorSpec):
            out[str(name)] = spec
        else:  # an example array
            array = np.asarray(spec)
            out[str(name)] = TensorSpec(name=str(name), dtype=str(array.dtype),
                                        shape=tuple(int(d) for d in array.shape))
    return out


def _names(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value)


@attrs.frozen(kw_only=True, eq=False)
class TorchModel:
    """A torch module and the inputs its ``forward`` takes (positionally, in order):
    ``{name: TensorSpec or example array}``. ``outputs`` names its outputs (default
    ``output0, output1, ...``)."""

    module: Any
    inputs: Mapping[str, TensorSpec] = attrs.field(converter=_specs)
    outputs: tuple[str, ...] = attrs.field(converter=_names, default=())
    name: str = ""


_exports: weakref.WeakKeyDictionary[Any, dict[Any, Any]] = weakref.WeakKeyDictionary()
_export_lock = threading.Lock()


def _zeros(spec: TensorSpec) -> Any:
    import torch

    from geplug_torch.lowering import torch_dtype

    dtype = torch_dtype(spec.dtype) or getattr(torch, spec.dtype, None)
    if dtype is None:
        raise CompileError(f"input {spec.name!r}: dtype {spec.dtype!r} has no torch dtype; "
                           "declare a float or integer numpy dtype", node=spec.name)
    if spec.shape is None or any(d is None for d in spec.shape):
        raise CompileError(f"input {spec.name!r}: shape {spec.shape!r} is not static; the "
                           "torch backend's compile() needs every dimension", node=spec.name)
    return torch.zeros(tuple(int(d or 0) for d in spec.shape), dtype=dtype)


def exported(model: TorchModel) -> Any:
    """The decomposed aten GraphModule of ``model`` (exported once per module and inputs:
    product-independent, so every product compiles from the same graph)."""
    import torch

    key = tuple((s.name, s.dtype, s.shape) for s in model.inputs.values())
    with _export_lock:
        cache = _exports.setdefault(model.module, {})
        if key not in cache:
            args = tuple(_zeros(s) for s in model.inputs.values())
            try:
                ep = torch.export.export(model.module.eval(), args).run_decompositions()
            except Exception as exc:  # torch's own failure: name the model and what to do
                raise CompileError(
                    f"torch.export could not trace model {model.name or 'model'!r}: "
                    f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}; "
                    "train it with torch.compile(model, backend=geplug_torch.backend(...)) "
                    "instead", node="") from None
            cache[key] = ep.module()
        return cache[key]


class StaticModel:
    """A compiled :class:`TorchModel` (``geplug.backend.CompiledModel``)."""

    def __init__(self, runtime: TorchRuntime, model: TorchModel, *, name: str = "",
                 fusion: bool = True) -> None:
        from geplug_torch.emit import GraphEmitter
        from geplug_torch.graph import compile_graph
        from geplug_torch.model import TrainingModel

        self.runtime = runtime
        self.system = runtime.system
        with warnings.catch_warnings():  # torch's pytree spec warns while being copied
            warnings.filterwarnings("ignore", "`isinstance.treespec, LeafSpec.", FutureWarning)
            gm = copy.deepcopy(exported(model))
        self._holder = TrainingModel(runtime, register=False)
        self._holder.name = name or model.name or self._holder.name
        self.graph: CompiledGraph = compile_graph(
            gm, system=self.system, phase="inference", graph_name=self._holder.name,
            fusion=fusion)
        self._holder.graphs["inference"] = self.graph
        self._emitter = GraphEmitter(self._holder, self.graph)
        self._inputs = dict(model.inputs)
        count = _output_count(gm)
        if model.outputs and len(model.outputs) != count:
            raise CompileError(
                f"model {self.name!r} names {len(model.outputs)} outputs "
                f"{list(model.outputs)} but its forward returns {count} tensors; name each "
                "returned tensor once", node="")
        self._outputs: tuple[str, ...] = model.outputs or tuple(
            f"output{i}" for i in range(count))
        self._step = 0
        self._lock = threading.Lock()
        self.closed = False
        # the graph's ops and memory plans: to this system when it profiles, and to every
        # recording torch profiler's (a profiler opened later gets them from announce_all)
        runtime.announce(self._holder)

    # -- the contract ----------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._holder.name

    @property
    def model_id(self) -> int:
        return self._holder.model_id

    @property
    def decisions(self) -> Sequence[OpDecision]:
        return self.graph.decisions

    @property
    def device(self) -> Any:
        """The core's device model (``node_task`` maps an op to its fused task)."""
        return self.graph.device

    @property
    def inputs(self) -> Mapping[str, TensorSpec]:
        return dict(self._inputs)

    @property
    def outputs(self) -> Sequence[str]:
        return self._outputs

    @property
    def op_times(self) -> Mapping[str, float]:
        return {op.record.name: op.duration_us for op in self.graph.ops}

    @property
    def simulated_time_us(self) -> float:
        return self.graph.span_us

    @property
    def memory(self) -> MemoryPlan:
        return self.graph.device.memory

    @property
    def kernel_meta_files(self) -> Sequence[str]:
        return self.graph.kernel_meta_files

    def run(self, inputs: Mapping[str, Any], step: int | None = None) -> RunResult:
        """One step on numpy feeds; returns ``{output name: array}`` (a RunResult)."""
        import torch
        from geplug_simulator.importer import TensorType
        from geplug_simulator.inputs import check_inputs

        if self.closed:
            raise CompileError(f"model {self.name!r} was closed; compile it again", node="")
        if step is not None and (isinstance(step, bool) or not isinstance(step, int)
                                 or step < 0):
            raise RunError(f"model {self.name!r}: run(step={step!r}): step must be an integer "
                           ">= 0 (or None for the next step)", argument="step")
        types = {n: TensorType(s.dtype, s.shape) for n, s in self._inputs.items()}
        feeds = check_inputs(self.name, inputs, list(self._inputs), types)
        args = [torch.from_numpy(np.ascontiguousarray(feeds[n])) for n in self._inputs]
        with self._lock:
            if step is None:
                step = self._step
            self._step = max(self._step, step + 1)
        runtime, holder = self.runtime, self._holder
        prof = self.system.profiling_enabled
        if prof:
            self.system.emit_profile(StepEvent(run=runtime.run_info(holder, step),
                                               phase="begin", time_us=runtime.now()))
        with torch.no_grad():
            out = self._emitter.run_step(self.graph.module, args, step)
        if prof:
            self.system.emit_profile(StepEvent(run=runtime.run_info(holder, step),
                                               phase="end", time_us=runtime.now()))
        arrays = _outputs(out)
        return RunResult(dict(zip(self._outputs, arrays, strict=True)), step=step,
                         overflows=self._emitter.last_overflows)

    def close(self) -> None:
        """Release the graph (idempotent)."""
        self.closed = True


def _output_count(gm: Any) -> int:
    import torch.fx

    def count(a: Any) -> int:
        if isinstance(a, torch.fx.Node):
            return 1
        if isinstance(a, (list, tuple)):
            return sum(count(x) for x in a)
        return 0

    return sum(count(n.args) for n in gm.graph.nodes if n.op == "output")


def _outputs(value: Any) -> list[np.ndarray]:
    import torch

    from geplug_torch.emit import to_numpy

    if isinstance(value, torch.Tensor):
        return [np.array(to_numpy(value))]
    if isinstance(value, (list, tuple)):
        return [a for v in value for a in _outputs(v)]
    return []
