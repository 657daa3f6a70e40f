"""ONNX import: load, check, pin the opset, name every node, infer types and shapes.

Older models are converted to :data:`PINNED_OPSET` with ``onnx.version_converter`` (newer
ones are kept: onnxruntime runs them as they are). Every failure is a
:class:`~geplug.errors.CompileError` naming the model, node or input at fault.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import onnx
from onnx import TensorProto

from geplug.errors import CompileError
from geplug.precision import NodeInfo
from geplug_simulator.opmap import ascend_op_type
from geplug_simulator.skeleton import WeightSizeError, skeleton

__all__ = [
    "DTYPE_NAMES",
    "FLOAT_NAMES",
    "PINNED_OPSET",
    "ImportedModel",
    "NodeIO",
    "TensorType",
    "import_model",
    "load_model",
    "node_io",
    "tensor_type",
]

PINNED_OPSET = 17
"""Models with an older default-domain opset are converted to this one."""

DTYPE_NAMES: dict[int, str] = {
    TensorProto.FLOAT: "float32",
    TensorProto.FLOAT16: "float16",
    TensorProto.BFLOAT16: "bfloat16",
    TensorProto.DOUBLE: "float64",
    TensorProto.INT8: "int8",
    TensorProto.INT16: "int16",
    TensorProto.INT32: "int32",
    TensorProto.INT64: "int64",
    TensorProto.UINT8: "uint8",
    TensorProto.UINT16: "uint16",
    TensorProto.UINT32: "uint32",
    TensorProto.UINT64: "uint64",
    TensorProto.BOOL: "bool",
    TensorProto.STRING: "string",
    TensorProto.COMPLEX64: "complex64",
    TensorProto.COMPLEX128: "complex128",
}
"""ONNX element type -> geplug dtype name."""
ELEM_TYPES = {v: k for k, v in DTYPE_NAMES.items()}
FLOAT_NAMES = ("float32", "float16", "bfloat16", "float64")
_NUMERIC = frozenset(DTYPE_NAMES.values()) - {"string", "complex64", "complex128"}
_KNOWN_DOMAINS = ("", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training")


@attrs.frozen
class TensorType:
    """A tensor's dtype name and shape (``None`` dims are symbolic or unknown)."""

    dtype: str
    shape: tuple[int | None, ...] | None


NodeIO = tuple[str, str, tuple[str, ...], tuple[str, ...]]
"""A node's name, ONNX op type, input names and output names (see ``ImportedModel.node_io``)."""


@attrs.frozen(kw_only=True)
class ImportedModel:
    """A checked, opset-pinned, uniquely named model and what was inferred about it."""

    model: onnx.ModelProto = attrs.field(repr=False)
    name: str
    opset: int
    converted_from: int | None
    types: Mapping[str, TensorType] = attrs.field(repr=False)
    nodes: tuple[NodeInfo, ...]
    initializers: frozenset[str]
    inputs: tuple[str, ...]
    """Graph inputs the caller must feed (initializers excluded)."""
    outputs: tuple[str, ...]
    notes: tuple[str, ...] = ()
    node_io: tuple[NodeIO, ...] = attrs.field(default=(), repr=False, eq=False)
    """Each node of ``model.graph.node`` in order: name, ONNX op type, inputs, outputs, as
    the importer read them (each protobuf field read costs about a microsecond, so the
    device IR, the precision inputs and the op records reuse these reads instead of reading
    the protobuf again). Empty for a model built otherwise: readers then read ``model``."""


