"""Read dump files and trees: headers, tensors as numpy arrays, overflow records.

Needs no system. A file is parsed per formats.md §2.1 (bfloat16 through ml_dtypes, so a
round trip is exact); a truncated or foreign file raises a :class:`DumpError` naming it. A
tree is walked for files whose names match the reader regex of formats.md §2.6 or are listed
in a ``mapping.csv`` (formats.md §2.8); the layout levels of formats.md §2.7 give each file's
time, device, model, model id and step.
"""

from __future__ import annotations

import csv
import math
import os
import re
import struct
from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np

from geplug.dump import schema
from geplug.dump.fileio import MAPPING_FILE
from geplug.dump.naming import DumpName, parse_dump_name
from geplug.dump.opdebug import OverflowRecord, parse_overflow_record
from geplug.errors import DumpError
from geplug.limits import MAX_CONFIG_BYTES, decode_utf8, iter_csv, read_bytes

__all__ = [
    "DumpEntry",
    "DumpFile",
    "DumpTensor",
    "OverflowRecord",
    "StatsFile",
    "iter_dump_tree",
    "iter_stats_files",
    "parse_overflow_record",
    "read_dump",
    "read_header",
    "read_mapping",
]

MAX_MAPPING_BYTES = 16 * MAX_CONFIG_BYTES
"""Largest ``mapping.csv`` read (16 MiB: ~100,000 long names)."""
_LAYOUT_LEVELS = ("time", "device_id", "model_name", "model_id", "step")
EXCEPTION_DIR_NAME = "data-dump"
"""The exception dump directory ``{root}/extra-info/data-dump/{device_id}/`` (formats.md §4)."""
_STATS_FILE = re.compile(r"^statistic(\.[0-9]+)?\.csv$")
"""``statistic.csv`` (or ``statistic.{k}.csv`` of a second writer) of dump_data = "stats"."""


@attrs.frozen(kw_only=True)
class DumpTensor:
    """One tensor of a dump file with its header metadata."""

    kind: str
    """``input``, ``output``, ``buffer`` or ``space``."""
    index: int
    data_type: int
    """The ``OutputDataType`` value (formats.md §2.3)."""
    format: str
    shape: tuple[int, ...]
    original_shape: tuple[int, ...]
    size: int
    offset: int
    """Byte offset of the payload in the file."""
    array: np.ndarray | None = attrs.field(eq=False, repr=False)
    """The decoded array (``None`` for an unsupported data type); spaces are raw uint8."""

    @property
    def dtype(self) -> str:
        """The numpy dtype name (or ``DT_*`` name when it cannot be decoded)."""
        if self.array is not None:
            return self.array.dtype.name
        return schema.OUTPUT_DATA_TYPES.get(self.data_type, str(self.data_type))

    @property
    def label(self) -> str:
        """``input.0``, ``output.1``, ..."""
        return f"{self.kind}.{self.index}"


@attrs.frozen(kw_only=True)
class DumpFile:
    """A parsed dump file."""

    path: str
    name: str
    """The original file name (resolved through mapping.csv)."""
    header: Any = attrs.field(eq=False, repr=False)
    """The ``toolkit.dumpdata.DumpData`` message."""
    header_len: int
    tensors: tuple[DumpTensor, ...]
    file_size: int

    @property
    def op_name(self) -> str:
        """The full op name from the header."""
        return str(self.header.op_name)

    @property
    def dump_time(self) -> int:
        """µs16 timestamp from the header."""
        return int(self.header.dump_time)

    @property
    def inputs(self) -> tuple[DumpTensor, ...]:
        """Input tensors in order."""
        return tuple(t for t in self.tensors if t.kind == "input")

    @property
    def outputs(self) -> tuple[DumpTensor, ...]:
        """Output tensors in order."""
        return tuple(t for t in self.tensors if t.kind == "output")

    @property
    def spaces(self) -> tuple[DumpTensor, ...]:
        """Workspace / tiling entries (exception dumps)."""
        return tuple(t for t in self.tensors if t.kind == "space")

    @property
    def parsed_name(self) -> DumpName | None:
        """The fields of the file name, when it follows formats.md §2.6."""
        return parse_dump_name(self.name)

    def overflow_record(self) -> OverflowRecord | None:
        """The overflow record of an ``Opdebug.Node_OpDebug`` file, else ``None``."""
        if self.op_name != "Node_OpDebug" or not self.outputs:
            return None
        arr = self.outputs[0].array
        if arr is None:
            return None
        return parse_overflow_record(arr.tobytes(), path=self.path)

    def header_json(self) -> dict[str, Any]:
        """The header as CANN's JSON view (formats.md §2.5): original field names, enums as
        integers, defaults printed, uint64 as strings."""
        from google.protobuf import json_format

        return json_format.MessageToDict(
            self.header,
            preserving_proto_field_name=True,
            use_integers_for_enums=True,
            **_defaults_kwarg(),
        )


