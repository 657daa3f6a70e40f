"""Dump file and directory names: sanitising, the reader regex, FFTS+ suffixes (formats.md §2.6).

Names longer than 255 bytes are replaced by numeric names recorded in ``mapping.csv``
(formats.md §2.8); :mod:`geplug.dump.fileio` does that when it writes.
"""

from __future__ import annotations

import re
import time

import attrs

__all__ = [
    "MAX_NAME_BYTES",
    "READER_REGEX",
    "TASK_TYPE_CODES",
    "DumpName",
    "dump_file_name",
    "parse_dump_name",
    "sanitize",
    "ts14",
]

MAX_NAME_BYTES = 255
"""Longer file names go through ``mapping.csv`` (formats.md §2.8)."""

READER_REGEX = re.compile(
    r"^[A-Za-z0-9_-]+\.([A-Za-z0-9_-]+)\.[0-9]+(\.[0-9]+)?\.[0-9]{1,255}"
    r"(\.[0-9]+\.[0-9]+\.[0-9]+)?(\.[0-9]+)?"
)
"""The offline-dump reader regex of formats.md §2.6, verbatim."""

TASK_TYPE_CODES = {"AICORE": 0, "AICPU": 1, "DEBUG": 2, "HCCL": 3, "FFTSPLUS": 4}
"""FFTS+ file-name task_type codes (formats.md §2.6)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def sanitize(name: str) -> str:
    """An op type, op name or model name made file-name safe (formats.md §2.6).

    ``.``, ``/``, ``\\`` and space become ``_`` as the real stack does; any other character
    outside ``[A-Za-z0-9_-]`` also becomes ``_`` so the result always matches the readers'
    pattern. An empty name becomes ``_``.
    """
    return _UNSAFE.sub("_", name) or "_"


def ts14(seconds: float | None = None) -> str:
    """Local time ``YYYYMMDDhhmmss`` (the ``{time}`` directory of formats.md §2.7)."""
    return time.strftime("%Y%m%d%H%M%S", time.localtime(seconds))


def dump_file_name(
    op_type: str,
    op_name: str,
    task_id: int,
    stream_id: int | None,
    timestamp_us: int,
    ffts: tuple[int, int, int, int] | None = None,
) -> str:
    """``{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}`` with sanitised names.

    ``stream_id=None`` gives the stream-less form (older GE exception dumps, formats.md §4).
    ``ffts`` = (task_type, context_id, thread_id, device_id) appends the FFTS+ suffix of
    formats.md §2.6.
    """
    parts = [sanitize(op_type), sanitize(op_name), str(int(task_id))]
    if stream_id is not None:
        parts.append(str(int(stream_id)))
    parts.append(str(int(timestamp_us)))
    if ffts is not None:
        parts.extend(str(int(v)) for v in ffts)
    return ".".join(parts)


@attrs.frozen(kw_only=True)
class DumpName:
    """The fields of a dump file name (formats.md §2.6); absent fields are ``None``."""

    op_type: str
    op_name: str
    task_id: int
    stream_id: int | None
    timestamp: int
    task_type: int | None = None
    context_id: int | None = None
    thread_id: int | None = None
    device_id: int | None = None

    @property
    def is_overflow(self) -> bool:
        """An ``Opdebug.Node_OpDebug`` overflow record file (formats.md §3)."""
        return self.op_type == "Opdebug" and self.op_name == "Node_OpDebug"


def parse_dump_name(name: str) -> DumpName | None:
    """The fields of a dump file name, or ``None`` when the reader regex rejects it."""
    if READER_REGEX.match(name) is None:
        return None
    parts = name.split(".")
    op_type, op_name, numbers = parts[0], parts[1], parts[2:]
    if not all(p.isdigit() for p in numbers):
        return None
    values = [int(p) for p in numbers]
    if len(values) == 2:
        return DumpName(op_type=op_type, op_name=op_name, task_id=values[0], stream_id=None,
                        timestamp=values[1])
    if len(values) in (3, 6, 7):
        rest: list[int | None] = [*values[3:], None, None, None, None]
        return DumpName(op_type=op_type, op_name=op_name, task_id=values[0],
                        stream_id=values[1], timestamp=values[2], task_type=rest[0],
                        context_id=rest[1], thread_id=rest[2], device_id=rest[3])
    return None
