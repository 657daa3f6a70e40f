"""Checking the feeds of ``CompiledModel.run``: every input present, known, of the right
dtype and shape, each failure an :class:`InputError` naming the input and the fix."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import ml_dtypes
import numpy as np

from geplug.errors import CompileError
from geplug_simulator.importer import TensorType

__all__ = ["NP_DTYPES", "InputError", "check_inputs"]

NP_DTYPES: dict[str, Any] = {
    "float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16,
    "float64": np.float64, "int8": np.int8, "int16": np.int16, "int32": np.int32,
    "int64": np.int64, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32,
    "uint64": np.uint64, "bool": np.bool_,
}
"""geplug dtype name -> numpy scalar type."""


class InputError(CompileError):
    """A missing, unknown, mis-shaped or wrong-dtype input; ``node`` names the input."""


def _dtype_hint(name: str, got: np.dtype[Any], want: str) -> str:
    if want == "bfloat16":
        return (f"input {name!r} has dtype {got}, the model expects bfloat16; convert it with "
                ".astype(ml_dtypes.bfloat16)")
    return (f"input {name!r} has dtype {got}, the model expects {want}; convert it with "
            f".astype(numpy.{want})")


def _check_one(name: str, value: Any, tt: TensorType | None) -> Any:
    if tt is None and not isinstance(value, np.ndarray):
        return value  # a sequence / optional input: passed as given
    try:
        array = value if isinstance(value, np.ndarray) else np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"input {name!r} is a {type(value).__name__} that is not an array ({exc}); give a "
            "numpy array", node=name,
        ) from None
    if tt is None:
        return array
    want = NP_DTYPES.get(tt.dtype)
    if want is not None and array.dtype != want:
        if isinstance(value, np.ndarray) or not np.can_cast(array.dtype, want,
                                                            casting="same_kind"):
            raise InputError(_dtype_hint(name, array.dtype, tt.dtype), node=name)
        array = array.astype(want)  # a Python list/scalar of a compatible kind
    if tt.shape is not None:
        ok = array.ndim == len(tt.shape) and all(
            d is None or d == a for d, a in zip(tt.shape, array.shape, strict=True)
        )
        if not ok:
            want_shape = ["?" if d is None else d for d in tt.shape]
            raise InputError(
                f"input {name!r} has shape {list(array.shape)}, the model expects "
                f"{want_shape} ('?' = any size); reshape the array", node=name,
            )
    return array


def check_inputs(
    model_name: str,
    inputs: Any,
    input_names: Sequence[str],
    types: Mapping[str, TensorType | None],
) -> dict[str, Any]:
    """The feeds for onnxruntime from the caller's ``inputs`` (see the module docstring)."""
    if not isinstance(inputs, Mapping):
        raise InputError(
            f"inputs must be a mapping of input name to array, got {type(inputs).__name__}; "
            f"the model's inputs are {list(input_names)}", node="",
        )
    for key in inputs:
        if key not in types:
            raise InputError(
                f"model {model_name!r} has no input {key!r}; its inputs are "
                f"{list(input_names)}", node=str(key),
            )
    feeds: dict[str, Any] = {}
    for name in input_names:
        tt = types.get(name)
        if name not in inputs:
            described = f" ({tt.dtype}, shape {list(tt.shape or ())})" if tt else ""
            raise InputError(
                f"input {name!r} of model {model_name!r} is missing; give it as "
                f"{{{name!r}: array}}{described}", node=name,
            )
        feeds[name] = _check_one(name, inputs[name], tt)
    return feeds
