"""The bounds every geplug reader enforces on what it reads (docs/limits.md).

A reader that takes a file, a string or a parsed document from a user checks it against these
limits *before* it works on it, so hostile or broken input costs bounded time and memory and
ends in a clear error naming the file, the key path and the limit, never a traceback
(``RecursionError``, ``MemoryError``, ``UnicodeDecodeError``, a hang on ``range(4000000000)``).

The numbers are generous for real input (the largest real rank table, the 1 GB the reference
allows, is still accepted) and one place to change them. The helpers here are shared by the
configuration, product, rank-table, dump and profiling readers; each reader raises its own
error class (``ConfigError`` problems, ``CapabilityError``, ``RankTableError``, ``DumpError``,
``ProfilingError``) through the ``fail`` callback the helpers take.
"""

from __future__ import annotations

import csv
import math
import os
import stat
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_CSV_FIELD_CHARS",
    "MAX_DECLARATION_BYTES",
    "MAX_DEPTH",
    "MAX_DUMP_HEADER_BYTES",
    "MAX_GENERATED_INPUT_BYTES",
    "MAX_JSON_SIDE_BYTES",
    "MAX_KEY_CHARS",
    "MAX_RANKS",
    "MAX_RANK_ID",
    "MAX_RANK_TABLE_BYTES",
    "MAX_STRING_CHARS",
    "check_depth",
    "decode_utf8",
    "depth_error",
    "escape_controls",
    "finite",
    "iter_csv",
    "open_regular",
    "read_bytes",
]

MAX_CONFIG_BYTES = 1 << 20
"""A session configuration (TOML, GE option JSON, TF parameter_map file), a
``modify_mixlist`` JSON, an ``op_precision_mode`` ini or an ``op_debug_config`` cfg: 1 MiB
(the largest real one is a few kB)."""
MAX_DECLARATION_BYTES = 8 << 20
"""A product declaration (``capabilities.toml``): 8 MiB (the shipped ones are < 100 kB)."""
MAX_RANK_TABLE_BYTES = 1 << 30
"""A rank table: 1 GB, the reference's own limit for v2.0 tables (options.md §15.3)."""
MAX_JSON_SIDE_BYTES = 16 << 20
"""A small JSON side file of a profiling directory (``info.json.{id}``): 16 MiB."""
MAX_DEPTH = 32
"""Nesting depth of any TOML or JSON document (tables in tables, arrays in arrays). Real
configurations nest 2-4 levels; Python's parsers and printers recurse, so an unbounded depth
is a ``RecursionError`` waiting to happen."""
MAX_STRING_CHARS = 4096
"""Longest string value (PATH_MAX); also the longest single CSV field shown back."""
MAX_KEY_CHARS = 256
"""Longest key (option name, table name) quoted back in a message."""
MAX_RANKS = 1 << 16
"""Most ranks in one job (65,536: above the largest Atlas SuperPoD cluster sizes)."""
MAX_RANK_ID = MAX_RANKS - 1
"""Largest rank id (rank ids are ``0 .. rank count - 1``)."""
MAX_CSV_FIELD_CHARS = 1 << 20
"""Longest field of a summary CSV (``op_summary``, ``statistic.csv``) the readers accept."""
MAX_DUMP_HEADER_BYTES = 64 << 20
"""Largest DumpData header a dump file may declare (the real ones are a few kB)."""
MAX_GENERATED_INPUT_BYTES = 1 << 30
"""Most bytes of inputs geplug generates for a model on its own: random feeds of ``geplug
run`` without ``--input`` and the zero feeds of the compile-time shape probe (1 GiB). The
simulator computes on this host: a declared input shape of 2**40 must be an error, not the
host's memory exhausted."""

_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F]}
_CONTROLS.update({ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})
for _c in range(0x80, 0xA0):  # C1 controls (terminals act on them too)
    _CONTROLS[_c] = f"\\x{_c:02x}"
for _c in (0x2028, 0x2029):  # line/paragraph separators split lines in many terminals
    _CONTROLS[_c] = f"\\u{_c:04x}"


_CONTROLS_BUT_NEWLINE = {k: v for k, v in _CONTROLS.items() if k != ord("\n")}


