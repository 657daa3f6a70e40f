"""A summary CSV split into slices of at most :data:`SLICE_ROWS` rows, as msprof splits op_summary.

msprof writes ``op_summary_{ts14}.csv`` when a run has at most one million task rows and
``op_summary_slice_{n}_{ts14}.csv`` (``n`` from 0, each slice with the header and at most one
million rows, consecutive in time) beyond that (formats.md §6.1; the slice names appear in
public analyses of real CANN output). Every slice is written under a temporary name and all of
them are renamed together when the export succeeds - complete or absent - and removed on any
error.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import IO

from geplug.profiling.layout import mkstemp_near
from geplug.profiling.textfill import Pieces, write_pieces

__all__ = ["SLICE_ROWS", "SlicedCsv", "slice_name"]

SLICE_ROWS = 1_000_000
"""Rows per slice (msprof's threshold). Read when a :class:`SlicedCsv` opens, so a test can
lower it without writing a million rows."""


def slice_name(stem: str, ts14: str, index: int | None) -> str:
    """``op_summary_{ts14}.csv`` (``index`` None: a single file) or
    ``op_summary_slice_{index}_{ts14}.csv``."""
    return f"{stem}_{ts14}.csv" if index is None else f"{stem}_slice_{index}_{ts14}.csv"


class SlicedCsv:
    """One summary CSV being written in slices (a context manager: renames on success).

    ``header`` is the complete header line (with its newline). Rows arrive in blocks through
    :meth:`write_rows`, which asks for the text of row ranges so a block is cut exactly at a
    slice boundary.
    """

    def __init__(self, directory: str, stem: str, ts14: str, header: str,
                 written: list[str], *, slice_rows: int | None = None) -> None:
        self.directory = directory
        self.stem = stem
        self.ts14 = ts14
        self.header = header
        self.written = written
        self.slice_rows = SLICE_ROWS if slice_rows is None else slice_rows
        if self.slice_rows < 1:
            raise ValueError(f"slice_rows must be at least 1, got {self.slice_rows!r}")
        self._tmps: list[str] = []
        self._fh: IO[str] | None = None
        self._rows = 0
        """Rows in the open slice."""
        self.rows = 0
        """Rows written in all."""

    def __enter__(self) -> SlicedCsv:
        self._open()
        return self

    def _open(self) -> None:
        fd, tmp = mkstemp_near(os.path.join(self.directory, slice_name(self.stem, self.ts14,
                                                                       None)))
        self._tmps.append(tmp)
        try:
            self._fh = open(fd, "w", encoding="utf-8", newline="", buffering=1 << 20)
        except BaseException:
            os.close(fd)
            raise
        self._fh.write(self.header)
        self._rows = 0

    def write_rows(self, n: int, text: Callable[[int, int], str | Pieces]) -> None:
        """Write ``n`` rows; ``text(lo, hi)`` returns the lines of rows ``lo``..``hi - 1``
        (a str, or UTF-8 pieces: :func:`~geplug.profiling.textfill.write_pieces`)."""
        lo = 0
        while lo < n:
            if self._rows >= self.slice_rows:
                assert self._fh is not None
                self._fh.close()
                self._open()
            hi = min(n, lo + self.slice_rows - self._rows)
            assert self._fh is not None
            lines = text(lo, hi)
            if isinstance(lines, str):
                self._fh.write(lines)
            else:
                write_pieces(self._fh, lines)
            self._rows += hi - lo
            self.rows += hi - lo
            lo = hi

    def write(self, text: str) -> None:
        """Write pre-formatted lines without counting them (for callers outside the task
        pass; a slice boundary never falls inside such text)."""
        assert self._fh is not None
        self._fh.write(text)

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        fh, self._fh = self._fh, None
        try:
            if fh is not None:
                fh.close()
            if exc_type is None:
                single = len(self._tmps) == 1
                for i, tmp in enumerate(self._tmps):
                    path = os.path.join(self.directory,
                                        slice_name(self.stem, self.ts14, None if single else i))
                    os.replace(tmp, path)
                    self.written.append(path)
                self._tmps = []
                return
        except BaseException:
            self._remove()
            raise
        self._remove()

    def _remove(self) -> None:
        for tmp in self._tmps:
            with contextlib.suppress(OSError):
                os.remove(tmp)
        self._tmps = []
