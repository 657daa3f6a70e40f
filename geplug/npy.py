"""Read a user's ``.npy`` file (``geplug run --input NAME=FILE.npy``) without trusting it.

``numpy.load`` on a damaged file can raise what no caller expects (``tokenize.TokenError``
from its header filter, ``SyntaxError``), print warnings (an invalid escape in the header, a
"Python 2 header"), or allocate what the header claims before finding the data missing. This
reader parses the header itself (:func:`geplug.pyliteral.literal`), checks that the data the
header declares is exactly what the file holds, and only then reads it; every failure is one
error naming the file and what is wrong (docs/limits.md).
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from geplug.limits import escape_controls, open_regular
from geplug.pyliteral import LiteralError, literal

__all__ = ["MAX_NPY_HEADER_BYTES", "read_npy"]

MAX_NPY_HEADER_BYTES = 1 << 16
"""Longest ``.npy`` header read (numpy writes a few hundred bytes)."""

_MAGIC = b"\x93NUMPY"
_LENGTH = {1: ("<H", "latin-1"), 2: ("<I", "latin-1"), 3: ("<I", "utf-8")}
_MAX_DIMS = 64
_DESCR = re.compile(r"[<>|=]?[biufcSUVmM][0-9]{1,9}(\[[0-9]{0,6}[A-Za-z]{1,2}\])?")
"""The ``descr`` strings numpy.save writes for a plain array ('<f4', '|b1', '<M8[ns]')."""


def _header(data: bytes, why: Callable[[str], Exception]) -> tuple[dict[str, Any], int]:
    """The header dict of a ``.npy`` file's first bytes and where its data starts."""
    if data[:6] != _MAGIC or len(data) < 8:
        raise why("it does not start with the .npy magic string (\\x93NUMPY)")
    major, minor = data[6], data[7]
    if major not in _LENGTH or minor != 0:
        raise why(f"format version {major}.{minor} is not one numpy writes (1.0, 2.0, 3.0)")
    fmt, encoding = _LENGTH[major]
    start = 8 + struct.calcsize(fmt)
    if len(data) < start:
        raise why("the file ends inside the header")
    (length,) = struct.unpack(fmt, data[8:start])
    if length > MAX_NPY_HEADER_BYTES:
        raise why(f"its header claims {length} bytes (at most {MAX_NPY_HEADER_BYTES})")
    if len(data) < start + length:
        raise why("the file ends inside the header")
    try:
        text = data[start:start + length].decode(encoding)
        header = literal(text)
    except (UnicodeDecodeError, LiteralError) as exc:
        raise why(f"its header is not a Python dict literal ({exc})") from None
    if not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"}:
        raise why("its header lacks the keys descr, fortran_order and shape")
    return header, start + length


def _layout(header: dict[str, Any], why: Callable[[str], Exception]
            ) -> tuple[np.dtype[Any], tuple[int, ...], bool]:
    shape, order, descr = header["shape"], header["fortran_order"], header["descr"]
    if (not isinstance(shape, tuple) or len(shape) > _MAX_DIMS
            or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                       for d in shape)):
        raise why(f"its header's shape {escape_controls(repr(shape))[:80]} is not a tuple of "
                  f"at most {_MAX_DIMS} sizes >= 0")
    if not isinstance(order, bool):
        raise why("its header's fortran_order is not True or False")
    if not isinstance(descr, str):
        raise why("it holds a structured array (fields); give a plain numeric array")
    dtype = None
    if _DESCR.fullmatch(descr):
        try:
            dtype = np.dtype(descr)
        except (TypeError, ValueError, OverflowError):
            dtype = None
    if dtype is None:
        raise why(f"its dtype {escape_controls(descr)[:40]!r} is not the dtype of a plain "
                  "numpy array")
    if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None \
            or not dtype.itemsize:
        raise why(f"its dtype {dtype} holds Python objects or fields; give a plain numeric "
                  "array saved with numpy.save")
    return dtype, shape, order


def read_npy(path: str, *, fail: Callable[[str], Exception]) -> np.ndarray:
    """The array in the ``.npy`` file ``path``; ``fail(message)`` builds the caller's error
    (the message names the file and says why it cannot be read and what to do)."""
    shown = repr(escape_controls(path))

    def why(reason: str) -> Exception:
        return fail(f"cannot read {shown} as .npy: {reason}; give a file written by "
                    "numpy.save")

    size = open_regular(path, what=".npy file", fail=fail)
    try:
        with open(path, "rb") as fh:
            head = fh.read(12 + MAX_NPY_HEADER_BYTES)
            header, data_start = _header(head, why)
            dtype, shape, fortran = _layout(header, why)
            expected = math.prod(shape) * dtype.itemsize
            if size - data_start != expected:
                raise why(f"its header declares {expected} bytes of data for shape "
                          f"{shape} {dtype}, the file holds {size - data_start}: it is "
                          "truncated or damaged")
            fh.seek(data_start)
            data = fh.read(expected)
    except OSError as exc:
        raise fail(f"cannot read {shown}: {exc.strerror or exc}") from None
    if len(data) != expected:
        raise why("the file changed while it was read")
    return np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C").copy()
