"""Building the rewritten graph: Cast pairs (float32 -> float16|bfloat16 -> float32) with a
cache per tensor and dtype, weights pre-rounded in numpy, reductions across opsets."""

from __future__ import annotations

from collections.abc import Sequence

import ml_dtypes
import numpy as np
import onnx
from onnx import helper, numpy_helper

from geplug_simulator.exact import MAX_CHECKED_CONSTANT, constant_of
from geplug_simulator.importer import ELEM_TYPES, ImportedModel

__all__ = ["BF16", "F16", "F32", "GraphBuilder", "to_device"]

F32, F16, BF16 = "float32", "float16", "bfloat16"
_NP = {F32: np.float32, F16: np.float16, BF16: ml_dtypes.bfloat16}


def to_device(array: np.ndarray, dtype: str) -> np.ndarray:
    """``array`` (float32 holding values exact in ``dtype``) as the device holds it."""
    target = _NP.get(dtype)
    if target is None or array.dtype == target:
        return array
    return array.astype(target)


class GraphBuilder:
    """The nodes and initializers of the rewritten graph, as they are added."""

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
        self.constant_nodes: dict[str, onnx.NodeProto] = {}
        """``Constant`` nodes by output name (their values are decoded on demand)."""
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

    def known_constant(self, name: str) -> tuple[bool, np.ndarray | None]:
        """Whether ``name`` is a constant of the graph (an initializer the caller cannot
        feed, or a ``Constant`` node's output), and its value when it has at most
        :data:`~geplug_simulator.exact.MAX_CHECKED_CONSTANT` elements."""
        proto = self.init_protos.get(name)
        if proto is not None and name not in self.imported.inputs:
            if int(np.prod(proto.dims, dtype=np.int64)) > MAX_CHECKED_CONSTANT:
                return True, None
            return True, self.constant(name)
        node = self.constant_nodes.get(name)
        if node is not None:
            value = constant_of(node)
            small = value is not None and value.size <= MAX_CHECKED_CONSTANT
            return True, value if small else None
        return False, None

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
