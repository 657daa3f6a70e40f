"""Files complete or absent, and every temporary file accounted for.

Every file geplug writes goes first to a temporary file in its final directory, named

    .{name}.geplug.{host}.{pid}.{n}.tmp      (``.geplug.{host}.{pid}.{n}.tmp`` in dump trees)

(``host`` a short tag of this machine's name, ``pid`` the writing process, ``n`` a counter of
that process), and is then renamed (``os.replace``) or linked to its final name. A process
killed in between (``kill -9``, power loss) leaves its temporary file behind; the **next
writer into that directory** removes it (:func:`sweep_stale_temps`, done once per directory
per process by :func:`create_temp`). A file is removed only when all of these hold, so a file
that is not ours is never touched:

- its name matches the pattern above exactly (the older ``.geplug.{pid}.{n}.tmp`` too);
- it was written on this machine (same host tag; the old pattern carries none and is taken as
  local), by a process that is no longer running (``psutil.pid_exists``), and not by this one;
- it is a regular file (never a symbolic link or a directory) owned by the current user.

SQLite's side files of a temporary database (``{temp}-journal``, ``{temp}-wal``,
``{temp}-shm``: a database written under a temporary name, such as the profiling databases)
follow their temporary file by the same rules.

On a file system shared by several machines, a temporary file of another machine is left to
that machine's next run (its process may still be writing).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import socket
import stat
import threading
from collections.abc import Callable
from typing import BinaryIO

__all__ = [
    "SIDE_SUFFIXES",
    "TEMP_PATTERN",
    "create_temp",
    "is_stale_temp",
    "sweep_once",
    "sweep_stale_temps",
    "temp_name",
    "write_atomic",
]

TEMP_PATTERN = re.compile(
    r"^\.(?:(?P<name>.+)\.)?geplug\.(?:(?P<host>h[0-9a-f]{8})\.)?(?P<pid>[0-9]{1,10})\."
    r"(?P<n>[0-9]{1,20})\.tmp$")
"""The name of a geplug temporary file (see the module docstring)."""
SIDE_SUFFIXES = ("-journal", "-wal", "-shm")
"""SQLite's files next to a database being written under a temporary name."""

HOST_TAG = "h" + hashlib.sha1(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]
"""This machine's tag in temporary names (8 hex digits of a hash of the host name)."""

_counter = itertools.count()
_swept: set[str] = set()
_swept_lock = threading.Lock()


def temp_name(name: str = "") -> str:
    """A new temporary file name (no directory) for a final file called ``name``."""
    prefix = f".{name}." if name else "."
    return f"{prefix}geplug.{HOST_TAG}.{os.getpid()}.{next(_counter)}.tmp"


def _alive(pid: int) -> bool:
    if pid <= 0:
        return True  # not a pid a writer has: never treat as dead
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil is a dependency of the core
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except OSError:
            return True
        return True
    return bool(psutil.pid_exists(pid))


def is_stale_temp(directory: str, entry: str) -> bool:
    """True when ``directory/entry`` is a temporary file of a dead geplug process of this
    machine owned by this user (the rules of the module docstring)."""
    name = entry
    for suffix in SIDE_SUFFIXES:
        if name.endswith(".tmp" + suffix):
            name = name[:-len(suffix)]
            break
    match = TEMP_PATTERN.match(name)
    if match is None:
        return False
    host = match.group("host")
    if host is not None and host != HOST_TAG:
        return False
    pid = int(match.group("pid"))
    if pid == os.getpid() or _alive(pid):
        return False
    try:
        info = os.lstat(os.path.join(directory, entry))
    except OSError:
        return False
    if not stat.S_ISREG(info.st_mode):
        return False
    return not hasattr(os, "geteuid") or info.st_uid == os.geteuid()


def sweep_stale_temps(directory: str) -> list[str]:
    """Remove the stale temporary files of ``directory`` (not below it); returns their paths.

    Never raises: a directory that cannot be listed, or a file removed meanwhile by another
    writer, is skipped.
    """
    removed: list[str] = []
    try:
        entries = os.listdir(directory)
    except OSError:
        return removed
    for entry in entries:
        if entry.startswith(".") and entry.endswith((".tmp", *SIDE_SUFFIXES)) \
                and is_stale_temp(directory, entry):
            path = os.path.join(directory, entry)
            try:
                os.unlink(path)
            except OSError:
                continue
            removed.append(path)
    return removed


def sweep_once(directory: str) -> None:
    """:func:`sweep_stale_temps` the first time this process writes into ``directory``."""
    key = os.path.abspath(directory)
    with _swept_lock:
        if key in _swept:
            return
        _swept.add(key)
    sweep_stale_temps(key)


def create_temp(directory: str, name: str = "", mode: int = 0o666) -> tuple[int, str]:
    """Create a new temporary file in ``directory`` for the final file ``name``.

    Returns ``(fd, path)`` of a file opened for writing, created exclusively (``O_EXCL``: no
    two threads or processes share one) with ``mode`` (the umask applies). The first call for
    a directory removes that directory's stale temporary files first.
    """
    directory = directory or "."
    sweep_once(directory)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        path = os.path.join(directory, temp_name(name))
        try:
            return os.open(path, flags, mode), path
        except FileExistsError:  # a file of a dead process with a reused pid: next number
            continue


def write_atomic(path: str | os.PathLike[str], write: Callable[[BinaryIO], object]) -> None:
    """Call ``write(fh)`` on a temporary file in ``path``'s directory, then rename it to ``path``.

    The temporary name is unique (:func:`create_temp`), so threads and processes never share
    one; the final file gets the permissions a plain ``open`` would give. On any error the
    temporary file is removed and the exception propagates; an existing ``path`` is left
    untouched.
    """
    target = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(target))
    fd, tmp = create_temp(directory, os.path.basename(target))
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
