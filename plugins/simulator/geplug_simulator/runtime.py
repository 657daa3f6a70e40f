"""The simulator runtime: compiles ONNX models for a system's product.

Pipeline (DESIGN.md "The simulator"): import (opset pinned) -> per-node decisions from the
core (:func:`geplug.precision.decide`) -> Cast-pair rewrite -> one onnxruntime CPU session
(explicit threads, worker spinning as ``GEPLUG_SIM_SPIN`` resolves (:mod:`.spin`),
onnxruntime's default ORT_ENABLE_ALL, which keeps every Cast pair: its fusions never cross a
Cast, and geplug's own GE-style fusion is in the device model) ->
kernel_meta files and simulated op times. A start-up self-check verifies that a float16
overflow still yields inf.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from operator import attrgetter, eq
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from geplug.backend import SampleModel
from geplug.config.problems import Problem
from geplug.config.resolved import Source
from geplug.device import DeviceModel, Node, OptimizedGraph, build_device_model, optimize
from geplug.device.cost import small_channel_in_force
from geplug.device.model import conversion_decision, decomposed_attention_note
from geplug.errors import BackendError, CompileError, ConfigError
from geplug.events import GraphEvent, OpRecord, RunInfo
from geplug.kernel_meta import KernelSpec, conversion_spec, write_kernel_meta
from geplug.precision import NodeInfo, decide
from geplug_simulator.blocked import Shape, keep_blocked, worth_trying
from geplug_simulator.compiled import CompiledModel
from geplug_simulator.cost import OpCost
from geplug_simulator.devicegraph import device_graph, needs_probe, probe_shapes, with_types
from geplug_simulator.importer import (
    FLOAT_NAMES,
    ImportedModel,
    TensorType,
    import_model,
    node_io,
    tensor_type,
)
from geplug_simulator.rewrite import RewrittenModel, rewrite
from geplug_simulator.skeleton import for_onnxruntime
from geplug_simulator.spin import SpinPolicy, read_spin, system_policy

if TYPE_CHECKING:
    from geplug.runtime.system import System

__all__ = ["THREADS_ENV", "SessionFactory", "SimRuntime", "self_check", "session_options"]

THREADS_ENV = "GEPLUG_SIM_THREADS"
"""Intra-op thread count of the simulator's sessions (default: min(4, CPU count))."""

BLOCKED_MAX_BYTES = 1 << 30
"""Models up to this size get the NCHWc Cast edit (onnxruntime writes the optimised graph
to a file first, one protobuf, limited to 2 GiB)."""

_self_check_lock = threading.Lock()
_self_check_done = False


def default_threads() -> int:
    """Threads per session: ``GEPLUG_SIM_THREADS`` (a positive integer; unset or empty:
    min(4, CPU count)). Any other value is a :class:`ConfigError` naming the variable, never
    a silent fallback to the default."""
    raw = os.environ.get(THREADS_ENV) or ""
    if not raw.strip():
        return max(1, min(4, os.cpu_count() or 1))
    if raw.strip().isdigit() and int(raw) > 0:
        return int(raw)
    raise ConfigError([Problem(
        option=THREADS_ENV, value=raw, severity="error",
        message=f"{THREADS_ENV} must be a positive integer (onnxruntime's intra-op threads "
                "per simulated session)",
        hint=f"export {THREADS_ENV}={max(1, min(4, os.cpu_count() or 1))}, or unset it for "
             "min(4, CPU count)")], source="environment")


