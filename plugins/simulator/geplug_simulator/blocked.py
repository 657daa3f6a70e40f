"""Keep float16-emulation Cast pairs in onnxruntime's blocked (NCHWc) layout.

onnxruntime's NCHWc transformer (ORT_ENABLE_ALL, x86/ARM CPUs) runs each Conv on a
channel-blocked tensor and converts back to NCHW (``ReorderOutput``) before any op it does
not handle, then forth again (``ReorderInput``) before the next Conv. The Cast pair that
rounds a Conv's output to float16 (docs/simulator.md, Rewrite) is such an op, so a float16
MobileNetV2 pays two layout copies per Conv on top of the pair: about a fifth of its run.

The pair, a Clip / Relu and an Add of two such tensors of one shape are elementwise: on the
blocked tensor they compute the same values, only in another memory order.
:func:`keep_blocked` edits the graph onnxruntime optimised (its ``optimized_model_filepath``
output) so those ops act on the blocked tensor and the next Conv reads it directly; the NCHW
copies that nothing else reads are dropped.

Exactness: only tensors without padded channels are kept blocked (the producing Conv's
output channel count is a multiple of the block size: its reordered weight has as many rows
as the tensor has channels). A padded channel would carry values ``ReorderInput`` resets to
zero (a NaN from ``inf * 0`` after a float16 overflow), so such tensors keep their reorders.
Every output is then bit-identical to the session without the edit (tested,
``test_sim_blocked_casts.py``). The edited graph is specific to the CPU it was optimised on,
which is where the session runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import numpy as np
import onnx
from onnx import numpy_helper

__all__ = ["NCHWC", "Shape", "keep_blocked", "value_shapes", "worth_trying"]

NCHWC = "com.microsoft.nchwc"
_UNARY = {"Cast", "Relu", "Clip"}
_BINARY = {"Add"}
_REDUCED = {onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16}


def worth_trying(model: onnx.ModelProto) -> bool:
    """Whether ``model`` (the rewritten model) has a Conv and a Cast to float16 or
    bfloat16, i.e. whether onnxruntime's NCHWc layout can meet an emulation Cast pair."""
    conv = cast = False
    for n in model.graph.node:
        if n.domain not in ("", "ai.onnx"):
            continue
        conv = conv or n.op_type == "Conv"
        cast = cast or (n.op_type == "Cast" and any(
            a.name == "to" and a.i in _REDUCED for a in n.attribute))
        if conv and cast:
            return True
    return False


def _zero_preserving_clip(node: onnx.NodeProto, consts: dict[str, np.ndarray]) -> bool:
    """A Clip whose bounds are constants with min <= 0 <= max (0 stays 0)."""
    bounds = list(node.input[1:3])
    for i, name in enumerate(bounds):
        if not name:
            continue
        value = consts.get(name)
        if value is None or value.size != 1:
            return False
        v = float(value.reshape(()))
        if (i == 0 and v > 0) or (i == 1 and v < 0):
            return False
    return True


def _unpadded_outputs(nodes: Iterable[onnx.NodeProto], inits: dict[str, onnx.TensorProto]
                      ) -> dict[str, str]:
    """NCHW tensor -> its blocked source, for each ReorderOutput of a blocked Conv whose
    output has no padded channels."""
    producer = {o: n for n in nodes for o in n.output}
    out: dict[str, str] = {}
    for n in nodes:
        if n.domain != NCHWC or n.op_type != "ReorderOutput":
            continue
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
        if attrs.get("channels_last", 0):
            continue
        conv = producer.get(n.input[0])
        if conv is None or conv.domain != NCHWC or conv.op_type != "Conv":
            continue
        weight = inits.get(conv.input[1])
        channels = attrs.get("channels")
        if weight is None or not weight.dims or channels is None or weight.dims[0] != channels:
            continue
        out[n.output[0]] = n.input[0]
    return out


Shape = tuple[int | str, ...]


