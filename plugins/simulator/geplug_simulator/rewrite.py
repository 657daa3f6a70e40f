"""The precision rewrite: Cast pairs around every op that runs in a reduced precision.

onnxruntime computes every rewritten op in float32; the op's inputs are first rounded to the
device dtype (``Cast(float16|bfloat16) -> Cast(float32)``, weights pre-rounded in numpy) and
its outputs rounded the same way, so float16/bfloat16 rounding and overflow to inf are exact
(DESIGN.md "The simulator"). Tensors the source graph stores in float16/bfloat16 keep their
type between ops; an op reading them computes on float32 copies. An op whose decision keeps
float32 is left untouched, so a float32 model under must_keep_origin_dtype runs as it is.

For float16 ops in ``high_performance`` mode, SoftmaxV2, LRN and average Pooling are replaced
by subgraphs whose intermediates are held in float16 (the cheap implementation); in
``high_precision`` mode only their inputs and outputs are float16 (options.md §9.1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs
import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from geplug.errors import CompileError
from geplug.precision import OpDecision
from geplug_simulator.importer import ELEM_TYPES, ImportedModel

__all__ = ["IMPL_REWRITTEN_OPS", "RewrittenModel", "TensorRef", "rewrite", "to_device"]

F32, F16, BF16 = "float32", "float16", "bfloat16"
_REDUCED = (F16, BF16)
_PRECISION = (F32, F16, BF16)
IMPL_REWRITTEN_OPS = frozenset({"Softmax", "LRN", "AveragePool", "GlobalAveragePool"})
"""ONNX ops whose high_performance float16 implementation accumulates in float16."""

_NP = {F32: np.float32, F16: np.float16, BF16: ml_dtypes.bfloat16}


def to_device(array: np.ndarray, dtype: str) -> np.ndarray:
    """``array`` (float32 holding values exact in ``dtype``) as the device holds it."""
    target = _NP.get(dtype)
    if target is None or array.dtype == target:
        return array
    return array.astype(target)


@attrs.frozen
class TensorRef:
    """A tensor of the rewritten graph and the device dtype its values are exact in."""

    name: str
    dtype: str
    source: str
    """The tensor's name in the source graph."""


@attrs.frozen(kw_only=True)
class RewrittenModel:
    """The model onnxruntime runs, and where each op's device tensors live in it."""

    model: onnx.ModelProto = attrs.field(repr=False)
    op_inputs: Mapping[str, tuple[TensorRef, ...]]
    op_outputs: Mapping[str, tuple[TensorRef, ...]]
    value_types: Mapping[str, int]
    """Element type of every node-produced tensor that can be exposed (dump session)."""
    constants: dict[str, np.ndarray] = attrs.field(repr=False)
    """Pre-rounded initializer values (source initializers are read on demand)."""
    init_protos: Mapping[str, onnx.TensorProto] = attrs.field(repr=False)
    casts_added: int = 0
    impl_rewritten: tuple[str, ...] = ()

    def constant(self, name: str) -> np.ndarray | None:
        """The value of initializer ``name`` (``None`` when it is not an initializer)."""
        if name not in self.constants:
            proto = self.init_protos.get(name)
            if proto is None:
                return None
            self.constants[name] = numpy_helper.to_array(proto)
        return self.constants[name]


