"""Byte-level conformance of written files with formats.md §2-4, checked by an independent
wire decoder (``dump_helpers.wire_fields``) and the reference tables copied below - not by
geplug's own reader."""

from __future__ import annotations

import struct
from typing import Any

import ml_dtypes
import numpy as np
from dump_helpers import split_dump_file, wire_dims, wire_fields

# formats.md §2.2 field numbers
DD_VERSION, DD_TIME, DD_OUTPUT, DD_INPUT, DD_BUFFER, DD_OP_NAME, DD_ATTR, DD_SPACE, DD_DFX = (
    1, 2, 3, 4, 5, 6, 7, 8, 9)
IN_DTYPE, IN_FORMAT, IN_SHAPE, IN_DATA, IN_SIZE, IN_ORIG_SHAPE, IN_ADDRESS, IN_ARG_INDEX = (
    1, 2, 3, 4, 5, 6, 8, 10)
OUT_DTYPE, OUT_FORMAT, OUT_SHAPE, OUT_ORIGINAL_OP, OUT_DATA, OUT_SIZE, OUT_ORIG_SHAPE = (
    1, 2, 3, 4, 5, 6, 7)
ORIG_NAME, ORIG_INDEX, ORIG_DTYPE, ORIG_FORMAT = 1, 2, 3, 4
SPACE_TYPE, SPACE_SIZE = 1, 3
# formats.md §2.3 / §2.4 values
DT = {"float32": 1, "float16": 2, "int8": 3, "uint8": 4, "int16": 5, "uint16": 6, "int32": 7,
      "int64": 8, "uint32": 9, "uint64": 10, "bool": 11, "float64": 12, "bfloat16": 27}
FMT = {"NCHW": 0, "NHWC": 1, "ND": 2, "NC1HWC0": 3, "FRACTAL_NZ": 29}

IN0 = np.arange(6, dtype=np.float16).reshape(2, 3)
IN1 = np.array([1.5, -2.25, 3.0, 1e30], ml_dtypes.bfloat16)
OUT0 = np.array([-(2**40), 0, 2**62], np.int64)
OUT1 = np.array([True, False, True, True, False])


def _data_file(make_system: Any, make_event: Any, dump_tensor: Any) -> str:
    system = make_system(enable_dump=True, dump_mode="all")
    event = make_event(system, op="block1/conv.1", op_type="Conv2D", task_id=45,
                       ts=1675157077183551, inputs=[dump_tensor(IN0, "a", "NCHW"), IN1],
                       outputs=[OUT0, OUT1])
    ((path,),) = system.emit_dump(event)
    return str(path)


def _entries(fields: dict[int, list[Any]], number: int) -> list[dict[int, list[Any]]]:
    return [wire_fields(raw) for raw in fields.get(number, [])]


def test_header_top_level_fields_carry_the_reference_numbers(make_system: Any, make_event: Any,
                                                             dump_tensor: Any) -> None:
    _, top, _ = split_dump_file(_data_file(make_system, make_event, dump_tensor))
    assert top[DD_VERSION] == [b"2.0"]
    assert top[DD_TIME] == [1675157077183551]
    assert top[DD_OP_NAME] == [b"block1/conv.1"]
    assert len(top[DD_INPUT]) == 2 and len(top[DD_OUTPUT]) == 2
    assert DD_BUFFER not in top and DD_SPACE not in top and DD_DFX not in top


def test_input_entries_use_dump_header_dtype_and_format_numbers(make_system: Any,
                                                                 make_event: Any,
                                                                 dump_tensor: Any) -> None:
    _, top, _ = split_dump_file(_data_file(make_system, make_event, dump_tensor))
    in0, in1 = _entries(top, DD_INPUT)
    assert in0[IN_DTYPE] == [DT["float16"]] and in1[IN_DTYPE] == [DT["bfloat16"]]
    # NCHW is 0, which proto3 leaves off the wire
    assert IN_FORMAT not in in0 and FMT["NCHW"] == 0 and in1[IN_FORMAT] == [FMT["ND"]]
    assert wire_dims(in0[IN_SHAPE][0]) == [2, 3] and wire_dims(in1[IN_SHAPE][0]) == [4]
    assert wire_dims(in0[IN_ORIG_SHAPE][0]) == [2, 3]
    assert in0[IN_SIZE] == [IN0.nbytes] and in1[IN_SIZE] == [IN1.nbytes]
    assert IN_DATA not in in0 and IN_DATA not in in1  # data stays empty on disk
    assert in0[IN_ADDRESS][0] != in1[IN_ADDRESS][0]


def test_output_entries_carry_size_shape_and_original_op(make_system: Any, make_event: Any,
                                                         dump_tensor: Any) -> None:
    _, top, _ = split_dump_file(_data_file(make_system, make_event, dump_tensor))
    out0, out1 = _entries(top, DD_OUTPUT)
    assert out0[OUT_DTYPE] == [DT["int64"]] and out1[OUT_DTYPE] == [DT["bool"]]
    assert out0[OUT_FORMAT] == [FMT["ND"]]
    assert out0[OUT_SIZE] == [24] and out1[OUT_SIZE] == [5]
    assert wire_dims(out0[OUT_SHAPE][0]) == [3] and wire_dims(out1[OUT_ORIG_SHAPE][0]) == [5]
    assert OUT_DATA not in out0
    original = wire_fields(out1[OUT_ORIGINAL_OP][0])
    assert original[ORIG_NAME] == [b"block1/conv.1"] and original[ORIG_INDEX] == [1]
    assert original[ORIG_DTYPE] == [DT["bool"]] and original[ORIG_FORMAT] == [FMT["ND"]]


