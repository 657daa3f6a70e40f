"""Append-only raw data files in slices (``device_{id}/data/{stem}.data.{id}.slice_{n}``).

Events are written as text lines the moment they arrive; a slice is closed and handed to the
:class:`~geplug.profiling.storage.StorageGuard` once it reaches ``slice_bytes``, which is when
ageing runs; the low-disk check also runs every :data:`DISK_CHECK_BYTES` written. A write the
operating system refuses (disk full, quota) stops collection with a warning instead of failing
the run. Readers see complete lines only. Nothing is kept in memory beyond the write buffer.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import IO

from geplug.profiling.storage import StorageGuard

__all__ = ["DEFAULT_SLICE_BYTES", "DISK_CHECK_BYTES", "RawLog"]

DEFAULT_SLICE_BYTES = 16 * 1024 * 1024
DISK_CHECK_BYTES = 1024 * 1024
"""Free disk space is checked again after this many bytes of one stream."""


class RawLog:
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
        self.directory = directory
        self.stem = stem
        self.device = device
        self.guard = guard
        self.slice_bytes = slice_bytes
        self.ageable = ageable
        self._index = 0
        self._written = 0
        self._unchecked = 0
        self._paths: list[str] = []
        self._fh: IO[str] | None = None
        self.count = 0
        """Records written."""

    def _path(self, index: int) -> str:
        return os.path.join(self.directory, f"{self.stem}.data.{self.device}.slice_{index}")

    def _open(self) -> IO[str]:
        path = self._path(self._index)
        self._paths.append(path)
        self._fh = open(path, "w", encoding="utf-8", buffering=1 << 16)
        self._written = 0
        return self._fh

    def write(self, line: str) -> None:
        """Append one record (a complete line ending in ``\\n``)."""
        if self.guard.stopped:
            return
        try:
            fh = self._fh or self._open()
            fh.write(line)
        except OSError as exc:
            self._fail(exc)
            return
        self.count += 1
        size = len(line)
        self._written += size
        self._unchecked += size
        if self._written >= self.slice_bytes:
            self._rotate()
        elif self._unchecked >= DISK_CHECK_BYTES:
            self._unchecked = 0
            self.guard.check_disk()

    def _fail(self, exc: OSError) -> None:
        """The OS refused a write: stop collecting; what is on disk stays readable."""
        self.guard.stop(
            f"profiling collection stopped: writing {self.stem!r} under {self.directory!r} "
            f"failed ({exc.strerror or exc}); the data written so far stays readable; free disk "
            "space or set profiling_options.output to another disk"
        )
        fh, self._fh = self._fh, None
        if fh is not None:
            try:
                fh.close()
            except OSError:
                pass
            self.guard.register(self._paths[-1], ageable=self.ageable)

    def _rotate(self) -> None:
        self._close_current()
        self._index += 1
        self._unchecked = 0
        self.guard.check_disk()

    def _close_current(self) -> None:
        if self._fh is None:
            return
        fh, self._fh = self._fh, None
        try:
            fh.close()
        except OSError as exc:
            self._fail(exc)
        self.guard.register(self._paths[-1], ageable=self.ageable)

    def close(self) -> None:
        """Close the open slice (complete lines only)."""
        self._close_current()

    def paths(self) -> list[str]:
        """The slices still on disk, oldest first."""
        return [p for p in self._paths if os.path.exists(p)]

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
