"""Compiling one aten graph (a forward or a backward graph from AOTAutograd) for a product.

For each fx node that does device work (:mod:`geplug_torch.opmap`): its Ascend op type, a
:class:`~geplug.precision.NodeInfo` for the core's precision resolution, the decision (the
same chains and operator tables as the ONNX simulator), the modelled device time (the
core's cost path) and the :class:`~geplug.events.OpRecord` every dump and profiling event
carries. The fx graph is then rewritten so each lowered op runs through
:class:`~geplug_torch.lowering.Lowered` and recompiled: a step runs as generated Python
code, as fast as eager PyTorch for ops that keep their dtype.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from geplug.errors import CompileError
from geplug.events import OpRecord
from geplug.precision import NodeInfo, OpDecision, decide
from geplug_torch.lowering import Lowered
from geplug_torch.opmap import ascend_op_type, aten_name, is_view

if TYPE_CHECKING:
    from geplug.runtime.system import System

__all__ = ["CompiledGraph", "GraphOp", "TensorMeta", "compile_graph"]

_FLOATS = ("float16", "bfloat16", "float32", "float64")
_DTYPE_NAMES = {
    "float16": "float16", "bfloat16": "bfloat16", "float32": "float32", "float64": "float64",
    "int64": "int64", "int32": "int32", "int16": "int16", "int8": "int8", "uint8": "uint8",
    "bool": "bool", "complex64": "complex64",
}


@attrs.frozen
class TensorMeta:
    """A tensor an op reads or writes: its source name (the fx node), shape and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: str


@attrs.frozen(kw_only=True)
class GraphOp:
    """One device op of a compiled graph."""

    fx_name: str
    aten: str
    decision: OpDecision
    record: OpRecord
    duration_us: float
    flops: float
    bytes_moved: float
    cube_fraction: float
    inputs: tuple[TensorMeta, ...]
    outputs: tuple[TensorMeta, ...]
    input_nodes: tuple[str | None, ...]
    """The fx node producing each input (after views: the tensor's storage producer)."""


@attrs.frozen(kw_only=True)
class CompiledGraph:
    """A graph ready to run: the rewritten GraphModule and its ops in execution order."""

    module: Any = attrs.field(repr=False)
    phase: str
    """``forward``, ``backward`` or ``inference``."""
    ops: tuple[GraphOp, ...]
    placeholders: tuple[str, ...]
    lowered: int
    """How many ops run in a lower precision than the graph's."""


def _dtype_name(dtype: Any) -> str:
    text = str(dtype).replace("torch.", "")
    return _DTYPE_NAMES.get(text, text)


def _metas(val: Any) -> list[tuple[tuple[int, ...], str]]:
    """(shape, dtype) of every tensor in an fx ``meta['val']`` (a tensor or a tuple)."""
    import torch

    if isinstance(val, torch.Tensor):
        try:
            shape = tuple(int(d) for d in val.shape)
        except (TypeError, ValueError):  # symbolic sizes: count them as 1 (dynamic shape)
            shape = tuple(1 for _ in val.shape)
        return [(shape, _dtype_name(val.dtype))]
    if isinstance(val, (list, tuple)):
        return [m for v in val for m in _metas(v)]
    return []


def _tensor_args(node: Any) -> list[Any]:
    import torch.fx

    found: list[Any] = []

    def visit(a: Any) -> None:
        if isinstance(a, torch.fx.Node):
            if _metas(a.meta.get("val")):
                found.append(a)
        elif isinstance(a, (list, tuple)):
            for x in a:
                visit(x)

    for a in node.args:
        visit(a)
    for a in node.kwargs.values():
        visit(a)
    return found


def _reduce_size(aten: str, node: Any, inputs: Sequence[TensorMeta]) -> int:
    """Products summed into one output element of a matrix op (K, or C_in/g * kh * kw)."""
    if not inputs:
        return 1
    if aten == "addmm" and len(inputs) >= 2:
        return max(inputs[1].shape[-1:] or (1,))
    if aten in ("mm", "bmm", "matmul", "baddbmm") or aten.startswith("_scaled_dot"):
        first = inputs[1] if aten == "baddbmm" and len(inputs) > 1 else inputs[0]
        return max(first.shape[-1:] or (1,))
    if aten.startswith("convolution") and len(inputs) >= 2:
        w = inputs[1].shape  # weight (C_out, C_in/groups, kh, kw)
        return max(1, int(w[1] if len(w) > 1 else 1) * int(math.prod(w[2:])))
    return 1


