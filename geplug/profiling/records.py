"""Fixed-size binary records in slices: the per-task raw stream, at the least cost per event.

A device task is five float64 values (signature, step, start, duration, wait); appending them
to an ``array`` costs a fraction of formatting a text line, which matters because a task event
arrives for every op of every step. Records are written in chunks (at most
:data:`CHUNK_RECORDS`, never more than a slice) to ``{stem}.data.{id}.slice_{n}`` files that
rotate, age and stop exactly like :class:`~geplug.profiling.rawlog.RawLog`'s; a torn last record
(a hard stop mid-write) is ignored when reading.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterator
from typing import IO

from geplug.profiling.storage import StorageGuard

__all__ = ["CHUNK_RECORDS", "RecordLog"]

CHUNK_RECORDS = 4096
"""Records buffered before one write (a 160 KB write buffer for five fields)."""


class RecordLog:
    """One stream of ``fields``-float64 records, rotated into slices."""

    def __init__(self, directory: str, stem: str, device: int | str, guard: StorageGuard, *,
                 fields: int, slice_bytes: int, ageable: bool = True) -> None:
        self.directory = directory
        self.stem = stem
        self.device = device
        self.guard = guard
        self.fields = fields
        self.record_bytes = 8 * fields
        self.slice_bytes = max(self.record_bytes, slice_bytes)
        self.ageable = ageable
        self._chunk = fields * max(1, min(CHUNK_RECORDS, self.slice_bytes // self.record_bytes))
        self._buf = array("d")
        self.extend = self._buf.extend
        """``extend((v1, ..., vN))``: the hot path; call :meth:`maybe_flush` after it."""
        self._index = 0
        self._written = 0
        self._paths: list[str] = []
        self._fh: IO[bytes] | None = None
        self.flushed = 0
        """Records written to disk so far."""

    def append(self, values: tuple[float, ...]) -> None:
        """Append one record (``fields`` numbers)."""
        self.extend(values)
        if len(self._buf) >= self._chunk:
            self.flush()

    def maybe_flush(self) -> None:
        """Write the buffer once it holds a chunk."""
        if len(self._buf) >= self._chunk:
            self.flush()

    def flush(self) -> None:
        """Write every buffered record (dropped when collection has stopped)."""
        if not self._buf:
            return
        data = self._buf.tobytes()
        del self._buf[:]
        if self.guard.stopped:
            return
        try:
            if self._fh is None:
                path = os.path.join(self.directory,
                                    f"{self.stem}.data.{self.device}.slice_{self._index}")
                self._paths.append(path)
                self._fh = open(path, "wb")
                self._written = 0
            self._fh.write(data)
            self._fh.flush()  # on disk as soon as a chunk is complete
        except OSError as exc:
            self._fail(exc)
            return
        self.flushed += len(data) // self.record_bytes
        self._written += len(data)
        if self._written + self._chunk * 8 > self.slice_bytes:
            self._close_current()
            self._index += 1
        self.guard.check_disk()

    def _fail(self, exc: OSError) -> None:
        self.guard.stop(
            f"profiling collection stopped: writing {self.stem!r} under {self.directory!r} "
            f"failed ({exc.strerror or exc}); the data written so far stays readable; free disk "
            "space or set profiling_options.output to another disk"
        )
        self._close_current()

    def _close_current(self) -> None:
        fh, self._fh = self._fh, None
        if fh is None:
            return
        try:
            fh.close()
        except OSError:
            pass
        self.guard.register(self._paths[-1], ageable=self.ageable)

    def close(self) -> None:
        """Write what is buffered and close the open slice."""
        self.flush()
        self._close_current()

    def paths(self) -> list[str]:
        """The slices still on disk, oldest first."""
        return [p for p in self._paths if os.path.exists(p)]

    def records(self) -> Iterator[tuple[float, ...]]:
        """Every complete record on disk, in order (a streaming pass, chunk by chunk)."""
        self.flush()
        if self._fh is not None:
            try:
                self._fh.flush()
            except OSError as exc:
                self._fail(exc)
        step = self.fields
        size = self._chunk * 8
        for path in self.paths():
            with open(path, "rb") as fh:
                while True:
                    data = fh.read(size)
                    usable = len(data) - len(data) % self.record_bytes
                    if usable <= 0:
                        break
                    values = array("d")
                    values.frombytes(data[:usable])
                    for i in range(0, len(values), step):
                        yield tuple(values[i:i + step])
                    if usable < len(data):
                        break  # a torn last record