def _defaults_kwarg() -> dict[str, Any]:
    import inspect

    from google.protobuf import json_format

    params = inspect.signature(json_format.MessageToDict).parameters
    if "always_print_fields_with_no_presence" in params:
        return {"always_print_fields_with_no_presence": True}
    return {"including_default_value_fields": True}  # pragma: no cover - older protobuf


def read_mapping(directory: str) -> dict[str, str]:
    """``mapping.csv`` of ``directory`` as {numeric name: original name} (empty if none)."""
    path = os.path.join(directory, MAPPING_FILE)
    if not os.path.isfile(path):
        return {}
    mapping: dict[str, str] = {}
    data = read_bytes(path, limit=MAX_MAPPING_BYTES, what="dump name mapping",
                      fail=lambda m: DumpError(m, path=path))
    text = decode_utf8(data, path=path, what="dump name mapping",
                       fail=lambda m: DumpError(m, path=path))
    try:
        for row in csv.reader(text.splitlines()):
            if len(row) >= 2:
                mapping[row[0].strip()] = row[1].strip()
    except csv.Error as exc:
        raise DumpError(f"dump name mapping {path!r} is not a readable CSV file: {exc}",
                        path=path) from None
    return mapping


def _decode(kind: str, index: int, entry: Any, data: memoryview, offset: int,
            path: str) -> DumpTensor:
    size = int(entry.size)
    shape = tuple(int(d) for d in entry.shape.dim) if kind in ("input", "output") else ()
    original = (
        tuple(int(d) for d in entry.original_shape.dim) if kind in ("input", "output") else ()
    )
    raw = data[offset: offset + size]
    array: np.ndarray | None
    if kind in ("input", "output"):
        data_type = int(entry.data_type)
        dtype = schema.dtype_for(data_type)
        if dtype is None:
            array = None
        else:
            count = math.prod(shape) if shape else size // max(dtype.itemsize, 1)
            if count * dtype.itemsize > size:
                raise DumpError(
                    f"dump file {path!r}: {kind}[{index}] shape {list(shape)} of "
                    f"{dtype.name} needs {count * dtype.itemsize} bytes but its size is "
                    f"{size}; the file is corrupt", path=path)
            array = np.frombuffer(raw, dtype=dtype, count=count)
            if shape:
                array = array.reshape(shape)
            elif size == dtype.itemsize:
                array = array.reshape(())  # an empty shape list is a scalar (§2.2)
        fmt = schema.format_name(int(entry.format))
    else:
        data_type = 4
        array = np.frombuffer(raw, dtype=np.uint8)
        fmt = "ND"
    return DumpTensor(kind=kind, index=index, data_type=data_type, format=fmt, shape=shape,
                      original_shape=original, size=size, offset=offset, array=array)


