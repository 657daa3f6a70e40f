"""Compiling one aten graph (a forward or a backward graph from AOTAutograd) for a product.

The graph goes through the core's device model exactly as an ONNX model does
(``docs/device-model.md``): translated to the device IR (:mod:`geplug_torch.devicegraph`),
:func:`geplug.device.optimize` (dead-node elimination, constant folding, views), the core's
precision resolution for every device node (the same chains and operator tables as the ONNX
simulator), then :func:`geplug.device.build_device_model` (fusion by the product's patterns,
per-task cost, the stream schedule, the memory plan against the SoC's HBM).

Each device task becomes a :class:`GraphOp` with the :class:`~geplug.events.OpRecord` every
dump and profiling event carries (a fused task is named as FE names a UB-fused op: its
members' names concatenated). A format conversion the device model inserts (a TransData,
``trans_TransData_<n>``: :mod:`geplug.device.formats`) runs no fx node; torch_npu launches
such a format-cast kernel inside the aten op that needs it, so its :class:`GraphOp` belongs
to the aten call of the task that first reads the converted tensor (one more kernel of that
call's framework op in profiles, no framework op of its own). The fx graph is then
rewritten so each op decided to run in a lower precision runs through
:class:`~geplug_torch.lowering.Lowered`, and recompiled: a step runs as generated Python
code, as fast as eager PyTorch for ops that keep their dtype.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from geplug.device import DeviceModel, Node, OptimizedGraph, build_device_model, optimize
from geplug.device.cost import small_channel_in_force
from geplug.device.formats import Conversion, Layout
from geplug.device.model import TaskPlan, conversion_decision
from geplug.errors import CompileError
from geplug.events import OpRecord
from geplug.kernel_meta import KernelSpec, conversion_spec, write_kernel_meta
from geplug.precision import NodeInfo, OpDecision, decide
from geplug_torch.devicegraph import FxGraph, TensorMeta, fx_device_graph, view_caps
from geplug_torch.lowering import FLOAT32_STATISTICS, Lowered
from geplug_torch.opmap import aten_name

if TYPE_CHECKING:
    from geplug.runtime.system import System

__all__ = ["CompiledGraph", "GraphOp", "TensorMeta", "compile_graph"]

_FLOATS = ("float16", "bfloat16", "float32", "float64")


@attrs.frozen(kw_only=True)
class GraphOp:
    """One device task of a compiled graph (one aten op, a fused chain of them, or a
    TransData the device model inserted, run as a kernel of its reader's aten call)."""

    fx_name: str
    """The fx node of its first member (a TransData: of the node it converts for)."""
    aten: str
    """The aten op of its first member (``mm``, ``threshold_backward``, ...); a TransData's
    is its call's."""
    members: tuple[str, ...]
    """The fx nodes it runs, in order (one unless fused; none for a TransData)."""
    decision: OpDecision
    record: OpRecord
    start_us: float
    """Start on the device timeline, µs after the graph's launch (the core's schedule)."""
    duration_us: float
    flops: float
    bytes_moved: float
    cube_fraction: float
    inputs: tuple[TensorMeta, ...]
    """What the task reads from outside it (graph inputs, other tasks' outputs, views)."""
    outputs: tuple[TensorMeta, ...]
    """What it writes for consumers outside it or the graph's outputs."""
    call: str = ""
    """The fx node of the aten call it runs (its first member's): the kernels of one call
    (``convolution_backward``'s gradients) share it, and the profiler shows one framework
    op per call."""
    call_inputs: tuple[TensorMeta, ...] = ()
    """The aten call's tensor arguments (the framework op's input shapes in profiles)."""
    conversion: Conversion | None = None
    """The format conversion a TransData task runs (``None`` for a task of graph nodes):
    each side's shape and format in profiles and kernel_meta."""
    formats: Mapping[str, Layout] = attrs.field(factory=dict)
    """Its tensors the device holds in a device format (``NC1HWC0``, ``FRACTAL_Z``), by
    name (``DeviceModel.formats``): their format and shape in profiles."""


@attrs.frozen(kw_only=True)
class CompiledGraph:
    """A graph ready to run: the rewritten GraphModule, its tasks, its device model."""

    module: Any = attrs.field(repr=False)
    phase: str
    """``forward``, ``backward`` or ``inference``."""
    ops: tuple[GraphOp, ...]
    placeholders: tuple[str, ...]
    lowered: int
    """How many aten ops run in a lower precision than the graph's."""
    device: DeviceModel = attrs.field(repr=False)
    """The core's device model: graph passes, fusions, tasks, schedule, memory plan."""
    decisions: tuple[OpDecision, ...] = ()
    """The precision decision of every aten op that runs on the device, in graph order."""
    kernel_meta_files: tuple[str, ...] = ()
    """The kernel_meta files written for its tasks (``op_debug_level``, the product's
    declaration: :func:`geplug.kernel_meta.write_kernel_meta`)."""
    copies: tuple[Any, ...] = ()
    """The host<->device copies of each run (:class:`geplug_torch.copies.GraphCopy`): H2D
    before its tasks, D2H after them."""
    parameters: tuple[int, ...] = ()
    """Positions of :attr:`placeholders` that are module state, parameters and buffers (the
    device memory account counts them: :mod:`geplug_torch.memory`)."""
    held: tuple[int, ...] = ()
    """Positions of :attr:`placeholders` the memory plan holds for the whole graph (every
    input but the parameters: the batch, buffers, a backward's saved tensors)."""
    held_sizes: tuple[int, ...] = ()
    """Per position of :attr:`held`: its aligned bytes in the memory plan (0: not planned)."""

    @property
    def span_us(self) -> float:
        """Simulated device time of one run: first task start to last task end, µs."""
        return self.device.compute_span_us


def _original_dtype(node: Node, fxg: FxGraph) -> str | None:
    floats = [fxg.metas[t].dtype for t in node.inputs
              if t in fxg.metas and fxg.metas[t].dtype in _FLOATS]
    if floats:
        return floats[0]
    outs = [fxg.metas[t].dtype for t in node.outputs if t in fxg.metas]
    return outs[0] if outs else None


def _infos(opt: OptimizedGraph, fxg: FxGraph, prefix: str) -> list[NodeInfo]:
    nodes = {n.name: n for n in fxg.graph.nodes}
    infos = []
    for name in opt.device_nodes:
        node = nodes[name]
        infos.append(NodeInfo(
            name=prefix + name, onnx_op=node.source_op, op_type=node.op_type,
            original_dtype=_original_dtype(node, fxg),
            predecessors=tuple(prefix + p for p in opt.device_predecessors(node))))
    return infos


def _task_io(members: Sequence[str], task_outputs: Sequence[str], opt: OptimizedGraph,
             fxg: FxGraph) -> tuple[tuple[TensorMeta, ...], tuple[TensorMeta, ...]]:
    """A task's kernel arguments: an unfused node's own tensors; a fused task's inputs from
    outside it and the outputs it hands on."""
    nodes = {n.name: n for n in fxg.graph.nodes}
    inside = {t for m in members for t in nodes[m].outputs}
    ins: list[str] = []
    for m in members:
        for t in nodes[m].inputs:
            if opt.root(t) not in inside and t not in ins:
                ins.append(t)
    wanted = set(task_outputs)
    outs = [t for m in members for t in nodes[m].outputs
            if len(members) == 1 or t in wanted]
    return (tuple(fxg.metas[t] for t in ins if t in fxg.metas),
            tuple(fxg.metas[t] for t in outs if t in fxg.metas))


def _lower(fx_node: Any, d: OpDecision) -> bool:
    """Rewrite ``fx_node`` to run in ``d``'s dtype when it is lower than the graph's."""
    if d.dtype in _FLOATS and d.original_dtype in _FLOATS and d.op_type != "Cast" and (
            d.dtype != d.original_dtype or (d.output_dtype or d.dtype) != d.original_dtype):
        keep_in, keep_out = FLOAT32_STATISTICS.get(aten_name(fx_node.target),
                                                   (frozenset(), frozenset()))
        fx_node.target = Lowered(fx_node.target, device=d.dtype,
                                 out=d.output_dtype or d.dtype, original=d.original_dtype,
                                 keep_inputs=keep_in, keep_outputs=keep_out)
        return True
    return False


def _node_op(plan: TaskPlan, task_id: int, by_node: dict[str, OpDecision],
             opt: OptimizedGraph, fxg: FxGraph, name_prefix: str,
             placeholders: frozenset[str], formats: Mapping[str, Layout]) -> GraphOp:
    """The :class:`GraphOp` of a task that runs graph nodes (one aten op, or a fused chain):
    its first member's decision (a fused task's renamed after the task) and aten call."""
    task = plan.task
    members = task.members
    anchor = by_node[members[0]]
    name = name_prefix + task.name
    d = anchor if not task.fused else attrs.evolve(anchor, node=name, op_type=task.op_type)
    ins, outs = _task_io(members, task.outputs, opt, fxg)
    c = plan.cost
    record = OpRecord(
        name=name, op_type=task.op_type, onnx_op=anchor.onnx_op,
        engine=anchor.engine,  # type: ignore[arg-type]
        dtype=anchor.dtype or "float32", impl_mode=anchor.impl_mode,
        task_id=task_id, stream_id=plan.stream_id, block_dim=c.block_dim,
        task_type=c.task_type,
        data_inputs=tuple(dict.fromkeys(m.name for m in ins if m.name in placeholders)),
    )
    call = fxg.fx_nodes[members[0]].name
    split = fxg.call_inputs.get(call)
    return GraphOp(
        fx_name=members[0], aten=anchor.onnx_op.removeprefix("aten."), members=members,
        decision=d, record=record, start_us=plan.start_ns / 1000.0,
        duration_us=plan.duration_ns / 1000.0, flops=c.flops, bytes_moved=c.bytes_moved,
        cube_fraction=c.cube_fraction, inputs=ins, outputs=outs, call=call,
        call_inputs=ins if split is None else tuple(fxg.metas[t] for t in split
                                                   if t in fxg.metas),
        formats=formats)


def _conversion_op(plan: TaskPlan, task_id: int, conv: Conversion, host: GraphOp,
                   fxg: FxGraph, name_prefix: str, placeholders: frozenset[str]) -> GraphOp:
    """The :class:`GraphOp` of a TransData the device model inserted (``conv``): a kernel
    of ``host``'s aten call - the call of the task that first reads the converted tensor,
    which is where torch_npu casts the format - so it shares that call's framework op.

    It reads the tensor and writes ``conv.output``, both with the tensor's logical shape in
    the dtype the device holds it in (a dump holds the logical array; profiles and
    kernel_meta show each side's layout from ``conversion``)."""
    name = name_prefix + plan.task.name
    meta = fxg.metas.get(conv.tensor)
    shape = conv.shape or (meta.shape if meta is not None else ())
    source = TensorMeta(conv.tensor, shape, conv.dtype)
    c = plan.cost
    record = OpRecord(
        name=name, op_type=plan.task.op_type, engine="AI_CORE", dtype=conv.dtype,
        task_id=task_id, stream_id=plan.stream_id, block_dim=c.block_dim,
        task_type=c.task_type,
        data_inputs=(conv.tensor,) if conv.tensor in placeholders else ())
    return GraphOp(
        fx_name=conv.consumer, aten=host.aten, members=(),
        decision=attrs.evolve(conversion_decision(conv), node=name), record=record,
        start_us=plan.start_ns / 1000.0, duration_us=plan.duration_ns / 1000.0,
        flops=c.flops, bytes_moved=c.bytes_moved, cube_fraction=c.cube_fraction,
        inputs=(source,), outputs=(TensorMeta(conv.output, shape, conv.dtype),),
        call=host.call, call_inputs=host.call_inputs or host.inputs, conversion=conv)


def _graph_ops(device: DeviceModel, by_node: dict[str, OpDecision], opt: OptimizedGraph,
               fxg: FxGraph, system: System, name_prefix: str) -> list[GraphOp]:
    """One :class:`GraphOp` per device task, in the device model's order (task ids in that
    order). A TransData's op is built after the op of the task it runs for, whose call it
    joins (:func:`_conversion_op`)."""
    plans = device.tasks
    placeholders = frozenset(fxg.placeholders)
    ids = [system.next_task_id() for _ in plans]
    built = {p.name: _node_op(p, i, by_node, opt, fxg, name_prefix, placeholders,
                              device.formats.get(p.name, {}))
             for p, i in zip(plans, ids, strict=True) if not p.task.inserted}
    ops: list[GraphOp] = []
    for plan, task_id in zip(plans, ids, strict=True):
        if not plan.task.inserted:
            ops.append(built[plan.name])
            continue
        conv = device.conversion(plan.name)
        if conv is None:
            raise CompileError(f"task {plan.name!r} ({plan.task.op_type}) runs no graph node "
                               "and is no format conversion: the torch backend cannot run "
                               "it", node=plan.name)
        host = built[device.node_task.get(conv.consumer, conv.consumer)]
        ops.append(_conversion_op(plan, task_id, conv, host, fxg, name_prefix, placeholders))
    return ops


def _kernel_spec(op: GraphOp) -> KernelSpec:
    """The kernel_meta entry of ``op``: its tensors as the kernel takes them (a TransData's
    each side in its own layout, a 5HD side as ``(N, C1, H, W, C0)``)."""
    if op.conversion is not None:
        return conversion_spec(op.conversion, op.decision, op.record.block_dim)
    return KernelSpec(decision=op.decision,
                      input_shapes=tuple(m.shape for m in op.inputs),
                      input_dtypes=tuple(m.dtype for m in op.inputs),
                      output_shapes=tuple(m.shape for m in op.outputs),
                      output_dtypes=tuple(m.dtype for m in op.outputs),
                      block_dim=op.record.block_dim)


def compile_graph(
    gm: Any,
    *,
    system: System,
    phase: str,
    graph_name: str,
    name_prefix: str = "",
    weights: Sequence[str] = (),
    fusion: bool = True,
) -> CompiledGraph:
    """Decide, model and rewrite ``gm`` (an aten fx GraphModule) for ``system``'s product.

    Op names are the fx node names with ``name_prefix`` (``gradients/`` for a backward
    graph, as GE names gradient ops), so forward and backward ops stay distinct in dumps.
    ``weights`` names the placeholders that are parameters. A decision the product cannot
    serve is a :class:`CompileError` naming the op and the phase; whether the graph fits the
    SoC's memory is checked when it runs, with what else the job holds
    (:mod:`geplug_torch.memory`).
    """
    product = system.product
    fxg = fx_device_graph(gm, name=graph_name, weights=weights)
    held = tuple(k for k, p in enumerate(fxg.placeholders) if p not in fxg.weights)
    opt = optimize(fxg.graph, view_caps(product.graph))
    opt = attrs.evolve(opt, known=opt.known | fxg.weights)
    infos = _infos(opt, fxg, name_prefix)
    try:
        decisions = decide(infos, product, system.config)
        by_node = {name: d for name, d in zip(opt.device_nodes, decisions, strict=True)}
        device = build_device_model(
            opt, product, by_node, issue_mode="graph", fusion=fusion,
            soc_version=system.config.config.soc_version or "",
            model_name=f"{graph_name} ({phase})",
            aicore_num=system.config.config.aicore_num,
            buffer_optimize=system.config.config.buffer_optimize,
            small_channel=small_channel_in_force(product, system.config.enable_small_channel),
            # its inputs are on the device, held by the caller for the whole graph; whether
            # the job fits is the run's check, with what else it holds (geplug_torch.memory)
            held_inputs=[fxg.placeholders[k] for k in held], check_memory=False)
    except CompileError as exc:
        raise CompileError(f"{exc} (graph {graph_name!r}, {phase})", node=exc.node,
                           details={**exc.details, "graph": graph_name}) from None
    lowered = 0
    seen: set[str] = set()
    for name, d in by_node.items():
        fx_node = fxg.fx_nodes[name]
        if fx_node.name not in seen:  # an aten op split into kernels runs as one call:
            seen.add(fx_node.name)  # its first kernel's decision decides its dtype
            lowered += _lower(fx_node, d)
    if lowered:
        gm.recompile()
    ops = _graph_ops(device, by_node, opt, fxg, system, name_prefix)
    specs = [_kernel_spec(op) for op in ops]
    files = write_kernel_meta(product, system.config, specs, generator="geplug-torch")
    return CompiledGraph(module=gm, phase=phase, ops=tuple(ops),
                         placeholders=fxg.placeholders, lowered=lowered, device=device,
                         decisions=tuple(decisions), kernel_meta_files=tuple(files),
                         held=held,
                         held_sizes=tuple(device.memory.block_bytes(fxg.placeholders[k]) or 0
                                          for k in held))

