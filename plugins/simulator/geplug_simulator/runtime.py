"""The simulator runtime: compiles ONNX models for a system's product.

Pipeline (DESIGN.md "The simulator"): import (opset pinned) -> per-node decisions from the
core (:func:`geplug.precision.decide`) -> Cast-pair rewrite -> one onnxruntime CPU session
(explicit threads, spinning off, ORT_ENABLE_BASIC, which keeps node names and Cast pairs) ->
kernel_meta files and simulated op times. A start-up self-check verifies that a float16
overflow still yields inf.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from geplug.backend import SampleModel
from geplug.errors import BackendError, CompileError
from geplug.events import GraphEvent, OpRecord, RunInfo
from geplug.kernel_meta import KernelSpec, write_kernel_meta
from geplug.precision import decide
from geplug_simulator.compiled import CompiledModel
from geplug_simulator.cost import OpCost, estimate
from geplug_simulator.importer import ImportedModel, TensorType, import_model, tensor_type
from geplug_simulator.rewrite import RewrittenModel, rewrite

if TYPE_CHECKING:
    from geplug.runtime.system import System

__all__ = ["THREADS_ENV", "SessionFactory", "SimRuntime", "self_check", "session_options"]

THREADS_ENV = "GEPLUG_SIM_THREADS"
"""Intra-op thread count of the simulator's sessions (default: min(4, CPU count))."""

_self_check_lock = threading.Lock()
_self_check_done = False


def default_threads() -> int:
    """Threads per session: ``GEPLUG_SIM_THREADS`` or min(4, CPU count)."""
    raw = os.environ.get(THREADS_ENV, "")
    if raw.strip().isdigit() and int(raw) > 0:
        return int(raw)
    return max(1, min(4, os.cpu_count() or 1))


def session_options(threads: int | None = None) -> ort.SessionOptions:
    """The simulator's session options (explicit threads, no spinning, node names kept)."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads or default_threads()
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.add_session_config_entry("session.inter_op.allow_spinning", "0")
    # FATAL only: every onnxruntime error reaches the caller as a CompileError / RunError
    # naming the node, so its own log line would only repeat it on stderr
    so.log_severity_level = 4
    return so


def _node_of(message: str) -> str:
    found = re.search(r"[Nn]ode(?: with name)? ?\(?'?([^'\s)]+)'?\)?", message)
    return found.group(1) if found else ""


class SessionFactory:
    """Makes onnxruntime sessions of rewritten models with the simulator's options (and
    re-models op times for concrete input shapes)."""

    def __init__(self, threads: int | None = None, runtime: SimRuntime | None = None) -> None:
        self.threads = threads
        self.runtime = runtime

    def costs_for_shapes(
        self, compiled: CompiledModel, shapes: dict[str, tuple[int, ...]]
    ) -> tuple[dict[str, TensorType], dict[str, OpCost]] | None:
        """Tensor types and op costs of ``compiled`` with its inputs fixed to ``shapes``
        (``None`` when shape inference fails: the compile-time estimate stays)."""
        if self.runtime is None:
            return None
        model = onnx.ModelProto()
        model.CopyFrom(compiled.imported.model)
        for vi in model.graph.input:
            if vi.name in shapes and vi.type.HasField("tensor_type"):
                dims = vi.type.tensor_type.shape.dim
                for dim, size in zip(dims, shapes[vi.name], strict=False):
                    dim.Clear()
                    dim.dim_value = int(size)
        del model.graph.value_info[:]
        try:
            inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False,
                                                         data_prop=True)
        except Exception:
            return None
        types = dict(compiled.imported.types)
        g = inferred.graph
        for vi in [*g.input, *g.value_info, *g.output]:
            tt = tensor_type(vi)
            if tt is not None:
                types[vi.name] = tt
        imported = attrs.evolve(compiled.imported, types=types)
        return types, self.runtime._costs(imported, compiled.decisions)[0]

    def session(self, model: onnx.ModelProto, name: str) -> ort.InferenceSession:
        """A session of ``model``; onnxruntime's refusal becomes a :class:`CompileError`."""
        model = loadable_by_onnxruntime(model)
        try:
            return ort.InferenceSession(
                model.SerializeToString(), session_options(self.threads),
                providers=["CPUExecutionProvider"],
            )
        except Exception as exc:
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            node = _node_of(text).split("::")[0]
            raise CompileError(
                f"model {name!r} cannot be executed by the simulator"
                + (f" at node {node!r}" if node else "")
                + f": {text}. The operator, its attributes or its dtypes are not supported by "
                "the onnxruntime CPU kernels the simulator uses", node=node,
            ) from None

    def exposed(self, rewritten: RewrittenModel) -> tuple[ort.InferenceSession, list[str]]:
        """A second session of ``rewritten`` exposing every op's device tensors."""
        model = onnx.ModelProto()
        model.CopyFrom(rewritten.model)
        present = {o.name for o in model.graph.output}
        produced = {o for n in model.graph.node for o in n.output}
        names: list[str] = []
        for refs in (*rewritten.op_inputs.values(), *rewritten.op_outputs.values()):
            for ref in refs:
                if ref.name in present or ref.name not in produced:
                    continue
                elem = rewritten.value_types.get(ref.name)
                if elem is None:
                    continue
                present.add(ref.name)
                names.append(ref.name)
                model.graph.output.append(helper.make_tensor_value_info(ref.name, elem, None))
        return self.session(model, model.graph.name), names


