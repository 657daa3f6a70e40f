"""The DumpData header schema (formats.md §2.2-2.4), built at import with the protobuf library.

No generated ``_pb2`` module and no protoc: a ``FileDescriptorProto`` of package
``toolkit.dumpdata`` with every field number of formats.md §2.2 is added to a private
``DescriptorPool`` and the message classes come from ``message_factory.GetMessageClass``. The
same schema ships as text in ``dump_data.proto`` next to this module for users' own tools
(a test checks the two agree).
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.resources import files
from types import MappingProxyType
from typing import Any

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = [
    "DTYPE_TO_ENUM",
    "ENUM_TO_DTYPE",
    "FORMATS",
    "FORMAT_TO_ENUM",
    "OUTPUT_DATA_TYPES",
    "DumpData",
    "OpAttr",
    "OpBuffer",
    "OpInput",
    "OpOutput",
    "OriginalOp",
    "Shape",
    "Workspace",
    "data_type_for",
    "dtype_for",
    "format_enum",
    "format_name",
    "proto_text",
]

PACKAGE = "toolkit.dumpdata"
FILE_NAME = "dump_data.proto"

OUTPUT_DATA_TYPES: Mapping[int, str] = MappingProxyType({
    0: "DT_UNDEFINED", 1: "DT_FLOAT", 2: "DT_FLOAT16", 3: "DT_INT8", 4: "DT_UINT8",
    5: "DT_INT16", 6: "DT_UINT16", 7: "DT_INT32", 8: "DT_INT64", 9: "DT_UINT32",
    10: "DT_UINT64", 11: "DT_BOOL", 12: "DT_DOUBLE", 13: "DT_STRING", 14: "DT_DUAL_SUB_INT8",
    15: "DT_DUAL_SUB_UINT8", 16: "DT_COMPLEX64", 17: "DT_COMPLEX128", 18: "DT_QINT8",
    19: "DT_QINT16", 20: "DT_QINT32", 21: "DT_QUINT8", 22: "DT_QUINT16", 23: "DT_RESOURCE",
    24: "DT_STRING_REF", 25: "DT_DUAL", 26: "DT_VARIANT", 27: "DT_BF16", 28: "DT_INT4",
    29: "DT_UINT1", 30: "DT_INT2", 31: "DT_UINT2", 32: "DT_COMPLEX32", 33: "DT_HIFLOAT8",
    34: "DT_FLOAT8_E5M2", 35: "DT_FLOAT8_E4M3FN", 36: "DT_FLOAT8_E8M0", 37: "DT_FLOAT6_E3M2",
    38: "DT_FLOAT6_E2M3", 39: "DT_FLOAT4_E2M1", 40: "DT_FLOAT4_E1M2",
})
"""``OutputDataType`` (formats.md §2.3): the dump-header numbering, not ``ge::DataType``."""

FORMATS: Mapping[int, str] = MappingProxyType({
    0: "NCHW", 1: "NHWC", 2: "ND", 3: "NC1HWC0", 4: "FRACTAL_Z", 5: "NC1C0HWPAD", 6: "NHWC1C0",
    7: "FSR_NCHW", 8: "FRACTAL_DECONV", 9: "C1HWNC0", 10: "FRACTAL_DECONV_TRANSPOSE",
    11: "FRACTAL_DECONV_SP_STRIDE_TRANS", 12: "NC1HWC0_C04", 13: "FRACTAL_Z_C04", 14: "CHWN",
    15: "FRACTAL_DECONV_SP_STRIDE8_TRANS", 16: "HWCN", 17: "NC1KHKWHWC0", 18: "BN_WEIGHT",
    19: "FILTER_HWCK", 20: "HASHTABLE_LOOKUP_LOOKUPS", 21: "HASHTABLE_LOOKUP_KEYS",
    22: "HASHTABLE_LOOKUP_VALUE", 23: "HASHTABLE_LOOKUP_OUTPUT", 24: "HASHTABLE_LOOKUP_HITS",
    25: "C1HWNCoC0", 26: "MD", 27: "NDHWC", 28: "FRACTAL_ZZ", 29: "FRACTAL_NZ", 30: "NCDHW",
    31: "DHWCN", 32: "NDC1HWC0", 33: "FRACTAL_Z_3D", 34: "CN", 35: "NC", 36: "DHWNC",
    37: "FRACTAL_Z_3D_TRANSPOSE", 38: "FRACTAL_ZN_LSTM", 39: "FRACTAL_Z_G", 40: "RESERVED",
    41: "ALL", 42: "NULL", 43: "ND_RNN_BIAS", 44: "FRACTAL_ZN_RNN", 45: "YUV", 46: "YUV_A",
    47: "NCL", 48: "FRACTAL_Z_WINO", 49: "C1HWC0", 255: "MAX",
})
"""``OutputFormat`` (formats.md §2.4); the schema names carry a ``FORMAT_`` prefix."""

FORMAT_TO_ENUM: Mapping[str, int] = MappingProxyType({v: k for k, v in FORMATS.items()})

DTYPE_TO_ENUM: Mapping[str, int] = MappingProxyType({
    "float32": 1, "float16": 2, "int8": 3, "uint8": 4, "int16": 5, "uint16": 6, "int32": 7,
    "int64": 8, "uint32": 9, "uint64": 10, "bool": 11, "float64": 12, "complex64": 16,
    "complex128": 17, "bfloat16": 27, "float8_e5m2": 34, "float8_e4m3fn": 35,
})
"""numpy / ml_dtypes dtype name -> ``OutputDataType`` value."""

ENUM_TO_DTYPE: Mapping[int, str] = MappingProxyType(
    {**{v: k for k, v in DTYPE_TO_ENUM.items()}, 0: "int8", 23: "int64"}
)
"""``OutputDataType`` value -> numpy dtype name the reader decodes to (UNDEFINED as int8 and
RESOURCE as int64, like the reference reader)."""

# (message, [(number, name, type, label, type_name)]); label 1 optional, 3 repeated.
_T = descriptor_pb2.FieldDescriptorProto
_MESSAGES: tuple[tuple[str, tuple[tuple[int, str, int, int, str], ...]], ...] = (
    ("OriginalOp", (
        (1, "name", _T.TYPE_STRING, 1, ""),
        (2, "output_index", _T.TYPE_UINT32, 1, ""),
        (3, "data_type", _T.TYPE_ENUM, 1, "OutputDataType"),
        (4, "format", _T.TYPE_ENUM, 1, "OutputFormat"),
    )),
    ("Shape", ((1, "dim", _T.TYPE_UINT64, 3, ""),)),
    ("DimRange", (
        (1, "dim_start", _T.TYPE_UINT64, 1, ""),
        (2, "dim_end", _T.TYPE_UINT64, 1, ""),
    )),
    ("OpOutput", (
        (1, "data_type", _T.TYPE_ENUM, 1, "OutputDataType"),
        (2, "format", _T.TYPE_ENUM, 1, "OutputFormat"),
        (3, "shape", _T.TYPE_MESSAGE, 1, "Shape"),
        (4, "original_op", _T.TYPE_MESSAGE, 1, "OriginalOp"),
        (5, "data", _T.TYPE_BYTES, 1, ""),
        (6, "size", _T.TYPE_UINT64, 1, ""),
        (7, "original_shape", _T.TYPE_MESSAGE, 1, "Shape"),
        (8, "sub_format", _T.TYPE_INT32, 1, ""),
        (9, "address", _T.TYPE_UINT64, 1, ""),
        (10, "dim_range", _T.TYPE_MESSAGE, 3, "DimRange"),
        (11, "offset", _T.TYPE_UINT64, 1, ""),
    )),
    ("OpInput", (
        (1, "data_type", _T.TYPE_ENUM, 1, "OutputDataType"),
        (2, "format", _T.TYPE_ENUM, 1, "OutputFormat"),
        (3, "shape", _T.TYPE_MESSAGE, 1, "Shape"),
        (4, "data", _T.TYPE_BYTES, 1, ""),
        (5, "size", _T.TYPE_UINT64, 1, ""),
        (6, "original_shape", _T.TYPE_MESSAGE, 1, "Shape"),
        (7, "sub_format", _T.TYPE_INT32, 1, ""),
        (8, "address", _T.TYPE_UINT64, 1, ""),
        (9, "offset", _T.TYPE_UINT64, 1, ""),
        (10, "arg_index", _T.TYPE_UINT32, 1, ""),
        (11, "input_type", _T.TYPE_UINT32, 1, ""),
    )),
    ("OpBuffer", (
        (1, "buffer_type", _T.TYPE_ENUM, 1, "BufferType"),
        (2, "data", _T.TYPE_BYTES, 1, ""),
        (3, "size", _T.TYPE_UINT64, 1, ""),
    )),
    ("OpAttr", (
        (1, "name", _T.TYPE_STRING, 1, ""),
        (2, "value", _T.TYPE_STRING, 1, ""),
    )),
    ("Workspace", (
        (1, "type", _T.TYPE_ENUM, 1, "SpaceType"),
        (2, "data", _T.TYPE_BYTES, 1, ""),
        (3, "size", _T.TYPE_UINT64, 1, ""),
    )),
    ("DumpData", (
        (1, "version", _T.TYPE_STRING, 1, ""),
        (2, "dump_time", _T.TYPE_UINT64, 1, ""),
        (3, "output", _T.TYPE_MESSAGE, 3, "OpOutput"),
        (4, "input", _T.TYPE_MESSAGE, 3, "OpInput"),
        (5, "buffer", _T.TYPE_MESSAGE, 3, "OpBuffer"),
        (6, "op_name", _T.TYPE_STRING, 1, ""),
        (7, "attr", _T.TYPE_MESSAGE, 3, "OpAttr"),
        (8, "space", _T.TYPE_MESSAGE, 3, "Workspace"),
        (9, "dfx_message", _T.TYPE_STRING, 1, ""),
    )),
)

_ENUMS: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = (
    ("OutputDataType", tuple((name, num) for num, name in OUTPUT_DATA_TYPES.items())),
    ("OutputFormat", tuple(("FORMAT_" + name, num) for num, name in FORMATS.items())),
    ("BufferType", (("L1", 0),)),
    ("SpaceType", (("LOG", 0),)),
)

_MESSAGE_FIELDS: Mapping[str, Mapping[str, int]] = MappingProxyType({
    message: MappingProxyType({name: number for number, name, *_ in fields})
    for message, fields in _MESSAGES
})
"""message -> field name -> field number (what the tests compare with the .proto text)."""


def _file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(name=FILE_NAME, package=PACKAGE, syntax="proto3")
    for enum_name, values in _ENUMS:
        enum = fd.enum_type.add(name=enum_name)
        for value_name, number in values:
            enum.value.add(name=value_name, number=number)
    for message_name, fields in _MESSAGES:
        message = fd.message_type.add(name=message_name)
        for number, name, ftype, label, type_name in fields:
            field = message.field.add(name=name, number=number, type=ftype, label=label)
            if type_name:
                field.type_name = f".{PACKAGE}.{type_name}"
    return fd


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file_descriptor())


def _cls(name: str) -> Any:
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"{PACKAGE}.{name}"))


DumpData: Any = _cls("DumpData")
OpInput: Any = _cls("OpInput")
OpOutput: Any = _cls("OpOutput")
OpBuffer: Any = _cls("OpBuffer")
OpAttr: Any = _cls("OpAttr")
Workspace: Any = _cls("Workspace")
Shape: Any = _cls("Shape")
OriginalOp: Any = _cls("OriginalOp")


def data_type_for(dtype: np.dtype[Any] | str) -> int:
    """The ``OutputDataType`` value of a numpy / ml_dtypes dtype (``bfloat16`` -> 27)."""
    name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    try:
        return DTYPE_TO_ENUM[name]
    except KeyError:
        from geplug.errors import DumpError

        raise DumpError(
            f"dtype {name!r} has no dump data type; dumpable dtypes: "
            + ", ".join(sorted(DTYPE_TO_ENUM))
        ) from None


def dtype_for(data_type: int) -> np.dtype[Any] | None:
    """The numpy dtype a reader decodes ``data_type`` to, or ``None`` when unsupported."""
    name = ENUM_TO_DTYPE.get(int(data_type))
    if name is None:
        return None
    if name in ("bfloat16", "float8_e5m2", "float8_e4m3fn"):
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def format_enum(name: str) -> int:
    """The ``OutputFormat`` value of a format name (``ND`` -> 2; ``FORMAT_ND`` accepted)."""
    key = name[len("FORMAT_"):] if name.startswith("FORMAT_") else name
    try:
        return FORMAT_TO_ENUM[key]
    except KeyError:
        from geplug.errors import DumpError

        raise DumpError(
            f"format {name!r} is not a dump OutputFormat (e.g. ND, NCHW, "
            "NC1HWC0, FRACTAL_NZ)"
        ) from None


def format_name(value: int) -> str:
    """The name of an ``OutputFormat`` value (``2`` -> ``ND``; unknown -> ``FORMAT_<n>``)."""
    return FORMATS.get(int(value), f"FORMAT_{int(value)}")


def proto_text() -> str:
    """The shipped ``dump_data.proto`` text (for users' tools; equivalent to this schema)."""
    return (files("geplug.dump") / FILE_NAME).read_text(encoding="utf-8")