def escape_controls(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control character written as an escape (``\\n``, ``\\x1b``).

    One problem is one line: a key or a value with a newline or a terminal escape sequence is
    shown escaped, never executed by the terminal or split over lines. ``keep_newlines`` is
    for a whole multi-line message whose parts were escaped already.
    """
    return text.translate(_CONTROLS_BUT_NEWLINE if keep_newlines else _CONTROLS)


def read_bytes(path: str, *, limit: int, what: str,
               fail: Callable[[str], Exception]) -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit`` of them).

    ``fail(message)`` builds the reader's own error; the message names ``what`` (``"rank
    table"``), the path, and why: missing, a directory or other non-file, unreadable, or larger
    than ``limit``. Reads at most ``limit + 1`` bytes, whatever the file claims.
    """
    shown = repr(escape_controls(path))
    size = open_regular(path, what=what, fail=fail)
    if size > limit:
        raise fail(f"{what} {shown} is {size} bytes; the limit is {limit} bytes "
                   "(docs/limits.md)")
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise fail(f"cannot read {what} {shown}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise fail(f"{what} {shown} is larger than the limit of {limit} bytes (docs/limits.md)")
    return data


def decode_utf8(data: bytes, *, path: str, what: str,
                fail: Callable[[str], Exception]) -> str:
    """``data`` decoded as UTF-8 (a leading BOM dropped), or ``fail`` naming the byte offset."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise fail(f"{what} {escape_controls(path)!r} is not UTF-8 text (byte "
                   f"0x{data[exc.start]:02x} at offset {exc.start}); save it as UTF-8"
                   ) from None


def check_depth(document: Any, *, limit: int = MAX_DEPTH) -> str | None:
    """The key path (``a.b[3].c``) of the first place ``document`` nests deeper than ``limit``
    tables/arrays, or ``None`` when it stays within. Iterative: any depth is safe to check."""
    stack: list[tuple[Any, str, int]] = [(document, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, dict):
            children = [(v, f"{path}.{k}" if path else str(k)) for k, v in value.items()]
        elif isinstance(value, (list, tuple)):
            children = [(v, f"{path}[{i}]") for i, v in enumerate(value)]
        else:
            continue
        if depth >= limit:
            return _short_path(path) or "<root>"
        stack.extend((v, p, depth + 1) for v, p in children)
    return None


def _short_path(path: str, limit: int = 120) -> str:
    path = escape_controls(path)
    return path if len(path) <= limit else path[:limit] + "..."


def depth_error(source: str, key_path: str, *, limit: int = MAX_DEPTH) -> str:
    """The message for a document nested deeper than ``limit`` at ``key_path``."""
    return (f"{escape_controls(source)!r}: {key_path} nests tables/arrays deeper than "
            f"{limit} levels (the limit; docs/limits.md); flatten it")


def finite(value: Any) -> bool:
    """True for an ``int`` or a finite ``float`` (``inf``/``nan`` are not numbers a reader may
    use); ``bool`` is not a number here."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def open_regular(path: str, *, what: str, fail: Callable[[str], Exception]) -> int:
    """The size of ``path`` after checking it is an existing regular file (not a directory,
    FIFO or device), else ``fail`` naming ``what`` and the path."""
    shown = repr(escape_controls(path))
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise fail(f"{what} {shown} does not exist; check the path") from None
    except OSError as exc:
        raise fail(f"cannot read {what} {shown}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise fail(f"{what} {shown} is a directory, not a file; give the path of the file "
                   "itself")
    if not stat.S_ISREG(info.st_mode):
        raise fail(f"{what} {shown} is not a regular file (a device, FIFO or socket); give "
                   "the path of a file")
    return info.st_size


def iter_csv(path: str, *, what: str, fail: Callable[[str], Exception],
             required: tuple[str, ...] = ()) -> Iterator[dict[str, str]]:
    """The rows of the CSV file ``path`` as dicts keyed by its header line, streamed.

    Every failure is ``fail(message)`` naming ``what``, the path and the line: not a regular
    file, not UTF-8, a field over :data:`MAX_CSV_FIELD_CHARS`, a column of ``required``
    missing from the header, or a row with fewer or more fields than the header (the
    trailing empty field of msprof's TAB-terminated rows is allowed).
    """
    open_regular(path, what=what, fail=fail)
    shown = repr(escape_controls(path))
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            reader = csv.reader(fh)
            try:
                header = next(reader)
            except StopIteration:
                raise fail(f"{what} {shown} is empty (no header line)") from None
            missing = [c for c in required if c not in header]
            if missing:
                found = ", ".join(repr(escape_controls(h[:40])) for h in header[:6])
                raise fail(f"{what} {shown} lacks the column(s) {missing} (found {found}"
                           f"{', ...' if len(header) > 6 else ''})")
            width = len(header)
            for row in reader:
                if not row:
                    continue
                if len(row) != width and not (len(row) == width + 1 and row[-1] == ""):
                    raise fail(f"{what} {shown} line {reader.line_num}: {len(row)} fields, "
                               f"the header has {width}; the file is truncated or edited")
                yield dict(zip(header, row, strict=False))
    except UnicodeDecodeError as exc:
        raise fail(f"{what} {shown} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x}); "
                   "it is damaged or not a summary geplug or msprof wrote") from None
    except csv.Error as exc:
        raise fail(f"{what} {shown} is not a readable CSV file: {exc}") from None
    except OSError as exc:
        raise fail(f"cannot read {what} {shown}: {exc.strerror or exc}") from None
