"""Every dtype the simulator produces survives write + read bit for bit; the size rule holds."""

from __future__ import annotations

import os
import struct
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from geplug.dump import schema
from geplug.dump.reader import iter_dump_tree, read_dump

DTYPES = ["float32", "float16", "bfloat16", "int32", "int64", "int8", "uint8", "bool",
          "float64", "int16", "uint16", "uint32", "uint64", "complex64"]


def _sample(dtype: str, shape: tuple[int, ...] = (3, 5)) -> np.ndarray:
    rng = np.random.default_rng(7)
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype == "bfloat16":
        return (rng.standard_normal(shape) * 100).astype(ml_dtypes.bfloat16)
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    arr = (rng.standard_normal(shape) * 1000).astype(dtype)
    specials = [np.inf, -np.inf, np.nan]
    for i in range(min(arr.size, 3)):
        arr.flat[i] = specials[i]
    return arr


def _size_rule_holds(path: str) -> bool:
    with open(path, "rb") as fh:
        blob = fh.read()
    (header_len,) = struct.unpack_from("<Q", blob, 0)
    header = schema.DumpData()
    header.ParseFromString(blob[8: 8 + header_len])
    payload = sum(e.size for f in (header.input, header.output, header.buffer, header.space)
                  for e in f)
    return len(blob) == 8 + header_len + payload


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_gives_identical_arrays(dtype: str, make_system: Any,
                                           make_event: Any) -> None:
    system = make_system(enable_dump=True, dump_mode="all")
    src_in, src_out = _sample(dtype, (2, 3, 4)), _sample(dtype, (7,))
    (path,) = system.emit_dump(make_event(system, inputs=[src_in], outputs=[src_out]))[0]
    dump = read_dump(path)
    got_in, got_out = dump.inputs[0].array, dump.outputs[0].array
    assert got_in is not None and got_out is not None
    assert got_in.dtype == src_in.dtype and got_out.dtype == src_out.dtype
    assert got_in.shape == src_in.shape and got_out.shape == src_out.shape
    assert got_in.tobytes() == src_in.tobytes() and got_out.tobytes() == src_out.tobytes()


@pytest.mark.parametrize("dtype", DTYPES)
def test_header_records_dtype_format_shape_and_size(dtype: str, make_system: Any,
                                                    make_event: Any) -> None:
    system = make_system(enable_dump=True)
    arr = _sample(dtype, (4, 6))
    (path,) = system.emit_dump(make_event(system, outputs=[arr]))[0]
    out = read_dump(path).header.output[0]
    assert out.data_type == schema.data_type_for(dtype)
    assert out.format == 2 and list(out.shape.dim) == [4, 6] and out.size == arr.nbytes
    assert out.data == b""


def test_scalar_and_empty_tensors_round_trip(make_system: Any, make_event: Any) -> None:
    system = make_system(enable_dump=True, dump_mode="all")
    scalar, empty = np.array(3.5, np.float32), np.zeros((0, 4), np.float16)
    (path,) = system.emit_dump(make_event(system, inputs=[scalar], outputs=[empty]))[0]
    dump = read_dump(path)
    assert dump.inputs[0].shape == () and float(dump.inputs[0].array) == 3.5  # type: ignore[arg-type]
    assert dump.outputs[0].array is not None and dump.outputs[0].array.shape == (0, 4)


def test_payload_is_inputs_then_outputs_in_order(make_system: Any, make_event: Any) -> None:
    system = make_system(enable_dump=True, dump_mode="all")
    ins = [np.full(3, 1, np.int32), np.full(2, 2, np.int32)]
    outs = [np.full(4, 3, np.int32)]
    (path,) = system.emit_dump(make_event(system, inputs=ins, outputs=outs))[0]
    dump = read_dump(path)
    offsets = [t.offset for t in dump.tensors]
    assert offsets == sorted(offsets)
    with open(path, "rb") as fh:
        blob = fh.read()
    payload = np.frombuffer(blob[8 + dump.header_len:], np.int32)
    assert payload.tolist() == [1, 1, 1, 2, 2, 3, 3, 3, 3]


def test_header_version_time_and_op_name(make_system: Any, make_event: Any) -> None:
    system = make_system(enable_dump=True)
    (path,) = system.emit_dump(make_event(system, op="scope/a.b c", ts=1749451765349986,
                                          outputs=[np.ones(1, np.float32)]))[0]
    header = read_dump(path).header
    assert header.version == "2.0" and header.dump_time == 1749451765349986
    assert header.op_name == "scope/a.b c"


def test_file_size_rule_holds_for_every_file(make_system: Any, make_event: Any) -> None:
    system = make_system(enable_dump=True, dump_mode="all")
    for i, dtype in enumerate(DTYPES):
        system.emit_dump(make_event(system, op=f"op{i}", inputs=[_sample(dtype)],
                                    outputs=[_sample(dtype, (9,)), _sample(dtype, ())]))
    paths = [e.path for e in iter_dump_tree(system.config.dump_root)]
    assert len(paths) == len(DTYPES)
    assert all(_size_rule_holds(p) for p in paths)
    assert not [f for _, _, fs in os.walk(system.config.dump_root) for f in fs
                if f.startswith(".")]
