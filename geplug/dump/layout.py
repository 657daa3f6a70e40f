"""The dump directory tree ``{dump_path}/{time}/{device_id}/{model_name}/{model_id}/{step}/``.

formats.md §2.7: ``time`` is ts14 when the first file of this system is written, the model
name is sanitised, the last level is the iteration (step) number. Overflow files share the
tree (formats.md §3).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from geplug.dump.fileio import ensure_dir
from geplug.dump.naming import sanitize, ts14

__all__ = ["DumpLayout"]


class DumpLayout:
    """One system's dump tree under ``root``; directories are created on first use."""

    def __init__(self, root: str, device_id: int, clock: Callable[[], float] = time.time) -> None:
        self.root = os.path.abspath(root)
        self.device_id = int(device_id)
        self._clock = clock
        self._time: str | None = None
        self._made: set[str] = set()
        self._lock = threading.Lock()

    @property
    def started(self) -> bool:
        """Whether a file was placed in this tree (the ``{time}`` level is fixed)."""
        return self._time is not None

    @property
    def time_dir(self) -> str:
        """``{root}/{time}``: fixed at the first call (ts14 of that moment), then reused."""
        with self._lock:
            if self._time is None:
                self._time = ts14(self._clock())
            return os.path.join(self.root, self._time)

    def step_dir(self, model_name: str, model_id: int, step: int) -> str:
        """The (created) directory of one step of one model."""
        path = os.path.join(
            self.time_dir, str(self.device_id), sanitize(model_name), str(int(model_id)),
            str(int(step)),
        )
        if path not in self._made:
            ensure_dir(path)
            self._made.add(path)
        return path
