"""The DumpData schema: field numbers, enum numbering, wire bytes and the shipped .proto."""

from __future__ import annotations

import re

import numpy as np
import pytest

from geplug.dump import schema


def _proto_fields(text: str) -> dict[str, dict[str, int]]:
    fields: dict[str, dict[str, int]] = {}
    for name, body in re.findall(r"message (\w+) \{(.*?)\}", text, re.S):
        fields[name] = {
            m.group(1): int(m.group(2))
            for m in re.finditer(r"^\s*(?:repeated )?\w+ (\w+) = (\d+);", body, re.M)
        }
    return fields


def _proto_enums(text: str) -> dict[str, dict[str, int]]:
    return {
        name: {v: int(n) for v, n in re.findall(r"(\w+) = (\d+);", body)}
        for name, body in re.findall(r"enum (\w+) \{(.*?)\}", text, re.S)
    }


def test_shipped_proto_text_has_the_same_message_fields_as_the_descriptor() -> None:
    assert _proto_fields(schema.proto_text()) == {k: dict(v) for k, v in
                                                  schema._MESSAGE_FIELDS.items()}


def test_shipped_proto_text_has_the_same_enums_as_the_descriptor() -> None:
    enums = _proto_enums(schema.proto_text())
    assert enums["OutputDataType"] == {v: k for k, v in schema.OUTPUT_DATA_TYPES.items()}
    assert enums["OutputFormat"] == {"FORMAT_" + v: k for k, v in schema.FORMATS.items()}
    assert enums["BufferType"] == {"L1": 0} and enums["SpaceType"] == {"LOG": 0}


def test_shipped_proto_declares_package_toolkit_dumpdata_proto3() -> None:
    text = schema.proto_text()
    assert 'syntax = "proto3";' in text and "package toolkit.dumpdata;" in text


def test_dumpdata_field_numbers_follow_the_reference() -> None:
    fields = schema.DumpData.DESCRIPTOR.fields_by_name
    numbers = {name: f.number for name, f in fields.items()}
    assert numbers == {"version": 1, "dump_time": 2, "output": 3, "input": 4, "buffer": 5,
                       "op_name": 6, "attr": 7, "space": 8, "dfx_message": 9}
    assert schema.DumpData.DESCRIPTOR.full_name == "toolkit.dumpdata.DumpData"


def test_input_is_field_4_and_output_field_3_on_the_wire() -> None:
    only_input = schema.DumpData()
    only_input.input.add(size=1)
    only_output = schema.DumpData()
    only_output.output.add(size=1)
    assert only_input.SerializeToString()[0] == (4 << 3) | 2
    assert only_output.SerializeToString()[0] == (3 << 3) | 2


@pytest.mark.parametrize(("dtype", "value"), [
    ("float32", 1), ("float16", 2), ("int8", 3), ("uint8", 4), ("int32", 7), ("int64", 8),
    ("bool", 11), ("float64", 12), ("bfloat16", 27),
])
def test_dtype_enum_uses_the_dump_header_numbering(dtype: str, value: int) -> None:
    assert schema.data_type_for(dtype) == value
    decoded = schema.dtype_for(value)
    assert decoded is not None and decoded.name == dtype


@pytest.mark.parametrize(("name", "value"), [("NCHW", 0), ("ND", 2), ("NC1HWC0", 3),
                                             ("FRACTAL_NZ", 29), ("MAX", 255)])
def test_format_enum_numbering(name: str, value: int) -> None:
    assert schema.format_enum(name) == value
    assert schema.format_name(value) == name


def test_unknown_dtype_is_a_clear_dump_error() -> None:
    from geplug.errors import DumpError

    with pytest.raises(DumpError, match="'str32'"):
        schema.data_type_for("str32")
    with pytest.raises(DumpError, match="has no dump data type"):
        schema.data_type_for(np.dtype("U4"))