def session_options(threads: int | None = None, spin: bool = False) -> ort.SessionOptions:
    """The simulator's session options (explicit threads, worker threads spinning between
    ops only when ``spin`` (:mod:`geplug_simulator.spin`), onnxruntime's full graph
    optimisation: it keeps the Cast pairs that emulate reduced precision, checked by
    ``test_sim_session_level.py``; tensors a dump needs are graph outputs of the exposing
    session, which onnxruntime never fuses away)."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads or default_threads()
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    so.add_session_config_entry("session.inter_op.allow_spinning", "1" if spin else "0")
    # FATAL only: every onnxruntime error reaches the caller as a CompileError / RunError
    # naming the node, so its own log line would only repeat it on stderr
    so.log_severity_level = 4
    return so


OVERLAP = True
"""Build the device model while onnxruntime creates the session (on 2+ cores; see
:meth:`SimRuntime._session_and_device`). ``False`` runs them one after the other (the
compile-speed bench compares both)."""


def _overlap_enabled() -> bool:
    return OVERLAP and (os.cpu_count() or 1) >= 2


@contextlib.contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a compile (re-enabled after, if it was on).

    A compile allocates ~10 objects per node (IR records, decisions, tasks, costs) and keeps
    nearly all of them: the collector's passes during it find no garbage, and a full pass
    walks every live object of the process (~0.1 s at 10,000 nodes), landing in whichever
    pass happens to allocate (measured: 12-20% of a 10,000-node compile's CPU). Reference
    counting still frees everything acyclic at once; the collector runs again after the
    compile."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


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
        self, compiled: CompiledModel, shapes: dict[str, tuple[int, ...]],
        feeds: Mapping[str, Any] | None = None,
    ) -> tuple[dict[str, TensorType], DeviceModel, dict[str, OpCost],
               tuple[OpRecord, ...]] | None:
        """Tensor types, device model, task costs and op records of ``compiled`` with its
        inputs fixed to ``shapes`` (shape inference, then a probe run with ``feeds`` for what
        stays open); ``None`` when nothing can be inferred (the compile-time estimate
        stays). The records keep the compiled ones' task ids; they differ from
        ``compiled.ops`` only where the shapes change the tasks (a format conversion that a
        resolved dimension adds or removes)."""
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
        if needs_probe(imported, types) and feeds is not None:
            probed = probe_shapes(imported, self, feeds)
            if probed is not None:
                types = probed
                imported = attrs.evolve(imported, types=types)
        opt = optimize(device_graph(imported), self.runtime.system.product.graph)
        device = self.runtime.device_model(imported, opt, compiled.decisions,
                                           check_memory=False,
                                           fusion=compiled.fusion)
        costs, _, records = self.runtime._tasks(
            imported, device, compiled.decisions, compiled.rewritten,
            task_ids={r.name: r.task_id for r in compiled.ops})
        return types, device, costs, records

    def session(self, model: onnx.ModelProto, name: str, *,
                blocked: Mapping[str, TensorType] | None = None) -> ort.InferenceSession:
        """A session of ``model``; onnxruntime's refusal becomes a :class:`CompileError`.

        ``blocked`` (the model's tensor types): keep float16-emulation Cast pairs in
        onnxruntime's NCHWc layout (:mod:`geplug_simulator.blocked`; outputs bit-identical)
        when the model has any."""
        spin = self.runtime is not None and self.runtime.spin_policy().spin
        options = session_options(self.threads, spin)
        # large weights go beside the serialized graph as arrays (geplug_simulator.skeleton)
        try:
            data, names, arrays = for_onnxruntime(model, _onnxruntime_ir(model))
            if names:
                options.add_external_initializers(
                    names, [ort.OrtValue.ortvalue_from_numpy(a) for a in arrays])
        except Exception as exc:
            raise _refused(name, exc) from None
        size = len(data) + sum(a.nbytes for a in arrays)
        if blocked is not None and size < BLOCKED_MAX_BYTES and worth_trying(model):
            shapes: dict[str, Shape] = {
                n: tuple(d for d in t.shape if d is not None) for n, t in blocked.items()
                if t.shape is not None and None not in t.shape}
            with tempfile.TemporaryDirectory(prefix="geplug_sim_") as tmp:
                options.optimized_model_filepath = os.path.join(tmp, "optimized.onnx")
                session = self._create(data, options, name)
                edited = keep_blocked(onnx.load(options.optimized_model_filepath), shapes)
            if edited is None:
                return session
            options = session_options(self.threads, spin)
            # the edited graph is onnxruntime's own optimised one: optimising it again could
            # only undo the edit
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            return self._create(edited.SerializeToString(), options, name)
        return self._create(data, options, name)

    def _create(self, data: bytes, options: ort.SessionOptions, name: str
                ) -> ort.InferenceSession:
        try:
            return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise _refused(name, exc) from None

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


def _refused(name: str, exc: Exception) -> CompileError:
    """onnxruntime's refusal of model ``name`` as a :class:`CompileError` naming the node."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    node = _node_of(text).split("::")[0]
    return CompileError(
        f"model {name!r} cannot be executed by the simulator"
        + (f" at node {node!r}" if node else "")
        + f": {text}. The operator, its attributes or its dtypes are not supported by "
        "the onnxruntime CPU kernels the simulator uses", node=node,
    )


def _onnxruntime_ir(model: onnx.ModelProto) -> int | None:
    """The IR version to stamp ``model`` with for onnxruntime: the minimum its opsets need
    when lower than its own (:func:`loadable_by_onnxruntime`), else ``None``."""
    try:
        minimum = helper.find_min_ir_version_for(list(model.opset_import), ignore_unknown=True)
    except (TypeError, ValueError):  # an onnx without ignore_unknown, or an unknown domain
        return None
    return minimum if model.ir_version > minimum else None


def loadable_by_onnxruntime(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with its IR version lowered to the minimum its opsets need.

    ``onnx`` stamps models with its own newest IR version, which an older onnxruntime (the
    newest one for Python 3.10 is 1.23) refuses ("Unsupported model IR version"); the opsets a
    model imports, not the stamp, decide what it uses. Returns a copy when it changes anything.
    """
    minimum = _onnxruntime_ir(model)
    if minimum is None:
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


def device_infos(imported: ImportedModel, opt: OptimizedGraph) -> list[NodeInfo]:
    """The precision inputs of the device nodes: folded, eliminated and view nodes are no
    tasks, so a grey-list op's predecessors are the device nodes producing its floating
    inputs, whatever way the exporter spelled its constants."""
    graph_nodes = opt.graph.nodes
    infos = imported.nodes
    floats = {n for n, t in imported.types.items() if t.dtype in FLOAT_NAMES}
    alias, producer = opt.alias, opt.producer
    aget, pget = alias.get, producer.get
    # the device IR lists the importer's nodes in the importer's order (device_graph)
    aligned = len(graph_nodes) == len(infos) and all(map(
        eq, map(attrgetter("name"), infos), map(attrgetter("name"), graph_nodes)))
    if aligned:
        pairs: Iterable[tuple[NodeInfo, Node | None]] = zip(infos, graph_nodes, strict=True)
    else:
        by_name = {n.name: n for n in graph_nodes}
        pairs = zip(infos, (by_name.get(i.name) for i in infos), strict=True)
    # every node a device node (none folded, eliminated or a view): no membership tests,
    # and the device nodes' order is the graph's
    every = aligned and len(opt.device_nodes) == len(graph_nodes)
    device = frozenset() if every else frozenset(opt.device_nodes)
    found: list[NodeInfo] = []
    for info, node in pairs:
        if node is None or (not every and info.name not in device):
            continue
        ins = node.inputs
        if len(ins) == 1:  # most nodes: no dict to build
            t = ins[0]
            p = pget(aget(t, t)) if t in floats else None
            preds: tuple[str, ...] = () if p is None else (p,)
        else:
            preds = tuple(dict.fromkeys(
                p for t in ins if t in floats and (p := pget(aget(t, t))) is not None))
        # the importer's predecessors already hold where no fold or view intervened
        found.append(info if preds == info.predecessors
                     else attrs.evolve(info, predecessors=preds))
    if every:
        return found
    by_node = {i.name: i for i in found}
    return [by_node[name] for name in opt.device_nodes]


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
        self.spin_setting = read_spin()
        """``GEPLUG_SIM_SPIN`` as read when the device was opened (a bad value fails here)."""
        if threads is None:
            default_threads()  # a bad GEPLUG_SIM_THREADS fails when the device is opened
        self.factory = SessionFactory(threads, self)
        self.models: list[CompiledModel] = []
        self_check(self.factory)

    def spin_policy(self) -> SpinPolicy:
        """Whether sessions made now spin: ``GEPLUG_SIM_SPIN`` against the ranks and the
        simulated devices sharing this machine (:func:`geplug_simulator.spin.system_policy`)."""
        manager = getattr(self.system, "manager", None)
        return system_policy(self.spin_setting, self.system,
                             getattr(manager, "open_systems", ()))

    def compile(self, model: Any, *, name: str = "", **options: Any) -> CompiledModel:
        """Compile ``model`` (a path, bytes or ``onnx.ModelProto``) for the product."""
        unknown = sorted(set(options) - {"threads", "fusion"})
        if unknown:
            raise CompileError(
                f"unknown compile option {unknown[0]!r}; the simulator accepts name=, "
                "threads= and fusion=", node="",
            )
        fusion = options.get("fusion", True)
        if not isinstance(fusion, bool):
            raise CompileError(
                f"compile option fusion={fusion!r}: expected True (the product's fusion "
                "patterns, as GE fuses) or False (every node its own task, as with GE's "
                "fusion_switch_file turning graph and UB fusion off)", node="")
        with cyclic_gc_paused():
            return self._compile(model, name, fusion, options.get("threads",
                                                                  self.factory.threads))

    def _compile(self, model: Any, name: str, fusion: bool, threads: int | None
                 ) -> CompiledModel:
        """:meth:`compile` after its options are checked (the collector paused)."""
        system = self.system
        stem = ""
        if isinstance(model, (str, os.PathLike)):
            stem = os.path.splitext(os.path.basename(os.fspath(model)))[0]
        # the model name: name=, else the ONNX graph name, else the file stem (docs/dump.md)
        imported = import_model(model, name=name, default_name=stem)
        _refuse_collectives(imported)
        factory = SessionFactory(threads, self)
        imported, opt, shape_note = self._exact_shapes(imported, factory)
        infos = device_infos(imported, opt)
        decisions = tuple(decide(infos, system.product, system.config))
        rewritten = rewrite(imported, decisions)
        session, device = self._session_and_device(factory, rewritten, imported, opt,
                                                   decisions, fusion)
        costs, specs, records = self._tasks(imported, device, decisions, rewritten)
        kernel_files = write_kernel_meta(system.product, system.config, specs)
        c04_note = ""
        # an enable_small_channel the user set that the SoC cannot honour is said, not
        # silently dropped (the TF adapter's R29 default is not worth a note)
        if system.config.enable_small_channel and not device.small_channel and \
                system.config.source("enable_small_channel") == Source.USER and any(
                g.c04 for p in device.tasks for w in p.works for g in w.gemms):
            c04_note = (f"enable_small_channel = 1 has no effect on {system.product.name}: "
                        "its SoC uses C04 only for a first layer fed by AIPP "
                        "(compute.small_channel_needs_aipp), which geplug does not model")
        model_id = system.next_model_id()
        compiled = CompiledModel(
            system=system, imported=imported, decisions=decisions, rewritten=rewritten,
            session=session, costs=costs, records=records, model_id=model_id,
            kernel_meta_files=tuple(kernel_files), session_factory=factory,
            device=device, fusion=fusion, notes=tuple(n for n in (
                shape_note, c04_note, decomposed_attention_note(device, system.product)) if n),
        )
        if system.profiling_enabled:
            system.emit_profile(GraphEvent(
                run=RunInfo(system=system, model_name=imported.name, model_id=model_id,
                            step=-1, device_id=system.device_id),
                ops=records, memory_bytes=device.memory.total_bytes,
                memory_plans=(device.memory,),
            ))
        self.models.append(compiled)
        return compiled

    def _session_and_device(
        self, factory: SessionFactory, rewritten: RewrittenModel, imported: ImportedModel,
        opt: OptimizedGraph, decisions: Sequence[Any], fusion: bool,
    ) -> tuple[ort.InferenceSession, DeviceModel]:
        """The onnxruntime session of ``rewritten`` and the device model, overlapped.

        Neither feeds the other, and onnxruntime initialises a session in C++ with the GIL
        released, so on a machine with 2+ cores the session is made on a worker thread
        while this thread builds the device model: the device model's CPU is unchanged, its
        wall time hides behind the session's. Errors surface as they would in sequence:
        onnxruntime's refusal (a :class:`CompileError` naming the node) first, then the
        device model's (a :class:`~geplug.device.memory.DeviceMemoryError`); the worker is
        always joined before this returns or raises (the profiling export forks only when
        no other thread runs)."""
        if not _overlap_enabled():
            session = factory.session(rewritten.model, imported.name, blocked=imported.types)
            return session, self.device_model(imported, opt, decisions, fusion=fusion)
        made: list[ort.InferenceSession] = []
        failed: list[BaseException] = []

        def make() -> None:
            try:
                made.append(factory.session(rewritten.model, imported.name, blocked=imported.types))
            except BaseException as exc:  # re-raised on the calling thread below
                failed.append(exc)

        worker = threading.Thread(target=make, name="geplug-sim-session", daemon=True)
        worker.start()
        device: DeviceModel | None = None
        device_error: BaseException | None = None
        try:
            device = self.device_model(imported, opt, decisions, fusion=fusion)
        except BaseException as exc:
            device_error = exc
        finally:
            worker.join()
        if failed:
            raise failed[0]
        if device_error is not None:
            raise device_error
        assert device is not None
        return made[0], device

    # -- the device model (geplug.device) ----------------------------------------------------

    def _exact_shapes(self, imported: ImportedModel, factory: SessionFactory
                      ) -> tuple[ImportedModel, OptimizedGraph, str]:
        """Every dimension resolved at compile where the inputs are static (shape inference,
        then a probe run); a note naming what stays open until run time."""
        note = ""
        if needs_probe(imported, imported.types):
            probed = probe_shapes(imported, factory)
            if probed is not None:
                imported = with_types(imported, probed)
            else:
                open_inputs = [n for n in imported.inputs
                               if imported.types.get(n) is None
                               or imported.types[n].shape is None
                               or any(d is None for d in imported.types[n].shape or ())]
                note = ("dimensions unresolved at compile (dynamic inputs "
                        f"{', '.join(open_inputs) or 'none'}): op costs are modelled from the "
                        "actual input shapes at run, once per distinct shape")
        opt = optimize(device_graph(imported), self.system.product.graph)
        return imported, opt, note

    def device_model(self, imported: ImportedModel, opt: OptimizedGraph,
                     decisions: Sequence[Any], *, check_memory: bool = True,
                     fusion: bool = True) -> DeviceModel:
        """Fusion, costs, schedule and memory plan of ``opt`` on the system's product."""
        system = self.system
        return build_device_model(
            opt, system.product, {d.node: d for d in decisions}, issue_mode="graph",
            soc_version=system.config.config.soc_version or "", check_memory=check_memory,
            model_name=imported.name, fusion=fusion,
            aicore_num=system.config.config.aicore_num,
            buffer_optimize=system.config.config.buffer_optimize,
            small_channel=small_channel_in_force(system.product,
                                                 system.config.enable_small_channel),
        )

    def _tasks(
        self, imported: ImportedModel, device: DeviceModel, decisions: Sequence[Any],
        rewritten: RewrittenModel, *, task_ids: Mapping[str, int] | None = None,
    ) -> tuple[dict[str, OpCost], list[KernelSpec], tuple[OpRecord, ...]]:
        """Per task: its cost, kernel description and op record."""
        by_node = {d.node: d for d in decisions}
        graph_inputs = set(imported.inputs)
        node_inputs = {name: ins for name, _, ins, _ in node_io(imported)}
        costs: dict[str, OpCost] = {}
        specs: list[KernelSpec] = []
        records: list[OpRecord] = []
        conversions = {c.name: c for c in device.conversions}
        for plan in device.tasks:
            task = plan.task
            c = plan.cost
            costs[task.name] = OpCost(c.flops, c.bytes_moved, plan.duration_ns / 1000.0,
                                      c.block_dim, c.cube_fraction, c.task_type)
            conv = conversions.get(task.name) if task.inserted else None
            if conv is not None:  # a TransData GE inserts: its tensor in, converted out
                specs.append(conversion_spec(conv, conversion_decision(conv), c.block_dim))
                records.append(OpRecord(
                    name=task.name, op_type=task.op_type, engine="AI_CORE", dtype=conv.dtype,
                    task_id=(task_ids or {}).get(task.name) or self.system.next_task_id(),
                    stream_id=plan.stream_id, block_dim=c.block_dim, task_type=c.task_type,
                    data_inputs=(conv.tensor,) if conv.tensor in graph_inputs else ()))
                continue
            anchor = by_node[task.members[0]]
            d = anchor if not task.fused else attrs.evolve(
                anchor, node=task.name, op_type=task.op_type)
            ins = [t for t in task.inputs]
            outs = [t for t in task.outputs]
            specs.append(KernelSpec(
                decision=d, input_shapes=tuple(_shape(imported, n) for n in ins),
                input_dtypes=tuple(_dtype(imported, n) for n in ins),
                output_shapes=tuple(_shape(imported, n) for n in outs),
                output_dtypes=tuple(_dtype(imported, n) for n in outs),
                block_dim=c.block_dim,
            ))
            reads = [i for m in task.members for i in node_inputs.get(m, ())]
            records.append(OpRecord(
                name=task.name, op_type=task.op_type, onnx_op=anchor.onnx_op,
                engine=anchor.engine, dtype=anchor.dtype or "float32",
                impl_mode=anchor.impl_mode,
                task_id=(task_ids or {}).get(task.name) or self.system.next_task_id(),
                stream_id=plan.stream_id, block_dim=c.block_dim, task_type=c.task_type,
                data_inputs=tuple(dict.fromkeys(i for i in reads if i in graph_inputs)),
            ))
        return costs, specs, tuple(records)

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
