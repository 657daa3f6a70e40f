"""The high_performance float16 implementations (options.md §9.1): SoftmaxV2, LRN and
average Pooling rewritten into subgraphs whose intermediates are rounded to float16, the
cheap way a float16 kernel accumulates; high_precision keeps them in float32."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from geplug_simulator.graphbuild import F16, GraphBuilder

__all__ = ["IMPL_REWRITTEN_OPS", "cheap_fp16"]

IMPL_REWRITTEN_OPS = frozenset({"Softmax", "LRN", "AveragePool", "GlobalAveragePool"})
"""ONNX ops whose high_performance float16 implementation accumulates in float16."""


def _attr(node: onnx.NodeProto, name: str, default: object) -> object:
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def cheap_fp16(b: GraphBuilder, node: onnx.NodeProto, x: str, y_raw: str) -> bool:
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