def loadable_by_onnxruntime(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with its IR version lowered to the minimum its opsets need.

    ``onnx`` stamps models with its own newest IR version, which an older onnxruntime (the
    newest one for Python 3.10 is 1.23) refuses ("Unsupported model IR version"); the opsets a
    model imports, not the stamp, decide what it uses. Returns a copy when it changes anything.
    """
    try:
        minimum = helper.find_min_ir_version_for(list(model.opset_import), ignore_unknown=True)
    except (TypeError, ValueError):  # an onnx without ignore_unknown, or an unknown domain
        return model
    if model.ir_version <= minimum:
        return model
    lowered = onnx.ModelProto()
    lowered.CopyFrom(model)
    lowered.ir_version = minimum
    return lowered


def self_check(factory: SessionFactory | None = None) -> None:
    """Check once per process that a float16 overflow yields inf through the Cast pair."""
    global _self_check_done
    with _self_check_lock:
        if _self_check_done:
            return
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
        nodes = [
            helper.make_node("Mul", ["x", "x"], ["m"], name="square"),
            helper.make_node("Cast", ["m"], ["m16"], to=TensorProto.FLOAT16, name="to16"),
            helper.make_node("Cast", ["m16"], ["y"], to=TensorProto.FLOAT, name="to32"),
        ]
        model = helper.make_model(helper.make_graph(nodes, "self_check", [x], [y]),
                                  opset_imports=[helper.make_opsetid("", 17)])
        sess = (factory or SessionFactory(1)).session(model, "self_check")
        out = sess.run(None, {"x": np.array([300.0, 2.0], np.float32)})[0]
        if not (np.isposinf(out[0]) and out[1] == 4.0):
            raise BackendError(
                f"simulator self-check failed: 300*300 rounded to float16 gave {out[0]!r} "
                f"instead of inf (onnxruntime {ort.__version__} folds Cast pairs); install an "
                "onnxruntime version that keeps them", reasons={"simulator": "self-check"},
            )
        _self_check_done = True


def _shape(imported: ImportedModel, name: str) -> tuple[int | None, ...] | None:
    t = imported.types.get(name)
    return t.shape if t is not None else None


def _dtype(imported: ImportedModel, name: str) -> str:
    t = imported.types.get(name)
    return t.dtype if t is not None else "float32"


def _attr_int(node: onnx.NodeProto, name: str, default: int) -> int:
    for a in node.attribute:
        if a.name == name:
            return int(a.i)
    return default


def _reduce_size(node: onnx.NodeProto, decision: Any, imported: ImportedModel) -> int:
    """Products summed per output element of a matrix op, or a pooling op's window."""
    ins = [n for n in node.input if n]
    if decision.op_class == "matrix" and ins:
        a = _shape(imported, ins[0]) or ()
        if node.op_type == "Gemm" and len(a) == 2:
            return int(a[0 if _attr_int(node, "transA", 0) else 1] or 1)
        if node.op_type in ("MatMul", "MatMulInteger", "Gemm") or len(ins) < 2:
            return int(a[-1] or 1) if a else 1
        w = _shape(imported, ins[1]) or ()
        if len(w) < 2:
            return 1
        group = max(_attr_int(node, "group", 1), 1)
        window = int(np.prod([int(x or 1) for x in w[2:]]))
        if node.op_type == "ConvTranspose":  # weight (C_in, C_out/group, k...)
            return max(int(w[0] or 1) // group, 1) * window
        return int(w[1] or 1) * window  # weight (C_out, C_in/group, k...)
    if decision.op_type == "Pooling":
        for a in node.attribute:
            if a.name == "kernel_shape":
                return int(np.prod(list(a.ints)))
        s = _shape(imported, ins[0]) if ins else None
        return int(np.prod([int(x or 1) for x in s[2:]])) if s else 1
    return 1


def _refuse_collectives(imported: ImportedModel) -> None:
    """A collective node needs every rank: one system alone cannot run it."""
    from geplug_simulator.collective import is_collective

    for node in imported.model.graph.node:
        if is_collective(node):
            raise CompileError(
                f"node {node.name!r} is a collective ({node.domain}.{node.op_type}): it needs "
                "every rank of the job; run the model with `geplug run MODEL --ranks N` (or "
                "--rank-table FILE), or geplug_simulator.cluster.ClusterJob, so each rank is "
                "a virtual device (docs/distributed.md)", node=node.name)


class SimRuntime:
    """What ``geplug_init_system`` returns: compiles models for ``system``."""

    def __init__(self, system: System, *, threads: int | None = None) -> None:
        self.system = system
        self.factory = SessionFactory(threads, self)
        self.models: list[CompiledModel] = []
        self_check(self.factory)

    def compile(self, model: Any, *, name: str = "", **options: Any) -> CompiledModel:
        """Compile ``model`` (a path, bytes or ``onnx.ModelProto``) for the product."""
        unknown = sorted(set(options) - {"threads"})
        if unknown:
            raise CompileError(
                f"unknown compile option {unknown[0]!r}; the simulator accepts name= and "
                "threads=", node="",
            )
        system = self.system
        stem = ""
        if isinstance(model, (str, os.PathLike)):
            stem = os.path.splitext(os.path.basename(os.fspath(model)))[0]
        # the model name: name=, else the ONNX graph name, else the file stem (docs/dump.md)
        imported = import_model(model, name=name, default_name=stem)
        _refuse_collectives(imported)
        decisions = tuple(decide(imported.nodes, system.product, system.config))
        rewritten = rewrite(imported, decisions)
        factory = SessionFactory(options.get("threads", self.factory.threads), self)
        session = factory.session(rewritten.model, imported.name)
        costs, specs = self._costs(imported, decisions)
        records = self._records(decisions, costs, imported)
        kernel_files = write_kernel_meta(system.product, system.config, specs)
        model_id = system.next_model_id()
        compiled = CompiledModel(
            system=system, imported=imported, decisions=decisions, rewritten=rewritten,
            session=session, costs=costs, records=records, model_id=model_id,
            kernel_meta_files=tuple(kernel_files), session_factory=factory,
        )
        if system.profiling_enabled:
            system.emit_profile(GraphEvent(
                run=RunInfo(system=system, model_name=imported.name, model_id=model_id,
                            step=-1, device_id=system.device_id),
                ops=records,
            ))
        self.models.append(compiled)
        return compiled

    def _costs(
        self, imported: ImportedModel, decisions: Sequence[Any]
    ) -> tuple[dict[str, OpCost], list[KernelSpec]]:
        costs: dict[str, OpCost] = {}
        specs: list[KernelSpec] = []
        graph_nodes = {n.name: n for n in imported.model.graph.node}
        for d in decisions:
            node = graph_nodes[d.node]
            ins = [n for n in node.input if n]
            outs = [n for n in node.output if n]
            in_dt = [d.dtype if _dtype(imported, n) == d.original_dtype and d.dtype else
                     _dtype(imported, n) for n in ins]
            out_dt = [d.output_dtype if _dtype(imported, n) == d.original_dtype and
                      d.output_dtype else _dtype(imported, n) for n in outs]
            reduce_size = _reduce_size(node, d, imported)
            cost = estimate(d, self.system.product, [_shape(imported, n) for n in ins], in_dt,
                            [_shape(imported, n) for n in outs], out_dt,
                            reduce_size=reduce_size)
            costs[d.node] = cost
            specs.append(KernelSpec(
                decision=d, input_shapes=tuple(_shape(imported, n) for n in ins),
                input_dtypes=tuple(_dtype(imported, n) for n in ins),
                output_shapes=tuple(_shape(imported, n) for n in outs),
                output_dtypes=tuple(_dtype(imported, n) for n in outs),
                block_dim=cost.block_dim,
            ))
        return costs, specs

    def _records(
        self, decisions: Sequence[Any], costs: dict[str, OpCost], imported: ImportedModel
    ) -> tuple[OpRecord, ...]:
        """One record per op; ``data_inputs`` names the graph inputs (GE Data ops) it reads."""
        graph_inputs = set(imported.inputs)
        node_inputs = {n.name: tuple(n.input) for n in imported.model.graph.node}
        return tuple(
            OpRecord(
                name=d.node, op_type=d.op_type, onnx_op=d.onnx_op, engine=d.engine,
                dtype=d.dtype or "float32", impl_mode=d.impl_mode,
                task_id=self.system.next_task_id(), stream_id=0,
                block_dim=costs[d.node].block_dim, task_type=costs[d.node].task_type,
                data_inputs=tuple(dict.fromkeys(
                    i for i in node_inputs.get(d.node, ()) if i in graph_inputs)),
            )
            for d in decisions
        )

    @property
    def name(self) -> str:
        """The backend name (the plugin name of :mod:`geplug_simulator.hooks`)."""
        return "simulator"

    def sample_models(self) -> list[SampleModel]:
        """The demo's seeded MLP and CNN with inputs (``geplug demo``, backend conformance)."""
        from geplug_simulator.demo import sample_models

        return sample_models()

    def close(self) -> None:
        """Release every compiled model's sessions (the core then checks user-file names
        against the decisions: :mod:`geplug.precision.unmatched`)."""
        for m in self.models:
            m.close()
        self.models.clear()
