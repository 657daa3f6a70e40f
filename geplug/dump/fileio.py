"""Complete-or-absent dump files that never overwrite another writer's file.

Every file is written under a hidden temporary name in its final directory, then published
with ``os.link`` (which fails instead of replacing when the name is taken; another process
may dump into the same ``dump_path``), falling back to ``os.replace`` after an existence check
on file systems without hard links. A taken name is retried with the next timestamp. Names
over 255 bytes are replaced by numeric names recorded in ``mapping.csv`` (formats.md §2.8).
Every byte goes through :func:`_os_write`, so a test can simulate a full disk. Temporary
files are :func:`geplug.atomic.create_temp`'s: a dead writer's leftovers are removed by the
next writer into the directory.
"""

from __future__ import annotations

import errno
import itertools
import os
import threading
from collections.abc import Callable, Iterable
from typing import Any

from geplug.atomic import create_temp
from geplug.dump.naming import MAX_NAME_BYTES
from geplug.errors import DumpError

__all__ = [
    "MAPPING_FILE",
    "ClaimedFiles",
    "append_line",
    "ensure_dir",
    "publish",
    "write_all",
]

MAPPING_FILE = "mapping.csv"
_os_write = os.write
"""The low-level write every dump byte goes through (tests replace it to simulate ENOSPC)."""
_SMALL = 1 << 16
_mapping_lock = threading.Lock()
_NO_LINK = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK})


def _write_exact(fd: int, data: Any) -> None:
    view = memoryview(data).cast("B")
    while view.nbytes:
        written = _os_write(fd, view)
        view = view[written:]


def write_all(fd: int, chunks: Iterable[Any]) -> None:
    """Write ``chunks`` (bytes-like) to ``fd`` in order, coalescing small ones."""
    pending = bytearray()
    for chunk in chunks:
        view = memoryview(chunk).cast("B")
        if view.nbytes < _SMALL:
            pending += view
            continue
        if pending:
            _write_exact(fd, pending)
            pending = bytearray()
        _write_exact(fd, view)
    if pending:
        _write_exact(fd, pending)


def _fail(action: str, path: str, exc: OSError) -> DumpError:
    reason = exc.strerror or str(exc)
    hint = (
        "free some space or point dump_path elsewhere"
        if exc.errno in (errno.ENOSPC, errno.EDQUOT)
        else "check that the directory exists and is writable by this user"
    )
    return DumpError(f"cannot {action} {path!r}: {reason} (errno {exc.errno}); {hint}; the "
                     "dump stopped here and the files written before are intact", path=path)


def ensure_dir(path: str) -> str:
    """Create ``path`` (and parents) if missing; a :class:`DumpError` names it on failure."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise _fail("create dump directory", path, exc) from exc
    return path


def _write_temp(directory: str, chunks: Iterable[Any], final_hint: str) -> str:
    try:
        fd, tmp = create_temp(directory, mode=0o640)  # sweeps dead writers' leftovers first
    except OSError as exc:
        raise _fail("create dump file", os.path.join(directory, final_hint), exc) from exc
    try:
        try:
            write_all(fd, chunks)
        finally:
            os.close(fd)
    except OSError as exc:
        _unlink_quietly(tmp)
        raise _fail("write dump file", os.path.join(directory, final_hint), exc) from exc
    except BaseException:
        _unlink_quietly(tmp)
        raise
    return tmp


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _link_new(tmp: str, final: str) -> bool:
    """Publish ``tmp`` as ``final`` unless ``final`` exists; True when published."""
    try:
        os.link(tmp, final)
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno not in _NO_LINK:
            raise
        if os.path.lexists(final):
            return False
        os.replace(tmp, final)
        return True
    _unlink_quietly(tmp)
    return True


def publish(
    directory: str,
    name_for: Callable[[int], str],
    start: int,
    chunks: Iterable[Any],
) -> str:
    """Write ``chunks`` as a new file in ``directory`` and return its path.

    ``name_for(n)`` gives the file name for the number ``n`` (normally the µs timestamp), tried
    from ``start`` upwards until a free name is found, so two writers never overwrite each
    other. A name over 255 bytes is replaced by the numeric name ``n`` and a row
    ``{n},{name}`` is appended to ``mapping.csv`` in the same directory.
    """
    tmp = _write_temp(directory, chunks, name_for(start))
    try:
        for n in itertools.count(start):
            name = name_for(n)
            long_name = len(name.encode("utf-8")) > MAX_NAME_BYTES
            final = os.path.join(directory, str(n) if long_name else name)
            if _link_new(tmp, final):
                if long_name:
                    append_line(os.path.join(directory, MAPPING_FILE), f"{n},{name}\n")
                return final
    except OSError as exc:
        _unlink_quietly(tmp)
        raise _fail("publish dump file", os.path.join(directory, name_for(start)), exc) from exc
    raise AssertionError("unreachable")  # pragma: no cover


def append_line(path: str, line: str) -> None:
    """Append one short line with a single ``O_APPEND`` write (atomic between processes)."""
    data = line.encode("utf-8")
    with _mapping_lock:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
            try:
                _write_exact(fd, data)
            finally:
                os.close(fd)
        except OSError as exc:
            raise _fail("append to", path, exc) from exc


class ClaimedFiles:
    """Files one writer owns and rewrites whole (summaries, statistics CSVs).

    The first write claims ``{stem}{suffix}`` in its directory, or ``{stem}.{k}{suffix}`` when
    another writer holds that name; later writes replace the claimed file atomically.
    """

    def __init__(self) -> None:
        self._claimed: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def write(self, directory: str, stem: str, suffix: str, data: bytes) -> str:
        """Write ``data`` as this writer's ``stem`` file in ``directory``; returns the path."""
        ensure_dir(directory)
        key = (directory, stem + suffix)
        with self._lock:
            tmp = _write_temp(directory, [data], stem + suffix)
            path = self._claimed.get(key)
            try:
                if path is not None:
                    os.replace(tmp, path)
                    return path
                for k in itertools.count():
                    name = f"{stem}{suffix}" if k == 0 else f"{stem}.{k}{suffix}"
                    candidate = os.path.join(directory, name)
                    if _link_new(tmp, candidate):
                        self._claimed[key] = candidate
                        return candidate
            except OSError as exc:
                _unlink_quietly(tmp)
                raise _fail("write", os.path.join(directory, stem + suffix), exc) from exc
        raise AssertionError("unreachable")  # pragma: no cover