class _Builder:
    def __init__(self, imported: ImportedModel) -> None:
        self.imported = imported
        self.nodes: list[onnx.NodeProto] = []
        self.new_inits: list[onnx.TensorProto] = []
        self.cache: dict[tuple[str, str], str] = {}
        self.rounded_as: dict[str, str] = {}
        self.value_types: dict[str, int] = {}
        self.casts = 0
        self.names: set[str] = set()
        self.init_protos = {i.name: i for i in imported.model.graph.initializer}
        self.constants: dict[str, np.ndarray] = {}
        for name, t in imported.types.items():
            if t.dtype in ELEM_TYPES:
                self.value_types[name] = ELEM_TYPES[t.dtype]
        self.opset = imported.opset

    def uniq(self, base: str) -> str:
        name, k = base, 1
        while name in self.names or name in self.imported.types:
            name, k = f"{base}_{k}", k + 1
        self.names.add(name)
        return name

    def constant(self, name: str) -> np.ndarray:
        if name not in self.constants:
            self.constants[name] = numpy_helper.to_array(self.init_protos[name])
        return self.constants[name]

    def add(self, op: str, inputs: Sequence[str], out: str, tag: str, **attrs_: object) -> str:
        self.nodes.append(helper.make_node(op, list(inputs), [out], name=self.uniq(tag),
                                           **attrs_))  # type: ignore[arg-type]
        return out

    def cast(self, src: str, dtype: str, tag: str, out: str | None = None) -> str:
        out = out or self.uniq(f"{src}::{dtype}")
        self.casts += 1
        self.value_types[out] = ELEM_TYPES[dtype]
        return self.add("Cast", [src], out, f"{tag}::cast", to=ELEM_TYPES[dtype])

    def round_to(self, src: str, dtype: str, tag: str, out: str | None = None) -> str:
        """A float32 tensor holding ``src`` (float32) rounded to ``dtype``."""
        if dtype == F32 and out is None:
            return src
        if out is None:
            if self.rounded_as.get(src) == dtype:
                return src
            key = (src, dtype)
            if key in self.cache:
                return self.cache[key]
            if src in self.init_protos and src not in self.imported.inputs:
                rounded = self.constant(src).astype(_NP[dtype]).astype(np.float32)
                name = self.uniq(f"{src}::{dtype}")
                self.new_inits.append(numpy_helper.from_array(rounded, name))
                self.constants[name] = rounded
                self.cache[key] = name
                self.rounded_as[name] = dtype
                return name
        mid = self.cast(src, dtype, tag)
        res = self.cast(mid, F32, tag, out=out)
        if out is None:
            self.cache[(src, dtype)] = res
        self.rounded_as[res] = dtype
        return res

    # -- reduce helpers across opsets ------------------------------------------------------

    def reduce(self, op: str, src: str, axes: Sequence[int], tag: str) -> str:
        out = self.uniq(f"{tag}::{op}")
        takes_input = (op == "ReduceSum" and self.opset >= 13) or self.opset >= 18
        if takes_input:
            axes_name = self.uniq(f"{tag}::axes")
            self.new_inits.append(numpy_helper.from_array(np.array(axes, np.int64), axes_name))
            return self.add(op, [src, axes_name], out, f"{tag}::{op}", keepdims=1)
        return self.add(op, [src], out, f"{tag}::{op}", axes=list(axes), keepdims=1)

    def scalar(self, value: float, tag: str) -> str:
        name = self.uniq(f"{tag}::const")
        self.new_inits.append(numpy_helper.from_array(np.array(value, np.float32), name))
        return name


