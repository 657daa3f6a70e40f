"""Progress for long CLI work (rich): steps, bytes written, the final export.

Shown on stderr only when it is a terminal and ``--quiet`` was not given; otherwise every call
is a no-op, so scripts and CI logs stay clean. Work shorter than about a second never shows a
bar (rich's transient display appears only after ``DELAY_S``).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["DELAY_S", "Progress", "directory_bytes", "progress", "wanted"]

DELAY_S = 1.0
"""Seconds of work before a progress display appears."""


def directory_bytes(path: str | None) -> int:
    """Bytes of the regular files under ``path`` (0 when it does not exist)."""
    total = 0
    if not path or not os.path.isdir(path):
        return 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                continue
    return total


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.1f} {unit}" if unit != "B" else f"{int(value)} B"
        value /= 1024
    return f"{value:.1f} GB"


class Progress:
    """A step counter with an optional bytes-written note; silent when not enabled."""

    def __init__(self, total: int, label: str, *, enabled: bool) -> None:
        self.total, self.label, self.enabled = total, label, enabled
        self.done = 0
        self._started = time.monotonic()
        self._bar: Any = None
        self._task: Any = None

    def _ensure(self) -> None:
        if self._bar is not None or not self.enabled:
            return
        if time.monotonic() - self._started < DELAY_S:
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress

        self._bar = RichProgress(TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TextColumn("{task.fields[note]}"),
                                 TimeElapsedColumn(), console=Console(file=sys.stderr),
                                 transient=True)
        self._bar.start()
        self._task = self._bar.add_task(self.label, total=self.total, completed=self.done,
                                        note="")

    def advance(self, note_bytes: int | None = None) -> None:
        """One unit done; ``note_bytes`` shows as "N MB written"."""
        self.done += 1
        self._ensure()
        if self._bar is not None:
            note = "" if note_bytes is None else f"{_human(note_bytes)} written"
            self._bar.update(self._task, completed=self.done, note=note)

    def phase(self, label: str) -> None:
        """Switch to an open-ended phase (the final flush/export)."""
        self._ensure()
        if self._bar is not None:
            self._bar.update(self._task, description=label, note="")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def wanted(quiet: bool, stream: Any = None) -> bool:
    """Whether to show progress: a terminal on ``stream`` (stderr) and no ``--quiet``."""
    stream = sys.stderr if stream is None else stream
    return not quiet and bool(getattr(stream, "isatty", lambda: False)())


@contextmanager
def progress(total: int, label: str, *, quiet: bool) -> Iterator[Progress]:
    """A :class:`Progress` that is shown only when :func:`wanted`; always closed."""
    bar = Progress(total, label, enabled=wanted(quiet))
    try:
        yield bar
    finally:
        bar.close()
