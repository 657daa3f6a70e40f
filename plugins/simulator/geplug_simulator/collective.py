"""Collective nodes in ONNX models: recognised, cut out of the graph, run across ranks.

Recognised nodes (docs/distributed.md "Collective nodes"):

| domain | op | attributes | geplug op type |
|---|---|---|---|
| ``com.microsoft`` | ``AllReduce`` | ``group_size`` | HcomAllReduce (sum) |
| ``com.microsoft`` | ``AllGather`` | ``group_size``, ``axis`` (0) | HcomAllGather |
| ``com.microsoft`` | ``AllToAll`` | ``group_size`` | HcomAllToAll |
| ``geplug.hccl`` | ``HcomAllReduce`` | ``reduction`` (sum/prod/max/min) | HcomAllReduce |
| ``geplug.hccl`` | ``HcomAllGather`` | ``axis`` (0) | HcomAllGather |
| ``geplug.hccl`` | ``HcomReduceScatter`` | ``reduction`` | HcomReduceScatter |
| ``geplug.hccl`` | ``HcomBroadcast`` | ``root_rank`` (0) | HcomBroadcast |
| ``geplug.hccl`` | ``HcomReduce`` | ``root_rank``, ``reduction`` | HcomReduce |
| ``geplug.hccl`` | ``HcomAllToAll`` | — | HcomAllToAll |
| ``geplug.hccl`` | ``HcomAllToAllV`` | ``send_counts`` (n*n ints, row = sender) | HcomAllToAllV |
| ``geplug.hccl`` | ``HcomSend`` | ``src_rank``, ``dest_rank`` | HcomSend (see below) |
| ``geplug.hccl`` | ``HcomBarrier`` | — | HcomBarrier (output = input) |

HcomSend: rank ``dest_rank`` receives rank ``src_rank``'s tensor, every other rank keeps
its own (a send/recv pair in one SPMD graph). ``group_size`` must be the job's rank count
(sub-groups are not modelled). onnxruntime's CPU build has no kernels for these nodes, so
:func:`split_model` removes them: their outputs become graph inputs, their inputs graph
outputs, and the job runner feeds each stage's results from the exact cross-rank computation
(:mod:`geplug.hccl.collectives`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np
import onnx
from onnx import helper

from geplug.errors import CompileError, HcclError
from geplug.hccl import collectives as cc

__all__ = ["DOMAIN", "Collective", "SplitModel", "is_collective", "plan_positions",
           "run_collective", "split_model"]

DOMAIN = "geplug.hccl"
"""The documented domain of geplug's collective nodes."""

_MS = {"AllReduce": ("allreduce", "HcomAllReduce"), "AllGather": ("allgather", "HcomAllGather"),
       "AllToAll": ("alltoall", "HcomAllToAll")}
_GEPLUG = {"HcomAllReduce": "allreduce", "HcomAllGather": "allgather",
           "HcomReduceScatter": "reducescatter", "HcomBroadcast": "broadcast",
           "HcomReduce": "reduce", "HcomAllToAll": "alltoall", "HcomAllToAllV": "alltoallv",
           "HcomSend": "send", "HcomBarrier": "barrier"}
_HCCL_NAMES = {"allreduce": "allReduce", "allgather": "allGather",
               "reducescatter": "reduceScatter", "broadcast": "broadcast", "reduce": "reduce",
               "alltoall": "alltoall", "alltoallv": "alltoallv", "send": "send",
               "barrier": "barrier"}


@attrs.frozen(kw_only=True)
class Collective:
    """One collective node of the model."""

    name: str
    kind: str
    op_type: str
    onnx_op: str
    input: str
    output: str
    position: int
    """Compute nodes before it in the graph's order (it runs after the position-th one)."""
    level: int
    """Collectives on the longest path before it (0: depends on graph inputs only)."""
    group_size: int = 0
    reduction: str = "sum"
    axis: int = 0
    root: int = 0
    dest: int = 0
    send_counts: tuple[int, ...] = ()

    @property
    def hccl_name(self) -> str:
        """HCCL's op name for it (equal on every rank)."""
        return f"hcom_{_HCCL_NAMES[self.kind]}__{self.name}"


@attrs.frozen
class SplitModel:
    """The model without its collectives, plus the collectives in graph order."""

    model: onnx.ModelProto
    collectives: tuple[Collective, ...]
    outputs: tuple[str, ...]
    """The original model's outputs."""

    @property
    def levels(self) -> int:
        """Number of collective stages."""
        return max((c.level for c in self.collectives), default=-1) + 1


def is_collective(node: onnx.NodeProto) -> bool:
    """Whether ``node`` is a collective geplug recognises."""
    return (node.domain == "com.microsoft" and node.op_type in _MS) or (
        node.domain == DOMAIN and node.op_type in _GEPLUG)


