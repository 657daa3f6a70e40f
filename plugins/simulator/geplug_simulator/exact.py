"""Which float32 tensors of the rewritten graph already hold values exact in float16/bfloat16.

Rounding a value that is already exact in a dtype gives the value back, so a Cast pair on
such a tensor changes nothing and is left out (:meth:`GraphBuilder.round_to`). A tensor is
exact when it is the rounded output of a lowered op, a graph-constant whose every value
survives the round trip, or the output of a *selecting* op (:data:`SELECTING_OPS`) whose
floating inputs are all exact: those ops only move, select or sign-flip their input values,
so every output value is one of the (exact) input values, bit for bit. MobileNetV2's Clip
after a float16 Conv, ResNet's ReLU and MaxPool, BERT's Transpose/Reshape between two
float16 MatMuls are such ops.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import ml_dtypes
import numpy as np
import onnx
from onnx import numpy_helper

__all__ = ["MAX_CHECKED_CONSTANT", "SELECTING_OPS", "exact_in", "values_exact_in"]

SELECTING_OPS = frozenset({
    # data movement: every output value is an input value
    "Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Expand", "Tile",
    "Slice", "Gather", "GatherElements", "GatherND", "Concat", "Split", "Pad",
    "DepthToSpace", "SpaceToDepth",
    # selection and sign: max/min/where pick an input value; abs/neg flip the sign bit
    "Relu", "Clip", "Max", "Min", "Where", "MaxPool", "GlobalMaxPool", "ReduceMax",
    "ReduceMin", "Abs", "Neg",
})
"""ONNX ops (default domain) whose floating outputs are exact in a dtype when every
floating input is: each output value is an input value (moved, selected or sign-flipped)."""

MAX_CHECKED_CONSTANT = 1 << 16
"""Constants up to this many elements are checked value by value for exactness (bounds,
pad values); a larger constant counts as not exact (a weight is pre-rounded instead)."""

_FLOATS = frozenset({"float16", "bfloat16", "float32", "float64"})
_NP = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


def values_exact_in(array: np.ndarray, dtype: str) -> bool:
    """Whether every value of float32 ``array`` is unchanged by rounding to ``dtype``
    (NaNs count as exact: rounding keeps them NaN)."""
    target = _NP.get(dtype)
    if target is None or array.dtype != np.float32:
        return False
    back = array.astype(target).astype(np.float32)
    return bool(np.array_equal(back, array, equal_nan=True))


def constant_of(node: onnx.NodeProto) -> np.ndarray | None:
    """The value of a ``Constant`` node given as a tensor or float attribute (else None)."""
    for a in node.attribute:
        if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
            return numpy_helper.to_array(a.t)
        if a.name == "value_float":
            return np.array(a.f, np.float32)
        if a.name == "value_floats":
            return np.array(list(a.floats), np.float32)
    return None


def exact_in(node: onnx.NodeProto, input_dtypes: Iterable[tuple[str, str | None]],
             exact_dtype: Callable[[str], str | None],
             constant: Callable[[str], tuple[bool, np.ndarray | None]]) -> str | None:
    """The dtype every float32 output of ``node`` is exact in, or None.

    ``input_dtypes`` pairs each input name with its dtype name (None when unknown);
    ``exact_dtype(name)`` says which dtype a computed tensor is known exact in;
    ``constant(name)`` says whether ``name`` is a constant and gives its value when small.
    The node must be a :data:`SELECTING_OPS` op of the default domain whose inputs all have
    known dtypes, whose floating inputs are all float32, and which reads at least one
    computed tensor; its computed float inputs must be exact in one dtype and its constant
    float inputs small and exact in that dtype too.
    """
    if node.domain not in ("", "ai.onnx") or node.op_type not in SELECTING_OPS:
        return None
    computed: list[str] = []
    constants: list[np.ndarray] = []
    for name, dtype_name in input_dtypes:
        if dtype_name is None:
            return None  # an input of unknown dtype could be an unrounded float
        if dtype_name not in _FLOATS:
            continue
        if dtype_name != "float32":
            return None
        is_constant, value = constant(name)
        if not is_constant:
            computed.append(name)
        elif value is None:
            return None  # too large to check
        else:
            constants.append(value)
    if not computed:
        return None  # all-constant: onnxruntime folds it, nothing to save
    dtype = exact_dtype(computed[0])
    if dtype is None or any(exact_dtype(n) != dtype for n in computed[1:]):
        return None
    if not all(values_exact_in(v, dtype) for v in constants):
        return None
    return dtype