def load_model(model: Any) -> onnx.ModelProto:
    """An ``onnx.ModelProto`` from a path, bytes or a ModelProto (a copy; never mutated)."""
    if isinstance(model, onnx.ModelProto):
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        return copy
    if isinstance(model, (bytes, bytearray)):
        try:
            return onnx.load_from_string(bytes(model))
        except Exception as exc:
            raise CompileError(
                f"the model bytes are not an ONNX model ({type(exc).__name__}: {exc}); pass "
                "the bytes of a .onnx file", node="",
            ) from None
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not os.path.isfile(path):
            raise CompileError(
                f"model file {path!r} does not exist; give the path of an .onnx file", node=""
            )
        try:
            return onnx.load(path)
        except Exception as exc:
            raise CompileError(
                f"model file {path!r} is not a readable ONNX model ({type(exc).__name__}: "
                f"{exc}); re-export it with torch.onnx.export or onnx.save", node="",
            ) from None
    raise CompileError(
        f"cannot compile a {type(model).__name__}: give an onnx.ModelProto, a path to an .onnx "
        "file, or its bytes", node="",
    )


def _check_text(proto: onnx.ModelProto) -> None:
    """Every string field of ``proto`` is UTF-8 text, else a CompileError naming the first
    that is not. protobuf hands a non-UTF-8 ``string`` of onnx.proto (proto2) back as
    ``bytes``, which every later step takes for text (and onnx's checker fails on when it
    quotes it); a model written by an exporter never has one: the file is damaged."""
    if _text_clean(proto):
        return
    from google.protobuf.descriptor import FieldDescriptor

    stack: list[tuple[Any, str]] = [(proto, "model")]
    while stack:
        message, path = stack.pop()
        for field, value in message.ListFields():
            repeated = getattr(field, "is_repeated", None)  # protobuf >= 5.28; label before
            if repeated is None:
                repeated = field.label == FieldDescriptor.LABEL_REPEATED
            where = f"{path}.{field.name}"
            if field.type == FieldDescriptor.TYPE_STRING:
                for i, text in enumerate(value if repeated else [value]):
                    if isinstance(text, bytes):
                        shown = f"{where}[{i}]" if repeated else where
                        raise CompileError(
                            f"the model is malformed: {shown} is not UTF-8 text "
                            f"({text[:40]!r}); the file is damaged, export the model again",
                            node="")
            elif field.type == FieldDescriptor.TYPE_MESSAGE:
                items = value if repeated else [value]
                stack.extend((m, f"{where}[{i}]" if repeated else where)
                             for i, m in enumerate(items))


def _text_clean(proto: onnx.ModelProto) -> bool:
    """Whether every string field is text, checked the fast way: a graph's nodes (the bulk
    of a large model) field by field, everything else by the generic walk. ``False`` only
    says the generic walk of :func:`_check_text` must look (it names the field)."""
    from google.protobuf.descriptor import FieldDescriptor

    stack: list[Any] = [proto]
    while stack:
        message = stack.pop()
        if isinstance(message, onnx.NodeProto):
            for text in (message.name, message.op_type, message.domain, message.doc_string,
                         getattr(message, "overload", ""), *message.input, *message.output):
                if not isinstance(text, str):
                    return False
            stack.extend(message.attribute)
            for extra in ("metadata_props", "device_configurations"):  # onnx >= 1.16 / 1.18
                stack.extend(getattr(message, extra, ()))
            continue
        for field, value in message.ListFields():
            repeated = getattr(field, "is_repeated", None)
            if repeated is None:
                repeated = field.label == FieldDescriptor.LABEL_REPEATED
            if field.type == FieldDescriptor.TYPE_STRING:
                if any(not isinstance(t, str) for t in (value if repeated else [value])):
                    return False
            elif field.type == FieldDescriptor.TYPE_MESSAGE:
                stack.extend(value if repeated else [value])
    return True


def _check_dims(graph: onnx.GraphProto) -> None:
    """Every fixed dimension of the graph's inputs, outputs and initializers is a size >= 0
    (onnx's checker lets ``-3`` through; numpy and onnxruntime then fail somewhere deep)."""
    for kind, infos in (("input", graph.input), ("output", graph.output)):
        for vi in infos:
            if not vi.type.HasField("tensor_type"):
                continue
            for i, d in enumerate(vi.type.tensor_type.shape.dim):
                if d.HasField("dim_value") and d.dim_value < 0:
                    raise CompileError(
                        f"graph {kind} {vi.name!r}: dimension {i} is {d.dim_value}; a "
                        "dimension is a size >= 0 or a symbolic name (dim_param); fix the "
                        "model's declared shape", node=vi.name)
    for init in graph.initializer:
        if any(d < 0 for d in init.dims):
            raise CompileError(
                f"initializer {init.name!r}: dims {list(init.dims)} has a negative size; the "
                "file is damaged, export the model again", node=init.name)