def compile_graph(
    gm: Any,
    *,
    system: System,
    phase: str,
    graph_name: str,
    name_prefix: str = "",
) -> CompiledGraph:
    """Decide, time and rewrite ``gm`` (an aten fx GraphModule) for ``system``'s product.

    Op names are the fx node names with ``name_prefix`` (``gradients/`` for a backward
    graph, as GE names gradient ops), so forward and backward ops stay distinct in dumps.
    A decision the product cannot serve is a :class:`CompileError` naming the op, its aten
    target and the graph.
    """
    from geplug_simulator.cost import estimate

    graph = gm.graph
    storage: dict[str, str | None] = {}
    """fx node -> the compute node whose output it views (None: a graph input)."""
    compute: list[Any] = []
    infos: list[NodeInfo] = []
    placeholders: list[str] = []
    metas_in: dict[str, tuple[TensorMeta, ...]] = {}
    metas_out: dict[str, tuple[TensorMeta, ...]] = {}
    feeders: dict[str, tuple[str | None, ...]] = {}
    for node in graph.nodes:
        if node.op == "placeholder":
            placeholders.append(node.name)
            storage[node.name] = None
            continue
        if node.op != "call_function":
            continue
        aten = aten_name(node.target)
        outs = _metas(node.meta.get("val"))
        args = _tensor_args(node)
        if is_view(aten) or not outs:
            src = args[0].name if args else None
            storage[node.name] = storage.get(src, src) if src is not None else None
            continue
        storage[node.name] = node.name
        ins = tuple(TensorMeta(a.name, *_metas(a.meta.get("val"))[0]) for a in args)
        out_metas = tuple(TensorMeta(node.name if len(outs) == 1 else f"{node.name}:{i}", s, d)
                          for i, (s, d) in enumerate(outs))
        metas_in[node.name], metas_out[node.name] = ins, out_metas
        feeders[node.name] = tuple(storage.get(a.name) for a in args)
        floats = [m.dtype for m in ins if m.dtype in _FLOATS]
        original = floats[0] if floats else (outs[0][1] if outs else None)
        mask: Sequence[bool] = ()
        if aten == "convolution_backward" and len(node.args) > 10:
            mask = tuple(bool(x) for x in node.args[10])
        preds = tuple(dict.fromkeys(p for p in feeders[node.name] if p is not None))
        infos.append(NodeInfo(name=name_prefix + node.name, onnx_op=f"aten.{aten}",
                              op_type=ascend_op_type(aten, mask), original_dtype=original,
                              predecessors=tuple(name_prefix + p for p in preds)))
        compute.append(node)
    try:
        decisions = decide(infos, system.product, system.config)
    except CompileError as exc:
        raise CompileError(f"{exc} (graph {graph_name!r}, {phase})", node=exc.node,
                           details={**exc.details, "graph": graph_name}) from None
    ops: list[GraphOp] = []
    lowered = 0
    data = set(placeholders)
    for node, info, d in zip(compute, infos, decisions, strict=True):
        aten = aten_name(node.target)
        ins, outs_m = metas_in[node.name], metas_out[node.name]
        in_dt = [d.dtype if m.dtype == d.original_dtype and d.dtype else m.dtype for m in ins]
        out_dt = [d.output_dtype if m.dtype == d.original_dtype and d.output_dtype else m.dtype
                  for m in outs_m]
        cost = estimate(d, system.product, [m.shape for m in ins], in_dt,
                        [m.shape for m in outs_m], out_dt,
                        reduce_size=_reduce_size(aten, node, ins))
        record = OpRecord(
            name=info.name, op_type=d.op_type, onnx_op=info.onnx_op,
            engine=d.engine,  # type: ignore[arg-type]
            dtype=d.dtype or "float32", impl_mode=d.impl_mode, task_id=system.next_task_id(),
            stream_id=0, block_dim=cost.block_dim, task_type=cost.task_type,
            data_inputs=tuple(dict.fromkeys(
                a.name for a in _tensor_args(node) if a.name in data)),
        )
        ops.append(GraphOp(
            fx_name=node.name, aten=aten, decision=d, record=record,
            duration_us=cost.duration_us, flops=cost.flops, bytes_moved=cost.bytes_moved,
            cube_fraction=cost.cube_fraction, inputs=ins, outputs=outs_m,
            input_nodes=feeders[node.name],
        ))
        if d.dtype in _FLOATS and d.original_dtype in _FLOATS and d.op_type != "Cast" and (
                d.dtype != d.original_dtype or (d.output_dtype or d.dtype) != d.original_dtype):
            node.target = Lowered(node.target, device=d.dtype,
                                  out=d.output_dtype or d.dtype, original=d.original_dtype)
            lowered += 1
    if lowered:
        gm.recompile()
    return CompiledGraph(module=gm, phase=phase, ops=tuple(ops),
                         placeholders=tuple(placeholders), lowered=lowered)
