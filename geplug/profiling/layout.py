"""Names, paths and value formats of the msprof ``PROF_*`` directory (formats.md §6.1-6.8)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import sqlite3
import string
import time
from collections.abc import Iterator
from typing import IO, Any

from geplug.atomic import create_temp

__all__ = [
    "ANALYZE",
    "DT_NAMES",
    "OUTPUT_DIR",
    "PATTERNS",
    "AtomicFile",
    "atomic_sqlite",
    "dtype_name",
    "fmt",
    "fmt_list",
    "fmt_ns",
    "format_name",
    "mkstemp_near",
    "new_prof_name",
    "quoted_shapes",
    "shapes_text",
    "ts_us",
    "us_to_ns",
    "write_json",
    "write_text",
]

OUTPUT_DIR = "mindstudio_profiler_output"
ANALYZE = "analyze"

PATTERNS: dict[str, re.Pattern[str]] = {
    "prof_dir": re.compile(r"^PROF_\d{6}_\d{17}_\w+$"),
    "device_dir": re.compile(r"device_\d{1,2}$"),
    "device_info": re.compile(r"^info\.json\.\d{1,2}$"),
    "timeline": re.compile(r"^msprof_\d{14}\.json$"),
    "op_summary": re.compile(r"^op_summary_\d{14}\.csv$"),
    "db": re.compile(r"^msprof_\d{14}\.db$"),
}
"""The name patterns readers use (formats.md §6.8)."""

DT_NAMES: dict[str, str] = {
    "float32": "DT_FLOAT",
    "float16": "DT_FLOAT16",
    "bfloat16": "DT_BF16",
    "float64": "DT_DOUBLE",
    "int8": "DT_INT8",
    "int16": "DT_INT16",
    "int32": "DT_INT32",
    "int64": "DT_INT64",
    "uint8": "DT_UINT8",
    "uint16": "DT_UINT16",
    "uint32": "DT_UINT32",
    "uint64": "DT_UINT64",
    "bool": "DT_BOOL",
    "hifloat8": "DT_HIFLOAT8",
    "complex64": "DT_COMPLEX64",
    "complex128": "DT_COMPLEX128",
    "string": "DT_STRING",
}
"""numpy dtype names -> the msprof spelling (formats.md §2.3 names, §6.4 conventions)."""


def dtype_name(dtype: str) -> str:
    """``float16`` -> ``DT_FLOAT16``; an unknown name is upper-cased with the DT_ prefix."""
    return DT_NAMES.get(dtype) or ("DT_" + dtype.upper().removeprefix("DT_"))


def format_name(fmt_: str) -> str:
    """``ND`` -> ``FORMAT_ND`` (formats.md §6.4)."""
    return fmt_ if fmt_.startswith("FORMAT_") else "FORMAT_" + fmt_


def shapes_text(shapes: tuple[tuple[int, ...], ...] | list[list[int]]) -> str:
    """``((128, 256), (256, 512))`` -> ``"128,256;256,512"``; a scalar leaves an empty entry."""
    return ";".join(",".join(str(d) for d in s) for s in shapes)


def quoted_shapes(shapes: tuple[tuple[int, ...], ...] | list[list[int]]) -> str:
    """A shapes cell as msprof writes it: the text in literal double quotes
    (``"128,256;256,512"``, quotes included in the value; readers strip one character at
    each end), ``N/A`` when there are no shapes."""
    return f'"{shapes_text(shapes)}"' if shapes else "N/A"


def fmt_list(items: tuple[str, ...] | list[str]) -> str:
    """Items joined by ``;`` (dtypes and formats columns)."""
    return ";".join(items)


def fmt(value: float, digits: int = 3) -> str:
    """A number as msprof writes it: fixed decimals."""
    return f"{value:.{digits}f}"


def ts_us(value: float) -> str:
    """A timeline/CSV timestamp in µs with three decimals (``"1700000000000.123"``)."""
    return f"{value:.3f}"


def us_to_ns(value: float) -> int:
    """``value`` µs (absolute, since the epoch) as whole nanoseconds, without the float
    product ``value * 1000`` (which would round at ~1.8e18): the integer and fractional parts
    of a float are exact, so they are converted separately."""
    whole = value // 1
    return int(whole) * 1000 + round((value - whole) * 1000)


def fmt_ns(ns: int) -> str:
    """Integer nanoseconds as µs with three decimals, with no float rounding.

    Used for absolute timestamps (µs since the epoch are ~1.8e15, where a float64's step is
    0.25 µs) and for the durations printed next to them, so ``start + duration == stop``
    holds exactly at the printed precision (``1700000000000123`` ns -> ``"1700000000000.123"``).
    """
    sign = "-" if ns < 0 else ""
    whole, frac = divmod(abs(ns), 1000)
    return f"{sign}{whole}.{frac:03d}"


def new_prof_name(now: float | None = None, index: int | None = None) -> tuple[str, str]:
    """A fresh ``PROF_{6 digits}_{ts17}_{16 upper-case letters}`` name and its ``ts14``.

    The six digits are the process id modulo 10^6 unless ``index`` is given; ``ts17`` is the
    local time with milliseconds (formats.md §1, §6.1).
    """
    now = time.time() if now is None else now
    local = time.localtime(now)
    ts14 = time.strftime("%Y%m%d%H%M%S", local)
    ts17 = ts14 + f"{int((now % 1) * 1000):03d}"
    letters = "".join(secrets.choice(string.ascii_uppercase) for _ in range(16))
    number = (os.getpid() if index is None else index) % 1_000_000
    return f"PROF_{number:06d}_{ts17}_{letters}", ts14


def mkstemp_near(path: str) -> tuple[int, str]:
    """A new, uniquely named temporary file next to ``path``
    (``.{name}.geplug.{host}.{pid}.{n}.tmp``, :func:`geplug.atomic.create_temp`).

    Unique across processes *and* threads, in the target directory so ``os.replace`` is
    atomic; its mode is the usual ``0o666 & ~umask``, so the renamed file gets the permissions
    a plain ``open`` would have given. A dead writer's leftovers in the directory are removed
    by the first such call of a process.
    """
    return create_temp(os.path.dirname(path) or ".", os.path.basename(path))


@contextlib.contextmanager
def atomic_sqlite(path: str) -> Iterator[sqlite3.Connection]:
    """A connection to a new database that appears at ``path`` complete or not at all.

    The database is built in a temporary file beside ``path`` (:func:`mkstemp_near`), committed
    and closed when the block ends, then renamed over ``path``; on any error (or interrupt)
    the temporary file is removed and ``path`` is left as it was.
    """
    fd, tmp = mkstemp_near(path)
    os.close(fd)
    try:
        conn = sqlite3.connect(tmp)
        try:
            yield conn
            conn.commit()
        finally:
            conn.close()
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


class AtomicFile:
    """A text file written under a temporary name and renamed into place on success.

    Files written are complete or absent: on an exception the temporary file is removed. The
    temporary name is unique per instance, so two writers of one path (threads or processes)
    never share it; the last one to finish wins.
    """

    def __init__(self, path: str, *, newline: str | None = None) -> None:
        self.path = path
        self.tmp = ""
        """The temporary file (set on ``__enter__``)."""
        self._newline = newline
        self.handle: IO[str] | None = None

    def __enter__(self) -> IO[str]:
        fd, self.tmp = mkstemp_near(self.path)
        try:
            self.handle = open(
                fd, "w", encoding="utf-8", newline=self._newline, buffering=1 << 20
            )
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.remove(self.tmp)
            raise
        return self.handle

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        assert self.handle is not None
        try:
            self.handle.close()
            if exc_type is None:
                os.replace(self.tmp, self.path)
                return
        except BaseException:
            with contextlib.suppress(OSError):
                os.remove(self.tmp)
            raise
        with contextlib.suppress(OSError):
            os.remove(self.tmp)


def write_json(path: str, data: Any) -> None:
    """Write ``data`` as indented JSON to ``path`` (complete or absent)."""
    with AtomicFile(path) as fh:
        json.dump(data, fh, indent=1)


def write_text(path: str, text: str) -> None:
    """Write ``text`` to ``path`` (complete or absent)."""
    with AtomicFile(path) as fh:
        fh.write(text)