def _opset(model: onnx.ModelProto) -> int:
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return int(imp.version)
    return 0


def _signature(model: onnx.ModelProto) -> list[str]:
    g = model.graph
    return [vi.SerializeToString().decode("latin-1") for vi in [*g.input, *g.output]]


def tensor_type(vi: onnx.ValueInfoProto) -> TensorType | None:
    """The dtype and shape of a value info (``None`` for a non-tensor value)."""
    t = vi.type
    if not t.HasField("tensor_type"):
        return None
    tt = t.tensor_type
    dtype = DTYPE_NAMES.get(tt.elem_type, f"onnx:{tt.elem_type}")
    if not tt.HasField("shape"):
        return TensorType(dtype, None)
    dims = tuple(int(d.dim_value) if d.HasField("dim_value") else None for d in tt.shape.dim)
    return TensorType(dtype, dims)


def _name_nodes(graph: onnx.GraphProto) -> None:
    seen: set[str] = set()
    for i, node in enumerate(graph.node):
        base = node.name or f"{node.op_type}_{i}"
        name, k = base, 1
        while name in seen:
            name, k = f"{base}_{k}", k + 1
        node.name = name
        seen.add(name)


def _original_dtype(
    ins: Sequence[str], outs: Sequence[str], types: Mapping[str, TensorType]
) -> str | None:
    """The dtype a node computes in: its first input's when floating, else its first
    numeric output's, else its first floating or numeric input's."""
    if ins and ins[0] in types and types[ins[0]].dtype in FLOAT_NAMES:
        return types[ins[0]].dtype
    for n in outs:
        if n and n in types and types[n].dtype in _NUMERIC:
            return types[n].dtype
    numeric = [types[n].dtype for n in ins if n and n in types
               and types[n].dtype in _NUMERIC]
    floats = [d for d in numeric if d in FLOAT_NAMES]
    if floats:
        return floats[0]
    return numeric[0] if numeric else None


def node_io(imported: ImportedModel) -> tuple[NodeIO, ...]:
    """``imported.node_io``, or the same read from the protobuf when the model was built
    without it."""
    graph = imported.model.graph
    if len(imported.node_io) == len(graph.node):
        return imported.node_io
    return tuple((n.name, n.op_type, tuple(n.input), tuple(n.output)) for n in graph.node)


def _check_operators(graph: onnx.GraphProto) -> None:
    """Custom-domain and misspelt operators, named (before onnx's checker, which does not)."""
    for i, node in enumerate(graph.node):
        name = node.name or f"{node.op_type}_{i}"
        if node.domain not in _KNOWN_DOMAINS and node.domain not in ("com.microsoft",
                                                                     "geplug.hccl"):
            raise CompileError(
                f"node {name!r}: operator {node.op_type!r} of domain {node.domain!r} is not "
                "supported by the simulator (custom operator); replace it with standard ONNX "
                "operators", node=name,
            )
        if node.domain in ("", "ai.onnx") and not onnx.defs.has(node.op_type):
            raise CompileError(
                f"node {name!r}: {node.op_type!r} is not an ONNX operator the simulator "
                "supports; check the op type's spelling or export the model again", node=name,
            )


