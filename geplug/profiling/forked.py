"""Run one part of the shutdown export in a forked process beside the rest (2 cores, 2 jobs).

The msprof database and the text files are written from the same raw records by independent
code (:mod:`.export`), so a large export can write the database in a child process while the
parent writes the text files. The child reports failure through a pipe: :meth:`ForkedJob.wait`
raises a :class:`~geplug.errors.ProfilingError` naming what failed and why. The child's file is
atomic on its own (complete or absent): an error or an interrupt in the child removes its
temporary file, and the parent always waits for the child, also when its own part fails.
"""

from __future__ import annotations

import os
import threading
import traceback
import warnings
from collections.abc import Callable

from geplug.errors import ProfilingError

__all__ = ["ForkedJob", "can_fork"]

_MAX_MESSAGE = 65536


def can_fork() -> bool:
    """Whether forking is safe here: a POSIX ``fork`` and no other Python thread running (a
    fork copies only the calling thread; a lock another thread holds would stay held)."""
    return hasattr(os, "fork") and threading.active_count() == 1


class ForkedJob:
    """``work()`` running in a forked child; :meth:`wait` collects its result."""

    def __init__(self, what: str, path: str, work: Callable[[], str]) -> None:
        self.what = what
        self.path = path
        read, write = os.pipe()
        with warnings.catch_warnings():
            # Python 3.12+ warns on fork() whenever the OS reports other threads (BLAS or
            # onnxruntime pools, never Python threads here: see can_fork); the child runs
            # only this module's work (SQLite, numpy integer arithmetic, file writes) and
            # touches nothing those threads own
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: never returns into the caller's code
            code = 1
            try:
                os.close(read)
                try:
                    result = "ok:" + work()
                    code = 0
                except BaseException as exc:
                    result = "error:" + "".join(traceback.format_exception_only(exc)).strip()
                os.write(write, result.encode("utf-8", "replace")[:_MAX_MESSAGE])
                os.close(write)
            finally:
                os._exit(code)
        os.close(write)
        self.pid = pid
        self._read = read

    def wait(self) -> str:
        """The child's return value; raises :class:`ProfilingError` when it failed."""
        chunks = []
        try:
            while True:
                data = os.read(self._read, _MAX_MESSAGE)
                if not data:
                    break
                chunks.append(data)
        finally:
            os.close(self._read)
            _, status = os.waitpid(self.pid, 0)
        message = b"".join(chunks).decode("utf-8", "replace")
        code = os.waitstatus_to_exitcode(status)
        if code == 0 and message.startswith("ok:"):
            return message[3:]
        why = message.removeprefix("error:") if message else (
            f"the process ended with signal {-code}" if code < 0 else
            f"the process exited with status {code}")
        raise ProfilingError(
            f"profiling export: writing {self.what} {self.path!r} in its worker process "
            f"failed: {why}; nothing was left at that path (the other profiling files are "
            "written); fix the cause (e.g. disk space) and profile again", path=self.path)
