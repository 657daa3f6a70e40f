"""Fixed-size binary records in slices: the per-task raw stream, at the least cost per event.

A device task is five int64 values (signature, step, start, duration, wait; the times in
integer nanoseconds relative to the session's time base, see
:class:`~geplug.profiling.session.ProfilingSession` — never absolute float64 µs, whose step
at ~1.8e15 µs since the epoch is 0.25 µs); appending them
to an ``array`` costs a fraction of formatting a text line, which matters because a task event
arrives for every op of every step. Records are written in chunks (at most
:data:`CHUNK_RECORDS`, never more than a slice) to ``{stem}.data.{id}.slice_{n}`` files that
rotate, age and stop exactly like :class:`~geplug.profiling.rawlog.RawLog`'s; a torn last record
(a hard stop mid-write) is ignored when reading.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from typing import Any

from geplug.profiling.slicelog import SliceLog
from geplug.profiling.storage import StorageGuard

__all__ = ["CHUNK_RECORDS", "RecordLog"]

CHUNK_RECORDS = 4096
"""Records buffered before one write (a 160 KB write buffer for five fields)."""


class RecordLog(SliceLog):
    """One stream of ``fields``-value records (``typecode``: ``"q"`` int64, ``"d"`` float64),
    rotated into slices."""

    def __init__(self, directory: str, stem: str, device: int | str, guard: StorageGuard, *,
                 fields: int, slice_bytes: int, ageable: bool = True,
                 typecode: str = "q") -> None:
        record_bytes = 8 * fields
        super().__init__(directory, stem, device, guard,
                         slice_bytes=max(record_bytes, slice_bytes), ageable=ageable)
        self.fields = fields
        self.record_bytes = record_bytes
        self._chunk = fields * max(1, min(CHUNK_RECORDS, self.slice_bytes // self.record_bytes))
        self.typecode = typecode
        self._buf = array(typecode)
        self.extend = self._buf.extend
        """``extend((v1, ..., vN))``: the hot path; call :meth:`maybe_flush` after it."""
        self.flushed = 0
        """Records written to disk so far."""

    def append(self, values: tuple[Any, ...]) -> None:
        """Append one record (``fields`` numbers)."""
        self.extend(values)
        if len(self._buf) >= self._chunk:
            self.flush()

    def extend_array(self, values: Any) -> None:
        """Append whole records from a C-contiguous numpy array of this log's type (the
        batched path: one call per step, flushed at chunk boundaries)."""
        self._buf.frombytes(memoryview(values).cast("B"))  # no intermediate bytes copy
        if len(self._buf) >= self._chunk:
            self.flush()

    def maybe_flush(self) -> None:
        """Write the buffer once it holds a chunk."""
        if len(self._buf) >= self._chunk:
            self.flush()

    def extend_block(self, values: Any) -> None:
        """Append many records at once from a C-contiguous numpy array of this log's type
        (``(n, fields)``): the buffered records first, then the block written straight from
        the array in pieces of at most a chunk (no copy through the buffer), so slices
        rotate and age as they do record by record."""
        self.flush()
        data = memoryview(values).cast("B")
        size = self._chunk * 8
        for at in range(0, len(data), size):
            self._write(data[at:at + size])

    def flush(self) -> None:
        """Write every buffered record (dropped when collection has stopped or after
        :meth:`close`)."""
        if not self._buf:
            return
        data = self._buf.tobytes()
        del self._buf[:]
        self._write(data)

    def _write(self, data: bytes | memoryview) -> None:
        """Write whole records to the current slice, then rotate or check the disk."""
        if self.closed or self.guard.stopped:
            return
        try:
            fh = self._fh or self._open_slice("wb")
            if fh is None:
                return
            fh.write(data)
            fh.flush()  # on disk as soon as a chunk is complete
        except ValueError:
            if self.closed:  # closed by another thread meanwhile
                return
            raise
        except OSError as exc:
            self._fail(exc)
            return
        self.flushed += len(data) // self.record_bytes
        self._written += len(data)
        if self._written + self._chunk * 8 > self.slice_bytes:
            self._rotate()
        else:
            self.guard.check_disk()

    def _before_close(self) -> None:
        self.flush()

    def chunks(self) -> Iterator[Any]:
        """Every complete record on disk as numpy arrays of shape ``(n, fields)``, chunk by
        chunk (bounded memory, vectorised readers)."""
        import numpy as np

        self.flush()
        if self._fh is not None:
            try:
                self._fh.flush()
            except OSError as exc:
                self._fail(exc)
        dtype = np.int64 if self.typecode == "q" else np.float64
        size = max(self._chunk * 8, self.record_bytes * 65536)
        for path in self.paths():
            with open(path, "rb") as fh:
                while True:
                    data = fh.read(size)
                    usable = len(data) - len(data) % self.record_bytes
                    if usable <= 0:
                        break
                    yield np.frombuffer(data[:usable], dtype=dtype).reshape(-1, self.fields)
                    if usable < len(data):
                        break  # a torn last record

    def records(self) -> Iterator[tuple[Any, ...]]:
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
                    values = array(self.typecode)
                    values.frombytes(data[:usable])
                    for i in range(0, len(values), step):
                        yield tuple(values[i:i + step])
                    if usable < len(data):
                        break  # a torn last record
