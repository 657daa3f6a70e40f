"""The slice bookkeeping :class:`RawLog` and :class:`RecordLog` share: paths, failure, closing.

A stream writes ``{stem}.data.{id}.slice_{n}`` files; a closed slice is handed to the
:class:`~geplug.profiling.storage.StorageGuard`. Once :meth:`SliceLog.close` has run the stream
is closed for good: a late write (e.g. from a sampler thread that outlived its join timeout)
does nothing, so a slice already handed over is never reopened or truncated.
"""

from __future__ import annotations

import os
import threading
from typing import IO, Any

from geplug.profiling.storage import StorageGuard

__all__ = ["SliceLog"]


class SliceLog:
    """One stream of raw data rotated into slices (the shared part of the two log kinds)."""

    def __init__(self, directory: str, stem: str, device: int | str, guard: StorageGuard, *,
                 slice_bytes: int, ageable: bool = True) -> None:
        self.directory = directory
        self.stem = stem
        self.device = device
        self.guard = guard
        self.slice_bytes = slice_bytes
        self.ageable = ageable
        self.closed = False
        """Set by :meth:`close`: nothing is written any more."""
        self._index = 0
        self._written = 0
        self._paths: list[str] = []
        self._fh: IO[Any] | None = None
        self._fh_lock = threading.Lock()
        """Guards opening and closing slices (a sampler thread writes while the main thread
        closes)."""

    def _path(self, index: int) -> str:
        return os.path.join(self.directory, f"{self.stem}.data.{self.device}.slice_{index}")

    def _open_slice(self, mode: str, **kwargs: Any) -> IO[Any] | None:
        """Open the next slice (``None`` once the stream is closed: never reopen one)."""
        with self._fh_lock:
            if self.closed:
                return None
            if self._fh is None:
                path = self._path(self._index)
                self._fh = open(path, mode, **kwargs)
                self._paths.append(path)
                self._written = 0
            return self._fh

    def _stop(self, exc: OSError) -> None:
        self.guard.stop(
            f"profiling collection stopped: writing {self.stem!r} under {self.directory!r} "
            f"failed ({exc.strerror or exc}); the data written so far stays readable; free disk "
            "space or set profiling_options.output to another disk"
        )

    def _fail(self, exc: OSError) -> None:
        """The OS refused a write: stop collecting; what is on disk stays readable."""
        self._stop(exc)
        self._close_current()

    def _close_current(self) -> bool:
        """Close the open slice and hand it to the guard; True when one was open."""
        with self._fh_lock:
            fh, self._fh = self._fh, None
        if fh is None:
            return False
        try:
            fh.close()
        except OSError as exc:
            self._stop(exc)
        self.guard.register(self._paths[-1], ageable=self.ageable)
        return True

    def _rotate(self) -> None:
        """Close the current slice; the next write opens the next one."""
        self._close_current()
        self._index += 1
        self.guard.check_disk()

    def _before_close(self) -> None:
        """Write what is buffered (subclasses)."""

    def close(self) -> None:
        """Write what is buffered and close the open slice; later writes do nothing."""
        if self.closed:
            return
        self._before_close()
        with self._fh_lock:
            self.closed = True
        if self._close_current():
            self._index += 1

    def paths(self) -> list[str]:
        """The slices still on disk, oldest first."""
        return [p for p in self._paths if os.path.exists(p)]
