"""storage_limit ageing and the low-disk stop (options.md §3.3 ``storage_limit``).

Only files this collector wrote are ever deleted: every file is registered here when it is
closed, and ageing removes the oldest registered raw-data files first. When the disk has
:data:`LOW_DISK_BYTES` or less free, collection stops with a warning and every file already
written stays complete. Tests replace :data:`disk_free` (and may scale :data:`MB`) to simulate
the disk.
"""

from __future__ import annotations

import os
import shutil
import threading
import warnings
from collections import OrderedDict

__all__ = [
    "LOW_DISK_BYTES",
    "MB",
    "ProfilingStorageWarning",
    "StorageGuard",
    "disk_free",
]

MB = 1024 * 1024
"""Bytes per ``MB`` of storage_limit (a module attribute so tests can simulate small disks)."""
LOW_DISK_MB = 20
"""Collection stops when this many MB or fewer are free (options.md §3.3)."""
NEAR_FRACTION = 0.9
"""Ageing starts when the files written reach this share of storage_limit ..."""
TARGET_FRACTION = 0.75
"""... and deletes the oldest raw files until they are back under this share."""


class ProfilingStorageWarning(UserWarning):
    """Profiling data was aged out or collection stopped for lack of disk space."""


def disk_free(path: str) -> int:
    """Free bytes on the disk holding ``path`` (replace in tests to simulate a disk)."""
    probe = path
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    return shutil.disk_usage(probe).free


LOW_DISK_BYTES = LOW_DISK_MB * MB
"""The low-disk threshold with the default :data:`MB`."""


class StorageGuard:
    """Tracks every file written under one ``PROF_*`` directory and applies the rules.

    ``limit_mb`` = 0 means no ageing (only the low-disk stop applies).
    """

    def __init__(self, root: str, limit_mb: int) -> None:
        self.root = root
        self.limit_bytes = limit_mb * MB
        self._files: OrderedDict[str, tuple[int, bool]] = OrderedDict()
        self.deleted: list[str] = []
        self.stopped = False
        self.stop_reason = ""
        self._lock = threading.Lock()

    @property
    def total_bytes(self) -> int:
        """Bytes of the files written (and not deleted) so far."""
        return sum(size for size, _ in self._files.values())

    def disk_is_low(self) -> bool:
        """Whether the disk under the output has 20 MB or less free."""
        import geplug.profiling.storage as me

        return me.disk_free(self.root) <= me.LOW_DISK_MB * me.MB

    def register(self, path: str, *, ageable: bool) -> None:
        """Record a completed file; ``ageable`` files (raw data) may be deleted by ageing."""
        try:
            size = os.path.getsize(path)
        except OSError:
            return
        with self._lock:
            self._files[path] = (size, ageable)
            self.enforce()

    def enforce(self) -> None:
        """Delete the oldest ageable files when the total nears the limit."""
        if not self.limit_bytes or self.total_bytes < NEAR_FRACTION * self.limit_bytes:
            return
        target = TARGET_FRACTION * self.limit_bytes
        removed = 0
        for path, (_size, ageable) in list(self._files.items()):
            if self.total_bytes <= target:
                break
            if not ageable:
                continue
            try:
                os.remove(path)
            except FileNotFoundError:
                pass
            del self._files[path]
            self.deleted.append(path)
            removed += 1
        if removed:
            warnings.warn(
                ProfilingStorageWarning(
                    f"profiling output {self.root!r} neared storage_limit "
                    f"({self.limit_bytes // MB}MB): deleted the {removed} oldest raw data "
                    "file(s) geplug wrote there; raise profiling_options.storage_limit to keep "
                    "more"
                ),
                stacklevel=2,
            )

    def check_disk(self) -> bool:
        """Stop collection (once, with a warning) when the disk is low; True if still going."""
        if self.stopped:
            return False
        if self.disk_is_low():
            self.stop(
                f"20 MB or less free on the disk of {self.root!r}: profiling collection stopped; "
                "what was written stays readable; free disk space or set "
                "profiling_options.output to another disk"
            )
            return False
        return True

    def stop(self, reason: str) -> None:
        """Mark collection as stopped and warn."""
        self.stopped = True
        self.stop_reason = reason
        warnings.warn(ProfilingStorageWarning(reason), stacklevel=3)

    def files(self) -> list[str]:
        """The files written and still present, oldest first."""
        return list(self._files)