def _attrs(node: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _collective(node: onnx.NodeProto, name: str, position: int, level: int,
                world: int) -> Collective:
    a = _attrs(node)
    if node.domain == "com.microsoft":
        kind, op_type = _MS[node.op_type]
    else:
        kind, op_type = _GEPLUG[node.op_type], node.op_type
        known = {"reduction", "axis", "root_rank", "src_rank", "dest_rank", "send_counts"}
        unknown = sorted(set(a) - known)
        if unknown:
            raise CompileError(f"node {name!r} ({node.domain}.{node.op_type}): unknown "
                               f"attribute {unknown[0]!r}; accepted: {sorted(known)}", node=name)
    if len([i for i in node.input if i]) != 1 or len([o for o in node.output if o]) != 1:
        raise CompileError(f"node {name!r} ({node.op_type}): a collective node takes one input "
                           "and gives one output", node=name)
    group = int(a.get("group_size", world))
    if group != world:
        raise CompileError(
            f"node {name!r} ({node.op_type}): group_size {group} but the job has {world} "
            f"ranks; sub-groups are not modelled: set group_size={world} or run --ranks "
            f"{group}", node=name)
    reduction = a.get("reduction", "sum")
    reduction = reduction.decode() if isinstance(reduction, bytes) else str(reduction)
    if reduction not in cc.REDUCE_OPS:
        raise CompileError(f"node {name!r}: reduction {reduction!r} is not one of "
                           f"{', '.join(cc.REDUCE_OPS)}", node=name)
    root = int(a.get("root_rank", a.get("src_rank", 0)))
    dest = int(a.get("dest_rank", 0))
    for label, r in (("root_rank/src_rank", root), ("dest_rank", dest)):
        if not 0 <= r < world:
            raise CompileError(f"node {name!r}: {label} {r} is not a rank of the "
                               f"{world}-rank job (0..{world - 1})", node=name)
    counts = tuple(int(x) for x in a.get("send_counts", ()))
    if kind == "alltoallv" and len(counts) != world * world:
        raise CompileError(f"node {name!r}: send_counts needs {world}x{world} = "
                           f"{world * world} integers (row r: what rank r sends to each "
                           f"rank), got {len(counts)}", node=name)
    return Collective(name=name, kind=kind, op_type=op_type, onnx_op=node.op_type,
                      input=node.input[0], output=node.output[0], position=position,
                      level=level, group_size=group, reduction=reduction,
                      axis=int(a.get("axis", 0)), root=root, dest=dest, send_counts=counts)


def split_model(model: onnx.ModelProto, world: int) -> SplitModel:
    """Cut the collectives out of ``model`` (see the module docstring)."""
    g = model.graph
    level_of: dict[str, int] = {}  # tensor -> collectives upstream
    found: list[Collective] = []
    kept: list[onnx.NodeProto] = []
    names: set[str] = set()
    for i, node in enumerate(g.node):
        name = node.name or f"{node.op_type}_{i}"
        while name in names:
            name = f"{name}_{i}"
        names.add(name)
        upstream = max((level_of.get(x, 0) for x in node.input if x), default=0)
        if is_collective(node):
            c = _collective(node, name, len(kept), upstream, world)
            found.append(c)
            level_of[c.output] = upstream + 1
            continue
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        copy.name = name
        kept.append(copy)
        for o in node.output:
            level_of[o] = upstream
    outputs = tuple(o.name for o in g.output)
    if not found:
        return SplitModel(model, (), outputs)
    cut = onnx.ModelProto()
    cut.CopyFrom(model)
    del cut.graph.node[:]
    cut.graph.node.extend(kept)
    types = _types(model)
    initializers = {t.name for t in g.initializer}
    present_out = {o.name for o in cut.graph.output}
    for c in found:
        in_t = types.get(c.input)
        if in_t is None:
            raise CompileError(f"collective node {c.name!r}: the type of its input {c.input!r} "
                               "is unknown; declare it (value_info) or give the graph input "
                               "a type", node=c.name)
        elem, shape = in_t
        typed = helper.make_tensor_value_info(c.output, elem, _out_shape(c, shape, world))
        cut.graph.input.append(typed)
        for out in cut.graph.output:  # a graph output that is a collective's result
            if out.name == c.output:
                out.CopyFrom(typed)
        if c.input not in present_out and c.input not in initializers and \
                c.input not in {i.name for i in g.input}:
            cut.graph.output.append(helper.make_tensor_value_info(c.input, elem, shape))
            present_out.add(c.input)
    kept_ops = {imp.domain for imp in cut.opset_import}
    if "com.microsoft" in kept_ops or DOMAIN in kept_ops:
        still = {n.domain for n in kept}
        keep = [imp for imp in cut.opset_import
                if imp.domain not in ("com.microsoft", DOMAIN) or imp.domain in still]
        del cut.opset_import[:]
        cut.opset_import.extend(keep)
    return SplitModel(cut, tuple(found), outputs)


def plan_positions(split: SplitModel, members: Sequence[Sequence[str]]) -> dict[str, int]:
    """Where each collective runs among the compiled model's device tasks.

    ``Collective.position`` counts the split graph's nodes before it; the device model
    folds, removes and fuses nodes, so its task list is shorter. ``members``: each task's
    original node names, in task order. A collective runs before the first task holding a
    node at or after its position, and never before the task producing its input."""
    index = {n.name: i for i, n in enumerate(split.model.graph.node)}
    producer = {o: index[n.name] for n in split.model.graph.node for o in n.output}
    last: list[int] = []
    for names in members:
        known = [index[m] for m in names if m in index]
        last.append(max(known) if known else (last[-1] if last else -1))
    out: dict[str, int] = {}
    for c in split.collectives:
        pos = next((i for i, hi in enumerate(last) if hi >= c.position), len(last))
        made = producer.get(c.input)
        if made is not None:
            holder = [i for i, names in enumerate(members)
                      if any(index.get(m, -1) == made for m in names)]
            if holder:
                pos = max(pos, holder[0] + 1)
        out[c.name] = pos
    return out


def _types(model: onnx.ModelProto) -> dict[str, tuple[int, list[Any] | None]]:
    """Element type and shape of every tensor the model declares or onnx can infer, with
    collective outputs typed by their rule (iterated so later collectives see them)."""
    work = onnx.ModelProto()
    work.CopyFrom(model)
    out: dict[str, tuple[int, list[Any] | None]] = {}
    for _ in range(len(model.graph.node) + 1):
        try:
            inferred = onnx.shape_inference.infer_shapes(work, strict_mode=False)
        except Exception:
            inferred = work
        g = inferred.graph
        for vi in [*g.input, *g.value_info, *g.output]:
            tt = vi.type.tensor_type
            if vi.type.HasField("tensor_type") and tt.elem_type:
                shape = None if not tt.HasField("shape") else [
                    d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                    for d in tt.shape.dim]
                out[vi.name] = (tt.elem_type, shape)
        for t in g.initializer:
            out[t.name] = (t.data_type, list(t.dims))
        added = False
        for node in work.graph.node:
            if is_collective(node) and node.output[0] not in out and node.input[0] in out:
                world = int(_attrs(node).get("group_size", 0)) or 0
                elem, shape = out[node.input[0]]
                c_kind = _MS.get(node.op_type, (_GEPLUG.get(node.op_type, ""), ""))[0]
                probe = Collective(name=node.name, kind=c_kind, op_type="", onnx_op="",
                                   input="", output="", position=0, level=0,
                                   axis=int(_attrs(node).get("axis", 0)))
                work.graph.value_info.append(helper.make_tensor_value_info(
                    node.output[0], elem, _out_shape(probe, shape, world or None)))
                added = True
        if not added:
            break
    return out


def _out_shape(c: Collective, shape: list[Any] | None, world: int | None) -> list[Any] | None:
    if shape is None:
        return None
    shape = list(shape)
    if c.kind == "allgather" and shape:
        axis = c.axis % len(shape)
        shape[axis] = shape[axis] * world if isinstance(shape[axis], int) and world else None
    elif c.kind == "reducescatter" and shape:
        shape[0] = shape[0] // world if isinstance(shape[0], int) and world else None
    elif c.kind == "alltoallv" and shape:
        shape[0] = None
    return shape


def run_collective(c: Collective, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Every rank's output of ``c`` from every rank's input (exact)."""
    n = len(arrays)
    if c.kind == "allreduce":
        return cc.allreduce(arrays, c.reduction)
    if c.kind == "allgather":
        return cc.allgather(arrays, c.axis)
    if c.kind == "reducescatter":
        return cc.reducescatter(arrays, c.reduction)
    if c.kind == "broadcast":
        return cc.broadcast(arrays, c.root)
    if c.kind == "reduce":
        return cc.reduce(arrays, c.root, c.reduction)
    if c.kind == "alltoall":
        return cc.alltoall(arrays)
    if c.kind == "alltoallv":
        counts = [list(c.send_counts[r * n:(r + 1) * n]) for r in range(n)]
        return cc.alltoallv(arrays, counts)
    if c.kind == "send":
        return [np.array(arrays[c.root], copy=True) if r == c.dest else np.array(a, copy=True)
                for r, a in enumerate(arrays)]
    if c.kind == "barrier":
        return [np.array(a, copy=True) for a in arrays]
    raise HcclError(f"collective {c.name!r}: kind {c.kind!r} is not simulated")


def output_feeds(split: SplitModel, known: Mapping[str, np.ndarray],
                 types: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Feeds for the collective outputs: the known ones, zeros of the declared shape for the
    rest (their stage has not run yet; only nodes after them read them)."""
    feeds: dict[str, np.ndarray] = {}
    for c in split.collectives:
        if c.output in known:
            feeds[c.output] = known[c.output]
            continue
        t = types.get(c.output)
        shape = tuple(int(d) if d else 1 for d in ((t.shape or ()) if t else ()))
        dtype = t.dtype if t else "float32"
        if dtype == "bfloat16":
            import ml_dtypes

            feeds[c.output] = np.zeros(shape, ml_dtypes.bfloat16)
        else:
            feeds[c.output] = np.zeros(shape, np.dtype(dtype))
    return feeds