def value_shapes(model: onnx.ModelProto) -> dict[str, Shape]:
    """The fully known shapes (ints, or named symbolic dimensions) of ``model``'s values by
    onnx shape inference: an Add is kept blocked only between two tensors of one shape."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception:  # the session was made from this model: inference is only a filter
        return {}
    out: dict[str, Shape] = {}
    g = inferred.graph
    for vi in [*g.input, *g.value_info, *g.output]:
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            continue
        dims: list[int | str] = []
        for d in tt.shape.dim:
            if d.HasField("dim_value"):
                dims.append(d.dim_value)
            elif d.dim_param:
                dims.append(d.dim_param)
            else:
                break
        else:
            out[vi.name] = tuple(dims)
    return out


def keep_blocked(model: onnx.ModelProto, shapes: dict[str, Shape] | None = None
                 ) -> onnx.ModelProto | None:
    """``model`` (onnxruntime's optimised graph) with elementwise ops between a blocked Conv
    and the next one acting on the blocked tensor (module docstring); ``None`` when nothing
    changes. ``shapes`` (:func:`value_shapes` of the model onnxruntime optimised) lets an Add
    of two blocked tensors of the same shape stay blocked: a broadcasting Add would pair
    the wrong elements in the blocked memory order, so without ``shapes`` every Add goes
    back to NCHW."""
    shapes = shapes or {}
    graph = model.graph
    nodes = list(graph.node)  # read only: the edit below works on copies
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
           for n in nodes for a in n.attribute):
        return None  # a subgraph may read any value: dropping an unread copy is not provable
    inits = {t.name: t for t in graph.initializer}
    consts = {name: numpy_helper.to_array(t) for name, t in inits.items()
              if int(np.prod(t.dims)) == 1}
    twin = _unpadded_outputs(nodes, inits)
    if not twin:
        return None
    outputs = {o.name for o in graph.output}
    new_nodes: list[onnx.NodeProto] = []
    alias: dict[str, str] = {}
    changed = False
    for n in nodes:
        ins = [alias.get(i, i) for i in n.input]
        if (n.domain == NCHWC and n.op_type == "ReorderInput" and ins[0] in twin
                and not any(a.name == "channels_last" and a.i for a in n.attribute)):
            alias[n.output[0]] = twin[ins[0]]  # the next Conv reads the blocked tensor
            changed = True
            continue
        copy = onnx.NodeProto()
        copy.CopyFrom(n)
        del copy.input[:]
        copy.input.extend(ins)
        new_nodes.append(copy)
        if n.domain not in ("", "ai.onnx"):
            continue
        blocked_ins: list[str] | None = None
        if (n.op_type in _UNARY and ins[0] in twin
                and (n.op_type != "Clip" or _zero_preserving_clip(n, consts))):
            blocked_ins = [twin[ins[0]], *ins[1:]]
        elif (n.op_type in _BINARY and len(ins) == 2 and all(i in twin for i in ins)
              and shapes.get(n.input[0]) is not None
              and shapes.get(n.input[0]) == shapes.get(n.input[1])):
            blocked_ins = [twin[i] for i in ins]
        if blocked_ins is None:
            continue
        twin_node = onnx.NodeProto()
        twin_node.CopyFrom(copy)
        twin_node.name = f"{n.name}::nchwc"
        del twin_node.input[:], twin_node.output[:]
        twin_node.input.extend(blocked_ins)
        twin_node.output.append(f"{n.output[0]}::nchwc")
        new_nodes.append(twin_node)
        twin[n.output[0]] = twin_node.output[0]
    if not changed:
        return None
    kept = _live(new_nodes, outputs)
    edited = onnx.ModelProto()
    edited.CopyFrom(model)
    del edited.graph.node[:]
    edited.graph.node.extend(kept)
    used = {i for n in kept for i in n.input}
    keep_inits = [t for t in edited.graph.initializer if t.name in used]
    del edited.graph.initializer[:]
    edited.graph.initializer.extend(keep_inits)
    del edited.graph.value_info[:]
    return edited


def _live(nodes: list[onnx.NodeProto], outputs: set[str]) -> list[onnx.NodeProto]:
    """``nodes`` without those whose outputs nothing reads (graph outputs are read)."""
    readers: defaultdict[str, int] = defaultdict(int)
    for n in nodes:
        for i in n.input:
            readers[i] += 1
    alive = [True] * len(nodes)
    for k in range(len(nodes) - 1, -1, -1):
        n = nodes[k]
        if any(readers[o] or o in outputs for o in n.output if o):
            continue
        alive[k] = False
        for i in n.input:
            readers[i] -= 1
    return [n for n, keep in zip(nodes, alive, strict=True) if keep]