def _check_header(path: str, blob_head: bytes, size: int) -> tuple[Any, int]:
    if size < 8:
        raise DumpError(
            f"dump file {path!r} is truncated: {size} bytes, shorter than the 8-byte header "
            "length", path=path)
    (header_len,) = struct.unpack_from("<Q", blob_head, 0)
    if header_len == 0 or 8 + header_len > size:
        raise DumpError(
            f"{path!r} is not a complete dump file: its header length field says "
            f"{header_len} bytes but the file has {size - 8} after it (truncated, or not a "
            "dump file)", path=path)
    header = schema.DumpData()
    try:
        header.ParseFromString(blob_head[8: 8 + header_len])
    except Exception as exc:
        raise DumpError(
            f"{path!r} is not a dump file: its {header_len}-byte header is not a "
            f"toolkit.dumpdata.DumpData message ({exc})", path=path) from exc
    expected = 8 + header_len + sum(
        int(e.size) for field in (header.input, header.output, header.buffer, header.space)
        for e in field
    )
    if expected != size:
        state = "truncated" if expected > size else "longer than its header says"
        raise DumpError(
            f"dump file {path!r} is {state}: header and tensor sizes add up to {expected} "
            f"bytes, the file has {size}", path=path)
    return header, int(header_len)


def read_header(path: str | os.PathLike[str]) -> tuple[Any, int, int]:
    """(DumpData header, header_len, file size) of a dump file, without its payload.

    Applies the same checks as :func:`read_dump` (size rule included).
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            head = fh.read(8)
            if len(head) == 8:
                (header_len,) = struct.unpack_from("<Q", head, 0)
                if 0 < header_len <= size - 8:
                    head += fh.read(header_len)
    except OSError as exc:
        raise DumpError(f"cannot read dump file {path!r}: {exc.strerror}", path=path) from exc
    header, header_len = _check_header(path, head, size)
    return header, header_len, size


def read_dump(path: str | os.PathLike[str], *, name: str | None = None) -> DumpFile:
    """Parse the dump file at ``path`` (formats.md §2.1).

    ``name`` is its original name when mapping.csv renamed it. Raises :class:`DumpError`
    naming the file when it is truncated, too long or not a dump file.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            blob = fh.read()
    except OSError as exc:
        raise DumpError(f"cannot read dump file {path!r}: {exc.strerror}", path=path) from exc
    size = len(blob)
    header, header_len = _check_header(path, blob, size)
    entries = (
        [("input", e) for e in header.input] + [("output", e) for e in header.output]
        + [("buffer", e) for e in header.buffer] + [("space", e) for e in header.space]
    )
    data = memoryview(blob)
    offset = 8 + header_len
    tensors = []
    counters: dict[str, int] = {}
    for kind, entry in entries:
        index = counters.get(kind, 0)
        counters[kind] = index + 1
        tensors.append(_decode(kind, index, entry, data, offset, path))
        offset += int(entry.size)
    return DumpFile(path=path, name=name or os.path.basename(path), header=header,
                    header_len=header_len, tensors=tuple(tensors), file_size=size)


@attrs.frozen(kw_only=True)
class DumpEntry:
    """A dump file found in a tree, with where it sits in the layout of formats.md §2.7."""

    path: str
    name: str
    """Original file name (resolved through mapping.csv)."""
    parsed: DumpName
    time: str = ""
    device_id: str = ""
    model_name: str = ""
    model_id: str = ""
    step: int | None = None
    """The step directory's number; ``None`` for an exception dump (it has no step)."""
    is_exception: bool = False
    """An exception dump (formats.md §4): in ``extra-info/data-dump/{device_id}/`` or named
    without a stream id. It belongs to no step or model directory."""

    @property
    def is_overflow(self) -> bool:
        """An Opdebug overflow record file."""
        return self.parsed.is_overflow

    def read(self) -> DumpFile:
        """Parse the file."""
        return read_dump(self.path, name=self.name)


