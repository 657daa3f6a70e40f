"""The ONNX side of the device model: an imported model as a :class:`geplug.device.Graph`,
and exact shapes for dimensions shape inference left open.

``onnx.shape_inference`` cannot resolve every dimension (shape arithmetic through Shape,
Gather, Concat in TorchScript exports; symbolic input dims). :func:`probe_shapes` runs the
source model once in onnxruntime with every node output exposed and reads the shapes the
kernels actually produced: with zero feeds of the declared shapes at compile (static
models), with the user's feeds at run (dynamic models, once per distinct input shape).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from operator import attrgetter, eq, itemgetter
from typing import Any

import attrs
import numpy as np
import onnx

from geplug.device import Graph, Tensor
from geplug.device.ir import TensorKind, make_node, make_tensor
from geplug_simulator.importer import DTYPE_NAMES, ImportedModel, TensorType, node_io

__all__ = ["device_graph", "needs_probe", "probe_shapes", "with_types"]

_NP_OF = {"float32": np.float32, "float16": np.float16, "float64": np.float64,
          "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
          "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
          "bool": np.bool_}


_READ_ATTRS = ("group", "transA", "transB", "kernel_shape", "hidden_size", "layout", "axis",
               "is_causal", "q_num_heads", "kv_num_heads")
"""The ONNX attributes the device model reads (``Node.attrs``)."""


def _node_attrs(node: onnx.NodeProto, op_type: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for a in node.attribute:
        if a.name == "group":
            out["group"] = int(a.i)
        elif a.name == "transA":
            out["trans_a"] = int(a.i)
        elif a.name == "transB":
            out["trans_b"] = int(a.i)
        elif a.name == "kernel_shape":
            out["kernel_shape"] = tuple(int(v) for v in a.ints)
        elif a.name in ("hidden_size", "layout", "axis", "q_num_heads", "kv_num_heads"):
            out[a.name] = int(a.i)
        elif a.name == "is_causal":  # Attention: the core's ``causal``
            out["causal"] = bool(a.i)
    if op_type == "Gemm":
        out.setdefault("trans_a", 0)
    elif op_type == "Attention" and len(node.input) > 4 and node.input[4]:
        out["past_key"] = node.input[4]  # the key cache the keys follow (the core's)
    return out


@functools.cache
def _may_carry_read_attrs(op_type: str) -> bool:
    """Whether a default-domain ``op_type`` node may carry an attribute of
    :data:`_READ_ATTRS`: ``False`` when no version of its ONNX schema declares one
    (``Relu``, ``Add``, ...), since onnx's checker, which
    :func:`~geplug_simulator.importer.import_model` runs, refuses an attribute the schema
    does not declare; ``True`` for an op type ONNX does not define. Looked up once per op
    type and process (the schema's versions, newest first), not per node."""
    if not onnx.defs.has(op_type):
        return True
    schema = onnx.defs.get_schema(op_type)
    while True:
        if any(a in schema.attributes for a in _READ_ATTRS):
            return True
        if schema.since_version <= 1:
            return False
        try:
            schema = onnx.defs.get_schema(op_type, schema.since_version - 1)
        except onnx.defs.SchemaError:  # no version before this one
            return False


def _default_domain_only(model: onnx.ModelProto) -> bool:
    """The model imports only the default ONNX domain, so every node is in it (onnx's
    checker refuses a node of a domain the model does not import)."""
    return all(imp.domain in ("", "ai.onnx") for imp in model.opset_import)


def device_graph(imported: ImportedModel, types: Mapping[str, TensorType] | None = None
                 ) -> Graph:
    """``imported`` as the device model's IR (``types`` overrides the inferred types).

    Built for large models (issue 10, compile speed): names, op types, inputs and outputs
    are the importer's reads (``node_io``); the records are made without their converters
    where the values are the importer's own (canonical); a node's attributes are read from
    the protobuf only when its op type can carry one the device model uses."""
    trusted = types is None
    types = imported.types if types is None else types
    inputs = set(imported.inputs)
    special = inputs | imported.initializers
    tensors: dict[str, Tensor] = {}
    new_tensor = make_tensor if trusted else _checked_tensor
    for name, t in types.items():
        kind: TensorKind = ("activation" if name not in special
                            else "input" if name in inputs else "weight")
        tensors[name] = new_tensor(name, t.dtype, t.shape, kind)
    io = node_io(imported)
    infos = imported.nodes
    if len(infos) == len(io) and all(map(eq, map(attrgetter("name"), infos),
                                         map(itemgetter(0), io))):
        op_types = [i.op_type for i in infos]
    else:
        by_name = {n.name: n.op_type for n in imported.nodes}
        op_types = [by_name.get(name, op) for name, op, _, _ in io]
    default_only = _default_domain_only(imported.model)
    read = {op: not default_only or _may_carry_read_attrs(op)
            for op in {op for _, op, _, _ in io}}
    protos = imported.model.graph.node
    nodes = [make_node(name, op_type, op, ins, outs,
                       _node_attrs(protos[k], op) if read[op] else {})
             for k, ((name, op, ins, outs), op_type) in enumerate(zip(io, op_types,
                                                                      strict=True))]
    return Graph(name=imported.name, nodes=tuple(nodes), tensors=tensors,
                 inputs=imported.inputs, outputs=imported.outputs)


def _checked_tensor(name: str, dtype: str, shape: tuple[int | None, ...] | None,
                    kind: TensorKind) -> Tensor:
    return Tensor(name=name, dtype=dtype, shape=shape, kind=kind)


def needs_probe(imported: ImportedModel, types: Mapping[str, TensorType]) -> bool:
    """Whether a node output has a dimension shape inference left open."""
    for _, _, _, outs in node_io(imported):
        for out in outs:
            t = types.get(out)
            if out and (t is None or t.shape is None or any(d is None for d in t.shape)):
                return True
    return False


def _zeros(imported: ImportedModel) -> dict[str, np.ndarray] | None:
    """Zero feeds of the static input shapes, or ``None`` when an input is dynamic, of a
    dtype numpy lacks, or the feeds would exceed
    :data:`geplug.limits.MAX_GENERATED_INPUT_BYTES` (the probe then stays off: dimensions
    are resolved at run from the actual inputs)."""
    from geplug.limits import MAX_GENERATED_INPUT_BYTES

    shapes: dict[str, tuple[tuple[int, ...], Any]] = {}
    total = 0
    for name in imported.inputs:
        t = imported.types.get(name)
        if t is None or t.shape is None or any(d is None or d < 0 for d in t.shape):
            return None
        np_type = _NP_OF.get(t.dtype)
        if np_type is None:
            return None
        shape = tuple(int(d or 0) for d in t.shape)
        # zero dims counted as 1: numpy refuses (0, 2**40, 2**40) too, it is no real input
        total += math.prod(max(d, 1) for d in shape) * np.dtype(np_type).itemsize
        if total > MAX_GENERATED_INPUT_BYTES:
            return None
        shapes[name] = (shape, np_type)
    return {name: np.zeros(shape, np_type) for name, (shape, np_type) in shapes.items()}


def probe_shapes(imported: ImportedModel, session_factory: Any,
                 feeds: Mapping[str, Any] | None = None) -> dict[str, TensorType] | None:
    """Types of every node output as onnxruntime computes them (``None`` when the model
    cannot be probed: an input without a static shape and no ``feeds``, or a failure)."""
    if feeds is None:
        feeds = _zeros(imported)
        if feeds is None:
            return None
    model = onnx.ModelProto()
    model.CopyFrom(imported.model)
    present = {o.name for o in model.graph.output}
    names: list[str] = []
    for node in model.graph.node:
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
               for a in node.attribute):
            continue
        for out in node.output:
            if out and out not in present:
                present.add(out)
                names.append(out)
                model.graph.output.append(onnx.ValueInfoProto(name=out))
    try:
        session = session_factory.session(model, imported.name)
        values = session.run([o.name for o in model.graph.output], dict(feeds))
    except Exception:
        return None
    types = dict(imported.types)
    for vi, value in zip(model.graph.output, values, strict=True):
        if isinstance(value, np.ndarray):
            dtype = types[vi.name].dtype if vi.name in types else _dtype_name(value)
            types[vi.name] = TensorType(dtype, tuple(int(d) for d in value.shape))
    for name, value in feeds.items():
        if isinstance(value, np.ndarray) and name in types:
            types[name] = TensorType(types[name].dtype, tuple(int(d) for d in value.shape))
    return types


def _dtype_name(value: np.ndarray) -> str:
    from onnx import helper as h

    try:
        return DTYPE_NAMES.get(h.np_dtype_to_tensor_dtype(value.dtype), str(value.dtype))
    except Exception:
        return str(value.dtype)


def with_types(imported: ImportedModel, types: Mapping[str, TensorType]) -> ImportedModel:
    """``imported`` with ``types`` (exact shapes) in place of the inferred ones."""
    return attrs.evolve(imported, types=dict(types))