def import_model(model: Any, *, name: str = "", default_name: str = "") -> ImportedModel:
    """Load, check, convert and describe ``model`` (see the module docstring).

    Its name (the dump directory's ``model_name``, formats.md §2.7) is ``name`` when given,
    else the ONNX graph name when the graph has one, else ``default_name`` (the file stem of
    a model given as a path), else ``"model"``.
    """
    proto = load_model(model)  # a copy: naming its graph changes nothing of the caller's
    _check_text(proto)
    _check_dims(proto.graph)
    graph_name = proto.graph.name.strip()
    if not graph_name:  # onnx.checker requires one; ATC does not care, so neither do we
        proto.graph.name = name or default_name or "model"
    _check_operators(proto.graph)
    try:
        # the checker and shape inference see the model without its large weights (each
        # serializes what it is given; the weights' sizes are checked on the way)
        skel = skeleton(proto)
        onnx.checker.check_model(skel)
    except (onnx.checker.ValidationError, WeightSizeError) as exc:
        text = str(exc).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        found = re.search(r"Name: (\S+) OpType: (\S+)", text)
        where = f" at node {found.group(1)!r} ({found.group(2)})" if found else ""
        raise CompileError(
            f"the model is malformed{where}: {first}; fix the model "
            "(onnx.checker.check_model shows the full report)",
            node=found.group(1) if found else "",
        ) from None
    notes: list[str] = []
    opset = _opset(proto)
    converted_from: int | None = None
    if 0 < opset < PINNED_OPSET:
        try:
            from onnx import version_converter

            converted = version_converter.convert_version(proto, PINNED_OPSET)
            if _signature(converted) == _signature(proto):
                proto, converted_from, opset = converted, opset, PINNED_OPSET
                skel = skeleton(proto)
            else:
                notes.append(f"converting opset {opset} to {PINNED_OPSET} changes the model's "
                             "inputs or outputs; simulated at its own opset")
        except Exception as exc:
            notes.append(
                f"opset {opset} could not be converted to {PINNED_OPSET} ({exc}); simulated "
                "at its own opset"
            )
    graph = proto.graph
    _name_nodes(graph)
    try:
        inferred = onnx.shape_inference.infer_shapes(skel, strict_mode=False, data_prop=True)
    except Exception as exc:
        notes.append(f"shape inference failed ({exc}); types from the model only")
        inferred = proto
    types: dict[str, TensorType] = {}
    ig = inferred.graph
    for vi in [*ig.input, *ig.value_info, *ig.output]:
        tt = tensor_type(vi)
        if tt is not None:
            types[vi.name] = tt
    for init in graph.initializer:  # (the skeleton lists the large ones as inputs)
        types.setdefault(
            init.name,
            TensorType(DTYPE_NAMES.get(int(init.data_type), f"onnx:{init.data_type}"),
                       tuple(int(d) for d in init.dims)),
        )
    initializers = frozenset(i.name for i in graph.initializer)
    producer: dict[str, str] = {}
    infos: list[NodeInfo] = []
    io: list[NodeIO] = []
    for node in graph.node:  # each protobuf field read once (``ImportedModel.node_io``)
        node_name, op = node.name, node.op_type
        ins, outs = tuple(node.input), tuple(node.output)
        ranks = [
            len(types[n].shape or ()) if n in types and types[n].shape is not None else None
            for n in ins
        ]
        orig = _original_dtype(ins, outs, types)
        preds = tuple(dict.fromkeys(
            producer[n] for n in ins
            if n in producer and n in types and types[n].dtype in FLOAT_NAMES
        ))
        infos.append(NodeInfo(
            name=node_name, onnx_op=op, op_type=ascend_op_type(op, ranks),
            original_dtype=orig, predecessors=preds,
        ))
        io.append((node_name, op, ins, outs))
        for out in outs:
            if out:
                producer[out] = node_name
    inputs = tuple(i.name for i in graph.input if i.name not in initializers)
    return ImportedModel(
        model=proto,
        name=name or graph_name or default_name or "model",
        opset=opset,
        converted_from=converted_from,
        types=types,
        nodes=tuple(infos),
        initializers=initializers,
        inputs=inputs,
        outputs=tuple(o.name for o in graph.output),
        notes=tuple(notes),
        node_io=tuple(io),
    )
