"""A model without its large weights: for onnx's checker and shape inference, and for
onnxruntime.

Each takes a model by serializing it: for a model with hundreds of megabytes of weights
that is most of a compile (a 10,753-node BERT-style model with 396 MB of weights: 0.8 s per
serialization, shape inference parses the whole model back, onnxruntime parses it again).
None needs the large weights in the protobuf:

- the checker checks a weight's type, shape and data size, shape inference its type and
  shape (the values it propagates are shape tensors: a few elements). :func:`skeleton`
  makes each initializer larger than :data:`KEEP_BYTES` whose data is ``raw_data`` a graph
  input of its type and shape (every other field as it is) and checks its data size here,
  as the checker would: a truncated or oversized weight is still refused, naming it;
- onnxruntime takes initializers as arrays beside the model
  (``SessionOptions.add_external_initializers``: the model declares them as external data,
  onnxruntime copies the arrays in before any graph optimisation). :func:`for_onnxruntime`
  serializes the model with those initializers so declared and returns their arrays.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from google.protobuf.message import Message
from onnx import TensorProto, helper, numpy_helper

__all__ = ["KEEP_BYTES", "WeightSizeError", "for_onnxruntime", "skeleton"]

KEEP_BYTES = 1 << 16
"""Initializers up to this many bytes stay in the skeleton with their values."""

_ITEMSIZE: dict[int, int] = {TensorProto.FLOAT: 4, TensorProto.FLOAT16: 2, TensorProto.BFLOAT16: 2,
             TensorProto.DOUBLE: 8, TensorProto.INT8: 1, TensorProto.INT16: 2,
             TensorProto.INT32: 4, TensorProto.INT64: 8, TensorProto.UINT8: 1,
             TensorProto.UINT16: 2, TensorProto.UINT32: 4, TensorProto.UINT64: 8,
             TensorProto.BOOL: 1, TensorProto.COMPLEX64: 8, TensorProto.COMPLEX128: 16}
"""Bytes per element of the fixed-size element types (``raw_data`` is little-endian
packed values of this size)."""


class WeightSizeError(ValueError):
    """A weight's ``raw_data`` does not hold its declared shape (the checker's wording)."""


_TYPED_FIELDS = ("float_data", "int32_data", "int64_data", "double_data", "uint64_data",
                 "string_data")
"""A tensor's typed value fields: one holding values beside ``raw_data`` is malformed (the
checker says so), so such a tensor stays for the checker to refuse."""

_SHAPE_TYPES = frozenset({TensorProto.INT32, TensorProto.INT64})


def _movable(init: TensorProto) -> bool:
    """A large initializer held in ``raw_data`` alone (not external, no typed field, no
    segment), whose values shape inference never reads (a 0-D or 1-D integer tensor may be
    a shape, or a table a shape is gathered or sliced from: it stays)."""
    return (init.data_location != TensorProto.EXTERNAL and init.data_type in _ITEMSIZE
            and len(init.raw_data) > KEEP_BYTES and not init.HasField("segment")
            and not (init.data_type in _SHAPE_TYPES and len(init.dims) <= 1)
            and not any(len(getattr(init, f)) for f in _TYPED_FIELDS))


def _large(model: onnx.ModelProto) -> list[TensorProto]:
    """The initializers :func:`_movable` allows, or none when moving them could change
    what the checker sees beyond their data: an initializer name given twice (or also a
    sparse initializer's), or an IR version before 4, where every initializer must also be
    a graph input."""
    graph = model.graph
    big = [init for init in graph.initializer if _movable(init)]
    if not big or model.ir_version < 4:
        return []
    names = [init.name for init in graph.initializer]
    names += [sparse.values.name for sparse in graph.sparse_initializer]
    if len(set(names)) != len(names):
        return []
    return big


def _check_size(init: TensorProto) -> None:
    """``init``'s raw data holds exactly its shape in its type, as onnx's checker
    requires."""
    need = math.prod(init.dims) * _ITEMSIZE[init.data_type]
    have = len(init.raw_data)
    if have != need:
        word = "too small" if have < need else "too large"
        raise WeightSizeError(
            f"TensorProto (tensor name: {init.name}) raw_data size ({have} bytes) is {word} "
            f"for the declared shape and type ({need} bytes required).")


def _copy_fields(src: Message, dst: Message, skip: str) -> None:
    """Every set field of ``src`` but ``skip`` into ``dst`` (messages copied)."""
    for field, value in src.ListFields():
        if field.name == skip:
            continue
        repeated = getattr(field, "is_repeated", None)  # protobuf >= 6; label before
        if repeated is None:
            repeated = field.label == field.LABEL_REPEATED
        if repeated:
            getattr(dst, field.name).extend(value)
        elif field.message_type is not None:
            getattr(dst, field.name).CopyFrom(value)
        else:
            setattr(dst, field.name, value)


def skeleton(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` itself when no initializer is large, else its skeleton: each large
    ``raw_data`` initializer a graph input of its type and shape (its data size checked
    first: :class:`WeightSizeError`), everything else copied."""
    graph = model.graph
    big = _large(model)
    if not big:
        return model
    for init in big:
        _check_size(init)
    skel = onnx.ModelProto()
    _copy_fields(model, skel, "graph")
    g = skel.graph
    _copy_fields(graph, g, "initializer")
    moved = {init.name for init in big}
    g.initializer.extend(init for init in graph.initializer if init.name not in moved)
    listed = {vi.name for vi in graph.input}
    g.input.extend(helper.make_tensor_value_info(init.name, init.data_type, list(init.dims))
                   for init in big if init.name not in listed)
    return skel


_ORT_ARRAY_TYPES = frozenset({
    TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.INT8,
    TensorProto.INT16, TensorProto.INT32, TensorProto.INT64, TensorProto.UINT8,
    TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64, TensorProto.BOOL})
"""Element types an ``OrtValue`` takes from a numpy array (bfloat16 and complex weights stay
in the protobuf)."""

_EXTERNAL = ("location", "geplug-in-memory")
"""The external-data location the stubs name (onnxruntime never opens it: the arrays
given with ``add_external_initializers`` replace them)."""


def for_onnxruntime(model: onnx.ModelProto, ir_version: int | None = None
                    ) -> tuple[bytes, list[str], list[np.ndarray]]:
    """``model`` serialized for onnxruntime (``ir_version`` stamped when given): its large
    ``raw_data`` initializers declared as external data, and their names and arrays (to
    hand over with ``SessionOptions.add_external_initializers``). No large initializer:
    the model serialized whole, no arrays."""
    graph = model.graph
    big = [init for init in _large(model) if init.data_type in _ORT_ARRAY_TYPES]
    if big:
        # onnxruntime drops an initializer no node reads before it takes the arrays, and
        # then refuses an array for it; a subgraph (If, Loop) may read outer ones: keep all
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
               for n in graph.node for a in n.attribute):
            big = []
        else:
            read = {t for n in graph.node for t in n.input}
            read.update(o.name for o in graph.output)
            big = [init for init in big if init.name in read]
    if not big:
        if ir_version is None or ir_version == model.ir_version:
            return model.SerializeToString(), [], []
        stamped = onnx.ModelProto()
        stamped.CopyFrom(model)
        stamped.ir_version = ir_version
        return stamped.SerializeToString(), [], []
    stub = onnx.ModelProto()
    _copy_fields(model, stub, "graph")
    if ir_version is not None:
        stub.ir_version = ir_version
    g = stub.graph
    _copy_fields(graph, g, "initializer")
    moved = {init.name for init in big}
    names: list[str] = []
    arrays: list[np.ndarray] = []
    for init in graph.initializer:
        if init.name not in moved:
            g.initializer.append(init)
            continue
        _check_size(init)
        array = numpy_helper.to_array(init)
        entry = g.initializer.add()
        entry.name, entry.data_type = init.name, init.data_type
        entry.dims.extend(init.dims)
        entry.data_location = TensorProto.EXTERNAL
        for key, value in (_EXTERNAL, ("offset", "0"), ("length", str(array.nbytes))):
            item = entry.external_data.add()
            item.key, item.value = key, value
        names.append(init.name)
        arrays.append(array)
    return stub.SerializeToString(), names, arrays
