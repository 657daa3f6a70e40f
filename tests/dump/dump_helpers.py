"""Shared helpers of the dump tests: a product that needs no installed plugin, events, paths.

The dump writers read only a few declaration fields (``dump.ffts_plus_names``,
``dump.overflow_mode``), so the tests build their product from geplug's own minimal sample
declaration; they pass in every tox environment, the core-only one included.
"""

from __future__ import annotations

import functools
import itertools
import os
import tempfile
from typing import Any

import attrs
import numpy as np

from geplug.events import DumpEvent, OpRecord, RunInfo, TensorRecord
from geplug.products import build_product, read_declaration
from geplug.products.schema import Product
from geplug.testing.samples import minimal_toml

__all__ = ["BASE_TS", "all_files", "dump_event", "sample_product", "tensor"]

BASE_TS = 1749451765349986


@functools.lru_cache(maxsize=4)
def sample_product(*, ffts_plus: bool = False, overflow_mode: str = "inf_nan") -> Product:
    """A product from the minimal sample declaration with the given dump behaviour."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "capabilities.toml")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(minimal_toml("dump_test_card"))
        product = build_product(read_declaration(path))
    dump = attrs.evolve(product.dump, ffts_plus_names=ffts_plus, overflow_mode=overflow_mode)
    return attrs.evolve(product, dump=dump)


def tensor(array: Any, name: str = "t", fmt: str = "ND") -> TensorRecord:
    """A TensorRecord of ``array``."""
    arr = np.asarray(array)
    return TensorRecord(name=name, array=arr, dtype=arr.dtype.name, format=fmt)


_tasks = itertools.count(1)


def dump_event(
    system: Any,
    *,
    op: str = "layer1/MatMul",
    op_type: str = "MatMulV2",
    inputs: Any = (),
    outputs: Any = (),
    step: int = 0,
    task_id: int | None = None,
    kind: str = "data",
    model_name: str = "ge_default_20240125153322_41",
    model_id: int = 6,
    ts: int | None = None,
    **op_fields: Any,
) -> DumpEvent:
    """A synthetic DumpEvent (arrays are wrapped into TensorRecords)."""
    task = task_id if task_id is not None else next(_tasks)
    ins: Any = tuple(t if isinstance(t, TensorRecord) else tensor(t, f"in{i}")
                     for i, t in enumerate(inputs))
    outs: Any = tuple(t if isinstance(t, TensorRecord) else tensor(t, f"out{i}")
                      for i, t in enumerate(outputs))
    extra = {k: op_fields.pop(k) for k in ("phase", "workspace", "tiling", "message")
             if k in op_fields}
    run_extra = {k: op_fields.pop(k) for k in ("dynamic_shape",) if k in op_fields}
    return DumpEvent(
        kind=kind,  # type: ignore[arg-type]
        run=RunInfo(system=system, model_name=model_name, model_id=model_id, step=step,
                    device_id=system.config.device_id, **run_extra),
        op=OpRecord(name=op, op_type=op_type, task_id=task, **op_fields),
        inputs=ins,
        outputs=outs,
        timestamp_us=ts if ts is not None else BASE_TS + task * 10,
        **extra,
    )


def all_files(root: str) -> list[str]:
    """Every file under ``root``, sorted."""
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)


# -- an independent reader of the on-disk format, written from formats.md §2.1-2.2 and §3.1 ----
# (no geplug.dump import: it checks the writer against the reference, not against our reader)

Wire = dict[int, list[Any]]
"""protobuf field number -> values in wire order (varints as int, length-delimited as bytes)."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def wire_fields(buf: bytes) -> Wire:
    """Decode one protobuf message's fields from the wire (wire types 0, 1, 2, 5 only)."""
    fields: Wire = {}
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire_type = key >> 3, key & 7
        value: Any
        if wire_type == 0:
            value, pos = _varint(buf, pos)
        elif wire_type == 2:
            length, pos = _varint(buf, pos)
            value, pos = buf[pos: pos + length], pos + length
        elif wire_type == 1:
            value, pos = int.from_bytes(buf[pos: pos + 8], "little"), pos + 8
        elif wire_type == 5:
            value, pos = int.from_bytes(buf[pos: pos + 4], "little"), pos + 4
        else:
            raise ValueError(f"unexpected wire type {wire_type}")
        fields.setdefault(number, []).append(value)
    return fields


def wire_dims(shape_message: bytes) -> list[int]:
    """``Shape.dim`` (field 1, repeated uint64, packed or not) of an encoded Shape."""
    dims: list[int] = []
    for value in wire_fields(shape_message).get(1, []):
        if isinstance(value, bytes):  # packed
            pos = 0
            while pos < len(value):
                dim, pos = _varint(value, pos)
                dims.append(dim)
        else:
            dims.append(value)
    return dims


def split_dump_file(path: str) -> tuple[int, Wire, bytes]:
    """(header_len, top-level header fields, payload) of a §2.1 file."""
    with open(path, "rb") as fh:
        blob = fh.read()
    header_len = int.from_bytes(blob[:8], "little")
    return header_len, wire_fields(blob[8: 8 + header_len]), blob[8 + header_len:]
