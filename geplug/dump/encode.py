"""Encode one dump file: 8-byte header length, DumpData header, payload (formats.md §2.1).

The header is built with the protobuf message classes of :mod:`geplug.dump.schema`; the
``data`` fields stay empty and each tensor's bytes follow the header in the order inputs,
outputs, buffers, spaces, so the file size is exactly 8 + header_len + Σ sizes.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from geplug.dump import schema

__all__ = ["TensorPayload", "encode_dump", "payload_view"]

_DEVICE_BASE = 0x12C0_0000_0000
"""Simulated HBM base address for the ``address`` fields (an arbitrary, plausible value)."""
_ALIGN = 512


def payload_view(array: np.ndarray) -> memoryview:
    """The tensor's bytes in C order, without a copy when the array is contiguous."""
    arr = np.ascontiguousarray(array)
    flat: Any = arr.reshape(-1).view(np.uint8)
    return memoryview(flat)


@attrs.frozen(kw_only=True)
class TensorPayload:
    """One tensor to write: the array, its device format and the names the header needs."""

    array: np.ndarray = attrs.field(eq=False, repr=False)
    format: str = "ND"
    original_name: str = ""
    original_index: int = 0


def _shape(message: Any, dims: Sequence[int]) -> None:
    message.dim.extend(int(d) for d in dims)


def encode_dump(
    *,
    op_name: str,
    dump_time: int,
    inputs: Sequence[TensorPayload] = (),
    outputs: Sequence[TensorPayload] = (),
    spaces: Sequence[bytes] = (),
    dfx_message: str = "",
    exception: bool = False,
    address_seed: int = 0,
) -> list[Any]:
    """The chunks of one dump file (length prefix, header, then the payload in order).

    ``exception`` fills the newest-schema ``arg_index`` / ``input_type`` input fields that
    exception dumps carry (formats.md §2.2, §4). ``address_seed`` (e.g. the task id) makes
    the simulated device addresses differ between ops.
    """
    header = schema.DumpData(version="2.0", dump_time=int(dump_time), op_name=op_name)
    views: list[memoryview] = []
    address = _DEVICE_BASE + (int(address_seed) << 20)
    arg_index = 0
    for t in inputs:
        view = payload_view(t.array)
        entry = header.input.add(
            data_type=schema.data_type_for(t.array.dtype),
            format=schema.format_enum(t.format),
            size=view.nbytes,
            address=address,
        )
        _shape(entry.shape, t.array.shape)
        _shape(entry.original_shape, t.array.shape)
        if exception:
            entry.arg_index = arg_index
        arg_index += 1
        address += -(-max(view.nbytes, 1) // _ALIGN) * _ALIGN
        views.append(view)
    for t in outputs:
        view = payload_view(t.array)
        data_type = schema.data_type_for(t.array.dtype)
        fmt = schema.format_enum(t.format)
        entry = header.output.add(data_type=data_type, format=fmt, size=view.nbytes,
                                  address=address)
        _shape(entry.shape, t.array.shape)
        _shape(entry.original_shape, t.array.shape)
        entry.original_op.name = t.original_name or op_name
        entry.original_op.output_index = t.original_index
        entry.original_op.data_type = data_type
        entry.original_op.format = fmt
        address += -(-max(view.nbytes, 1) // _ALIGN) * _ALIGN
        views.append(view)
    for blob in spaces:
        header.space.add(type=0, size=len(blob))
        views.append(memoryview(blob))
    if dfx_message:
        header.dfx_message = dfx_message
    head = header.SerializeToString()
    return [struct.pack("<Q", len(head)), head, *views]
