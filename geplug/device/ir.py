"""The graph a backend hands to the device model: a small, backend-independent IR.

The ONNX backend builds it from an imported model (``geplug_simulator.devicegraph``); the
torch backend builds it from an FX graph. Nothing here knows ONNX or torch: a node is an
Ascend op type with named input and output tensors, a tensor a dtype, a shape (``None`` for a
dimension nobody could resolve) and its kind.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import attrs

__all__ = ["DTYPE_BYTES", "Graph", "Node", "Tensor", "dtype_bytes", "make_node", "make_tensor",
           "numel"]

DTYPE_BYTES: Mapping[str, int] = {
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4,
    "int16": 2, "int8": 1, "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8, "bool": 1,
    "hifloat8": 1,
}
"""Bytes per element of every dtype a declaration may name."""

TensorKind = Literal["input", "weight", "constant", "activation"]


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of ``dtype`` (4 for a dtype the table does not know)."""
    return DTYPE_BYTES.get(dtype, 4)


def numel(shape: Sequence[int | None] | None) -> int:
    """Elements of ``shape``; an unresolved dimension counts as 1 (callers report it)."""
    if shape is None:
        return 1
    return int(math.prod(int(d) if d else 1 for d in shape))


def _shape(value: Sequence[int | None] | None) -> tuple[int | None, ...] | None:
    if value is None:
        return None
    if type(value) is tuple and all(d is None or type(d) is int for d in value):
        return value  # already canonical (what importers build): no copy per tensor
    return tuple(None if d is None else int(d) for d in value)


def _names(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _nodes(value: Iterable[Node]) -> tuple[Node, ...]:
    return tuple(value)


@attrs.frozen(kw_only=True)
class Tensor:
    """One tensor of the graph.

    ``kind``: ``input`` (fed by the user each step), ``weight`` (stored with the model: an
    ONNX initializer, a torch parameter or buffer), ``constant`` (a value the graph itself
    spells, e.g. an ONNX ``Constant`` node's output) or ``activation`` (computed by a node).
    """

    name: str
    dtype: str
    shape: tuple[int | None, ...] | None = attrs.field(converter=_shape, default=None)
    kind: TensorKind = "activation"

    @property
    def resolved(self) -> bool:
        """Every dimension is known."""
        return self.shape is not None and all(d is not None for d in self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes of the tensor in its dtype (unresolved dims count as 1)."""
        return numel(self.shape) * dtype_bytes(self.dtype)


@attrs.frozen(kw_only=True)
class Node:
    """One operator: its Ascend op type, the source op it came from, tensors in and out.

    ``attrs`` holds the few attributes cost needs (``group``, ``trans_a``, ``trans_b``,
    ``kernel_shape``, ``hidden_size``, ``direction``); anything else may be omitted.
    """

    name: str
    op_type: str
    source_op: str = ""
    inputs: tuple[str, ...] = attrs.field(converter=_names, default=())
    """Input tensor names in order ("" for an omitted optional input)."""
    outputs: tuple[str, ...] = attrs.field(converter=_names, default=())
    attrs: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class Graph:
    """A model as the device model sees it: nodes in a topological order, their tensors."""

    name: str
    nodes: tuple[Node, ...] = attrs.field(converter=_nodes)
    tensors: Mapping[str, Tensor]
    inputs: tuple[str, ...] = attrs.field(converter=_names, default=())
    outputs: tuple[str, ...] = attrs.field(converter=_names, default=())

    def tensor(self, name: str) -> Tensor | None:
        """The tensor ``name`` (``None`` for an omitted input or an unknown name)."""
        return self.tensors.get(name) if name else None


_new = object.__new__
_set = object.__setattr__


def make_tensor(name: str, dtype: str, shape: tuple[int | None, ...] | None,
                kind: TensorKind) -> Tensor:
    """A :class:`Tensor` from values already in canonical form (``shape`` a tuple of ints
    and ``None``, or ``None``), without the converters: for an importer building every
    tensor of a large model (half the cost of ``Tensor(...)``). Equal to
    ``Tensor(name=name, dtype=dtype, shape=shape, kind=kind)`` for such values."""
    t = _new(Tensor)
    _set(t, "name", name)
    _set(t, "dtype", dtype)
    _set(t, "shape", shape)
    _set(t, "kind", kind)
    return t


def make_node(name: str, op_type: str, source_op: str, inputs: tuple[str, ...],
              outputs: tuple[str, ...], attrs: dict[str, Any]) -> Node:
    """A :class:`Node` from values already in canonical form (``inputs`` and ``outputs``
    tuples of str), without the converters: for an importer building every node of a large
    model. Equal to ``Node(name=..., op_type=..., ...)`` for such values."""
    n = _new(Node)
    _set(n, "name", name)
    _set(n, "op_type", op_type)
    _set(n, "source_op", source_op)
    _set(n, "inputs", inputs)
    _set(n, "outputs", outputs)
    _set(n, "attrs", attrs)
    return n
