"""Append-only raw data files in slices (``device_{id}/data/{stem}.data.{id}.slice_{n}``).

Events are written as text lines the moment they arrive; a slice is closed and handed to the
:class:`~geplug.profiling.storage.StorageGuard` once it reaches ``slice_bytes``, which is when
ageing runs; the low-disk check also runs every :data:`DISK_CHECK_BYTES` written. A write the
operating system refuses (disk full, quota) stops collection with a warning instead of failing
the run. Readers see complete lines only. Nothing is kept in memory beyond the write buffer.
"""

from __future__ import annotations

from collections.abc import Iterator

from geplug.profiling.slicelog import SliceLog
from geplug.profiling.storage import StorageGuard

__all__ = ["DEFAULT_SLICE_BYTES", "DISK_CHECK_BYTES", "RawLog"]

DEFAULT_SLICE_BYTES = 16 * 1024 * 1024
DISK_CHECK_BYTES = 1024 * 1024
"""Free disk space is checked again after this many bytes of one stream."""


class RawLog(SliceLog):
    """One stream of raw records, rotated into slices."""

    def __init__(
        self,
        directory: str,
        stem: str,
        device: int | str,
        guard: StorageGuard,
        *,
        slice_bytes: int = DEFAULT_SLICE_BYTES,
        ageable: bool = True,
    ) -> None:
        super().__init__(directory, stem, device, guard, slice_bytes=slice_bytes,
                         ageable=ageable)
        self._unchecked = 0
        self.count = 0
        """Records written."""

    def write(self, line: str) -> None:
        """Append one record (a complete line ending in ``\\n``); nothing after :meth:`close`."""
        if self.closed or self.guard.stopped:
            return
        try:
            fh = self._fh or self._open_slice("w", encoding="utf-8", buffering=1 << 16)
            if fh is None:
                return
            fh.write(line)
        except ValueError:
            if self.closed:  # closed by another thread meanwhile
                return
            raise
        except OSError as exc:
            self._fail(exc)
            return
        self.count += 1
        size = len(line)
        self._written += size
        self._unchecked += size
        if self._written >= self.slice_bytes:
            self._unchecked = 0
            self._rotate()
        elif self._unchecked >= DISK_CHECK_BYTES:
            self._unchecked = 0
            self.guard.check_disk()

    def lines(self) -> Iterator[str]:
        """Every complete record still on disk, in order (a streaming pass)."""
        if self._fh is not None:
            try:
                self._fh.flush()
            except OSError as exc:
                self._fail(exc)
        for path in self.paths():
            with open(path, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    if line.endswith("\n"):
                        yield line