def iter_dump_tree(root: str | os.PathLike[str]) -> Iterator[DumpEntry]:
    """Every dump file under ``root`` (a dump_path, any level below it, or one file).

    Yields in directory order, then by (task id, timestamp) within a directory - the
    execution order. Hidden temporary files and non-dump files are skipped.
    """
    root = os.fspath(root)
    if os.path.isfile(root):
        directory, base = os.path.split(os.path.abspath(root))
        name = read_mapping(directory).get(base, base)
        parsed = parse_dump_name(name)
        if parsed is None:
            raise DumpError(f"{root!r} is not named like a dump file "
                            "({op_type}.{op_name}.{task_id}.{stream_id}.{timestamp})",
                            path=root)
        yield _entry(os.path.abspath(root), name, parsed, "")
        return
    if not os.path.isdir(root):
        raise DumpError(f"dump path {root!r} does not exist", path=root)
    for directory, dirs, files in os.walk(root):
        dirs.sort(key=_natural)
        mapping = read_mapping(directory) if MAPPING_FILE in files else {}
        found = []
        for base in files:
            if base.startswith("."):
                continue
            name = mapping.get(base, base)
            parsed = parse_dump_name(name)
            if parsed is not None:
                found.append((parsed, base, name))
        found.sort(key=lambda f: (f[0].task_id, f[0].timestamp, not f[0].is_overflow))
        rel = os.path.relpath(directory, root)
        for parsed, base, name in found:
            yield _entry(os.path.join(directory, base), name, parsed, rel)


def _natural(text: str) -> tuple[int, int | str]:
    return (0, int(text)) if text.isdigit() else (1, text)


def _entry(path: str, name: str, parsed: DumpName, rel: str) -> DumpEntry:
    directory = os.path.dirname(os.path.abspath(path))
    parent = os.path.basename(os.path.dirname(directory))
    if parsed.stream_id is None or parent == EXCEPTION_DIR_NAME:
        # {root}/extra-info/data-dump/{device_id}/: no time, model or step levels (§4)
        device = os.path.basename(directory) if parent == EXCEPTION_DIR_NAME else ""
        return DumpEntry(path=path, name=name, parsed=parsed, device_id=device,
                         is_exception=True)
    return DumpEntry(path=path, name=name, parsed=parsed, **_levels(rel))


def _levels(rel: str) -> dict[str, Any]:
    """The layout levels (formats.md §2.7) a directory ``rel`` below the walked root names:
    its last parts are the last levels (time, device_id, model_name, model_id, step)."""
    parts = [] if rel in ("", ".") else rel.split(os.sep)
    levels = dict(zip(_LAYOUT_LEVELS[-len(parts):], parts, strict=False)) if parts else {}
    step_text = levels.pop("step", "")
    return {**levels, "step": int(step_text) if step_text.isdigit() else None}


@attrs.frozen(kw_only=True)
class StatsFile:
    """A ``statistic.csv`` of ``dump_data = "stats"`` found in a tree (options.md §4.7), with
    its place in the layout of formats.md §2.7."""

    path: str
    time: str = ""
    device_id: str = ""
    model_name: str = ""
    model_id: str = ""
    step: int | None = None

    def rows(self) -> list[dict[str, str]]:
        """The rows, one per tensor, keyed by the column names of the header line."""
        return list(iter_csv(self.path, what="statistics file",
                             fail=lambda m: DumpError(m, path=self.path)))


def iter_stats_files(root: str | os.PathLike[str]) -> Iterator[StatsFile]:
    """Every ``statistic.csv`` under ``root`` (a dump_path, any level below it, or the file),
    in directory order."""
    root = os.fspath(root)
    if os.path.isfile(root):
        if _STATS_FILE.match(os.path.basename(root)):
            yield StatsFile(path=os.path.abspath(root))
        return
    if not os.path.isdir(root):
        raise DumpError(f"dump path {root!r} does not exist", path=root)
    for directory, dirs, files in os.walk(root):
        dirs.sort(key=_natural)
        levels = _levels(os.path.relpath(directory, root))
        for base in sorted(f for f in files if _STATS_FILE.match(f)):
            yield StatsFile(path=os.path.join(directory, base), **levels)