def test_payload_is_inputs_then_outputs_with_no_padding(make_system: Any, make_event: Any,
                                                        dump_tensor: Any) -> None:
    _, _, payload = split_dump_file(_data_file(make_system, make_event, dump_tensor))
    expected = IN0.tobytes() + IN1.tobytes() + OUT0.tobytes() + OUT1.tobytes()
    assert payload == expected


def test_file_size_is_exactly_8_plus_header_plus_sizes(make_system: Any, make_event: Any,
                                                       dump_tensor: Any) -> None:
    path = _data_file(make_system, make_event, dump_tensor)
    header_len, top, payload = split_dump_file(path)
    sizes = sum(e[IN_SIZE][0] for e in _entries(top, DD_INPUT)) + sum(
        e[OUT_SIZE][0] for e in _entries(top, DD_OUTPUT))
    with open(path, "rb") as fh:
        assert len(fh.read()) == 8 + header_len + sizes == 8 + header_len + len(payload)


def _opdebug(make_system: Any, make_event: Any, **op: Any) -> tuple[dict[int, list[Any]], bytes]:
    import warnings

    system = make_system(enable_dump_debug=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (paths,) = system.emit_dump(make_event(
            system, op="net/fc", task_id=17, model_id=6, inputs=[np.ones(2, np.float16)],
            outputs=[np.array([np.inf, 1], np.float16)], **op))
    path = next(p for p in paths if "Opdebug.Node_OpDebug." in p)
    _, top, payload = split_dump_file(path)
    return top, payload


def test_opdebug_file_holds_the_new_layout_record_as_output_0(make_system: Any,
                                                              make_event: Any) -> None:
    top, payload = _opdebug(make_system, make_event)
    assert top[DD_OP_NAME] == [b"Node_OpDebug"] and DD_INPUT not in top
    (out,) = _entries(top, DD_OUTPUT)
    assert out[OUT_SIZE] == [len(payload)]
    magic, version, valid, acc, _reserved, data_len = struct.unpack_from("<6I", payload)
    assert (magic, version, valid, acc) == (0x5A5A5A5A, 0, 1, 0)  # AIC
    assert data_len == 88 and len(payload) == 24 + data_len
    (model_id, stream_id, task_id, task_type, context_id, thread_id, _pc, _para, _core, _block,
     status) = struct.unpack_from("<11Q", payload, 24)
    assert (model_id, stream_id, task_id, task_type) == (6, 0, 17, 0)
    assert context_id == thread_id == 65535 and status != 0


def test_opdebug_record_of_an_ai_cpu_op_has_the_aicpu_fields(make_system: Any,
                                                             make_event: Any) -> None:
    _, payload = _opdebug(make_system, make_event, engine="AI_CPU", task_type="AI_CPU")
    acc, _reserved, data_len = struct.unpack_from("<3I", payload, 12)
    assert acc == 2 and data_len == 64
    model_id, stream_id, task_id, task_type, *_, status = struct.unpack_from("<8Q", payload, 24)
    assert (model_id, stream_id, task_id, task_type) == (6, 0, 17, 1) and status != 0


def test_opdebug_record_of_a_vector_core_op_is_aiv(make_system: Any, make_event: Any) -> None:
    _, payload = _opdebug(make_system, make_event, task_type="AI_VECTOR_CORE")
    assert struct.unpack_from("<I", payload, 12)[0] == 1


def test_exception_dump_carries_arg_index_workspace_and_dfx_message(
    make_system: Any, make_event: Any, tmp_path: Any
) -> None:
    directory = str(tmp_path / "extra-info" / "data-dump" / "0")
    system = make_system(resolved={"exception_dump_level": 2, "exception_dump_dir": directory})
    event = make_event(system, kind="exception", op="blk/Conv", op_type="Conv2D", task_id=3,
                       inputs=[np.ones(2, np.float16), np.ones(3, np.float16)],
                       outputs=[np.zeros(2, np.float32)], workspace=b"\x07" * 64,
                       tiling=b"\x09" * 8)
    ((path,),) = system.emit_dump(event)
    _, top, payload = split_dump_file(path)
    inputs = _entries(top, DD_INPUT)
    assert [e.get(IN_ARG_INDEX, [0])[0] for e in inputs] == [0, 1]
    spaces = _entries(top, DD_SPACE)
    assert [s[SPACE_SIZE][0] for s in spaces] == [64, 8]
    assert all(s.get(SPACE_TYPE, [0]) == [0] for s in spaces)  # LOG = 0
    assert top[DD_DFX][0].startswith(b"[AIC_INFO]")
    assert payload.endswith(b"\x07" * 64 + b"\x09" * 8)
