"""storage_limit ageing and the low-disk stop (options.md §3.3 ``storage_limit``).

Only files geplug itself wrote in the output are ever deleted: every completed file is recorded
in the output's :class:`~geplug.profiling.manifest.Manifest` (which survives between runs), and
ageing removes the oldest recorded files first - the files of earlier runs in the same output,
then this run's raw data slices; this run's metadata and summaries are kept. When the disk has
:data:`LOW_DISK_MB` MB or less free, collection stops with a warning and every file already
written stays complete. Tests replace :data:`disk_free` (and may scale :data:`MB`) to simulate
the disk.
"""

from __future__ import annotations

import os
import shutil
import threading
import warnings

from geplug.errors import GeplugWarning
from geplug.profiling.manifest import Manifest

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
"""... and deletes the oldest files geplug wrote until they are back under this share."""


class ProfilingStorageWarning(GeplugWarning):
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
    """Applies storage_limit and the low-disk rule to one ``PROF_*`` directory of an output.

    ``limit_mb`` = 0 means no ageing (only the low-disk stop applies). The limit covers every
    file geplug wrote in ``output`` (this run and earlier ones), as recorded in its manifest.
    """

    def __init__(self, output: str, root: str, limit_mb: int) -> None:
        self.output = output
        self.root = root
        self.limit_bytes = limit_mb * MB
        self.manifest = Manifest(output, root)
        self.deleted: list[str] = []
        self.stopped = False
        self.stop_reason = ""
        self._lock = threading.Lock()

    @property
    def total_bytes(self) -> int:
        """Bytes of the files geplug wrote in the output (and has not deleted)."""
        return self.manifest.total_bytes

    def disk_is_low(self) -> bool:
        """Whether the disk under the output has 20 MB or less free."""
        return disk_free(self.root) <= LOW_DISK_MB * MB

    def register(self, path: str, *, ageable: bool) -> None:
        """Record a completed file; ``ageable`` files (raw data) may be deleted by ageing."""
        with self._lock:
            if self.manifest.add(path, ageable=ageable) is not None:
                self.enforce()

    def enforce(self) -> None:
        """Delete the oldest ageable files geplug wrote when the total nears the limit."""
        if not self.limit_bytes:
            return
        total = self.total_bytes
        if total < NEAR_FRACTION * self.limit_bytes:
            return
        target = TARGET_FRACTION * self.limit_bytes
        removed = 0
        for entry in self.manifest.entries():
            if total <= target:
                break
            if not entry.ageable:
                continue
            if self.manifest.remove(entry):
                self.deleted.append(os.path.join(self.output, entry.rel))
                removed += 1
            total -= entry.size
        if removed:
            warnings.warn(
                ProfilingStorageWarning(
                    f"profiling output {self.output!r} neared storage_limit "
                    f"({self.limit_bytes // MB}MB): deleted the {removed} oldest profiling "
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
        if self.stopped:
            return
        self.stopped = True
        self.stop_reason = reason
        warnings.warn(ProfilingStorageWarning(reason), stacklevel=3)

    def finish(self) -> None:
        """This run is complete: later runs sharing the output may now age its files out."""
        self.manifest.finish()

    def files(self) -> list[str]:
        """The files geplug wrote in the output and still present, oldest first."""
        return [os.path.join(self.output, e.rel) for e in self.manifest.entries()]