def _attr(node: onnx.NodeProto, name: str, default: object) -> object:
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _cheap_fp16(b: _Builder, node: onnx.NodeProto, x: str, y_raw: str) -> bool:
    """Emit the float16-accumulating form of ``node`` (x: rounded float32 input). False when
    the node's form is not covered (the careful form is used instead)."""
    tag = node.name
    r16 = lambda src: b.round_to(src, F16, tag)  # noqa: E731
    shape = b.imported.types.get(node.input[0])
    rank = len(shape.shape) if shape is not None and shape.shape is not None else None
    if node.op_type == "Softmax" and b.opset >= 13:
        axis = int(_attr(node, "axis", -1))  # type: ignore[call-overload]
        m = b.reduce("ReduceMax", x, [axis], tag)
        d = r16(b.add("Sub", [x, m], b.uniq(f"{tag}::sub"), f"{tag}::sub"))
        e = r16(b.add("Exp", [d], b.uniq(f"{tag}::exp"), f"{tag}::exp"))
        s = r16(b.reduce("ReduceSum", e, [axis], tag))
        b.add("Div", [e, s], y_raw, f"{tag}::div")
        return True
    if node.op_type == "LRN" and rank is not None and rank >= 3:
        size = int(_attr(node, "size", 1))  # type: ignore[call-overload]
        alpha = float(_attr(node, "alpha", 1e-4))  # type: ignore[arg-type]
        beta = float(_attr(node, "beta", 0.75))  # type: ignore[arg-type]
        bias = float(_attr(node, "bias", 1.0))  # type: ignore[arg-type]
        sq = r16(b.add("Mul", [x, x], b.uniq(f"{tag}::sq"), f"{tag}::sq"))
        shp = b.add("Shape", [x], b.uniq(f"{tag}::shape"), f"{tag}::shape")
        to4 = b.uniq(f"{tag}::to4")
        b.new_inits.append(numpy_helper.from_array(np.array([0, 1, 0, -1], np.int64), to4))
        r4 = b.add("Reshape", [sq, to4], b.uniq(f"{tag}::r4"), f"{tag}::r4")
        w = b.uniq(f"{tag}::window")
        b.new_inits.append(numpy_helper.from_array(np.ones((1, 1, size, 1), np.float32), w))
        lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
        s4 = b.add("Conv", [r4, w], b.uniq(f"{tag}::sum"), f"{tag}::sum",
                   pads=[lo, 0, hi, 0])
        s = r16(b.add("Reshape", [s4, shp], b.uniq(f"{tag}::sumr"), f"{tag}::sumr"))
        t = r16(b.add("Mul", [s, b.scalar(alpha / size, tag)], b.uniq(f"{tag}::scale"),
                      f"{tag}::scale"))
        t = r16(b.add("Add", [t, b.scalar(bias, tag)], b.uniq(f"{tag}::bias"), f"{tag}::bias"))
        p = r16(b.add("Pow", [t, b.scalar(beta, tag)], b.uniq(f"{tag}::pow"), f"{tag}::pow"))
        b.add("Div", [x, p], y_raw, f"{tag}::div")
        return True
    if node.op_type in ("AveragePool", "GlobalAveragePool"):
        if node.op_type == "AveragePool":
            kernel = list(_attr(node, "kernel_shape", []))  # type: ignore[call-overload]
            pads = list(_attr(node, "pads", []))  # type: ignore[call-overload]
            auto_pad = _attr(node, "auto_pad", b"NOTSET")
            include = int(_attr(node, "count_include_pad", 0))  # type: ignore[call-overload]
            if not kernel or (any(pads) and not include) or auto_pad not in (
                b"NOTSET", b"VALID", "NOTSET", "VALID"
            ):
                return False
            count = float(np.prod(kernel))
        else:
            if shape is None or shape.shape is None or any(
                d is None for d in shape.shape[2:]
            ):
                return False
            count = float(np.prod([int(d or 1) for d in shape.shape[2:]]))
        pooled = b.uniq(f"{tag}::avg")
        new = onnx.NodeProto()
        new.CopyFrom(node)
        del new.input[:]
        new.input.extend([x])
        del new.output[:]
        new.output.extend([pooled])
        new.name = b.uniq(f"{tag}::avg")
        b.nodes.append(new)
        k = b.scalar(count, tag)
        total = r16(b.add("Mul", [pooled, k], b.uniq(f"{tag}::sum"), f"{tag}::sum"))
        b.add("Div", [total, k], y_raw, f"{tag}::div")
        return True
    return False


def rewrite(imported: ImportedModel, decisions: Sequence[OpDecision]) -> RewrittenModel:
    """The model to run for ``decisions`` (one per node, in node order)."""
    b = _Builder(imported)
    graph = imported.model.graph
    by_node = {d.node: d for d in decisions}
    op_inputs: dict[str, tuple[TensorRef, ...]] = {}
    op_outputs: dict[str, tuple[TensorRef, ...]] = {}
    impl_rewritten: list[str] = []
    types = imported.types
    for node in graph.node:
        d = by_node[node.name]
        orig, dev, out_dt = d.original_dtype, d.dtype, d.output_dtype or d.dtype
        if dev == "hifloat8":
            raise CompileError(
                f"node {node.name!r} ({d.op_type}) was assigned hifloat8 by "
                f"{d.reason.split(':')[0]}; "
                "hifloat8 numerics are not simulated - use another precision mode for "
                "simulation", node=node.name,
            )
        plain = (
            orig not in _PRECISION or dev not in _PRECISION or out_dt not in _PRECISION
            or (orig == dev == out_dt == F32)
            or node.domain not in ("", "ai.onnx")
            or any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                   for a in node.attribute)
        )
        if plain:
            b.nodes.append(node)
            op_inputs[node.name] = tuple(
                TensorRef(n, types[n].dtype if n in types else "", n) for n in node.input if n
            )
            op_outputs[node.name] = tuple(
                TensorRef(n, types[n].dtype if n in types else "", n) for n in node.output if n
            )
            continue
        new = onnx.NodeProto()
        new.CopyFrom(node)
        ins: list[TensorRef] = []
        for i, name in enumerate(node.input):
            if not name:
                continue
            t = types.get(name)
            if t is None or t.dtype != orig:
                ins.append(TensorRef(name, t.dtype if t else "", name))
                continue
            if orig == F32:
                fed = b.round_to(name, dev, node.name)
            else:
                key = (name, F32)
                if key not in b.cache:
                    b.cache[key] = b.cast(name, F32, node.name)
                fed = b.cache[key]
                if dev not in (orig, F32):
                    fed = b.round_to(fed, dev, node.name)
            new.input[i] = fed
            ins.append(TensorRef(fed, dev, name))
        outs: list[TensorRef] = []
        finals: list[tuple[str, str]] = []
        for i, name in enumerate(node.output):
            if not name:
                continue
            t = types.get(name)
            if t is None or t.dtype != orig:
                outs.append(TensorRef(name, t.dtype if t else "", name))
                continue
            if orig == F32 and out_dt == F32:
                outs.append(TensorRef(name, F32, name))
                continue
            raw = b.uniq(f"{name}::raw")
            b.value_types[raw] = TensorProto.FLOAT
            new.output[i] = raw
            finals.append((raw, name))
        cheap = (
            dev == F16 and d.impl_mode == "high_performance"
            and node.op_type in IMPL_REWRITTEN_OPS and len(finals) == 1
            and len(new.output) == 1
        )
        if cheap and _cheap_fp16(b, node, new.input[0], new.output[0]):
            impl_rewritten.append(node.name)
        else:
            b.nodes.append(new)
        for raw, name in finals:
            if orig == F32:
                res = b.round_to(raw, out_dt, node.name, out=name)
                b.rounded_as[name] = out_dt
                outs.append(TensorRef(res, out_dt, name))
            else:
                held = raw if out_dt == F32 else b.round_to(raw, out_dt, node.name)
                b.cast(held, orig, node.name, out=name)
                b.value_types[name] = ELEM_TYPES[orig]
                outs.append(TensorRef(held, out_dt, name))
        op_inputs[node.name] = tuple(ins)
        op_outputs[node.name] = tuple(outs)
    model = onnx.ModelProto()
    model.CopyFrom(imported.model)
    del model.graph.node[:]
    model.graph.node.extend(b.nodes)
    model.graph.initializer.extend(b.new_inits)
    return RewrittenModel(
        model=model,
        op_inputs=op_inputs,
        op_outputs=op_outputs,
        value_types=b.value_types,
        constants=b.constants,
        init_protos=b.init_protos,
        casts_added=b.casts,
        impl_rewritten=tuple(impl_rewritten),
    )
