"""The record of every profiling file geplug wrote under one output directory.

``storage_limit`` ages out "the oldest profiling files that geplug itself wrote in that output"
(options.md §3.3) - including the files of earlier runs in the same output - and never any
other file. This manifest is how geplug knows which files are its own: an append-only JSON-lines
file ``{output}/.geplug_profiling_manifest`` with one ``add`` record per completed file (path
relative to the output, size, modification time, the ``PROF_*`` directory it belongs to) and one
``del`` record per file aged out, and one ``finished`` record per run (its ``PROF_*``
directory) appended when the run closes. A file is treated as geplug's only while it still has
the size and modification time recorded, lives inside a ``PROF_*`` directory of that output and
is not a link: a file the user replaced, moved in or edited is never deleted. Only the files of
*finished* runs may be aged out by another run, so two systems sharing an output (threads or
processes) never delete each other's data while both are collecting (a run that crashed before
finishing is kept, the safe side). Appends are single short lines; compaction re-reads the file
and rewrites it while holding an exclusive ``fcntl.flock`` on ``{output}/{MANIFEST_NAME}.lock``
(appends take the shared lock), so no line appended meanwhile is lost; a torn last line is
ignored.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator

import attrs

from geplug.profiling.layout import PATTERNS, mkstemp_near

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows: compaction is then unlocked
    fcntl = None  # type: ignore[assignment]

__all__ = ["MANIFEST_NAME", "Entry", "Manifest"]

MANIFEST_NAME = ".geplug_profiling_manifest"


def _run_of(rel: str) -> str:
    """The ``PROF_*`` directory (first path part) of a manifest path."""
    return rel.replace("\\", "/").split("/")[0]


@attrs.frozen
class Entry:
    """One file geplug wrote: where, how big, when, and whether this run may age it out."""

    rel: str
    """Path relative to the output directory (``PROF_*/device_0/data/...``)."""
    size: int
    mtime_ns: int
    ageable: bool
    """Raw data of the current run, or any file of an earlier, finished run."""


class Manifest:
    """The files geplug wrote under ``output`` (earlier runs first), kept on disk as it changes."""

    def __init__(self, output: str, run_dir: str) -> None:
        self.output = os.path.abspath(output)
        self.path = os.path.join(self.output, MANIFEST_NAME)
        self.run = os.path.relpath(os.path.abspath(run_dir), self.output)
        self.finished = False
        """Set by :meth:`finish` (this run's files may then be aged out by later runs)."""
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._load()

    # -- reading -----------------------------------------------------------------------------

    def _records(self) -> Iterator[dict[str, object]]:
        try:
            with open(self.path, encoding="utf-8") as fh:
                for line in fh:
                    if not line.endswith("\n"):
                        return  # a torn last line (a process stopped mid-write)
                    try:
                        record = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(record, dict):
                        yield record
        except FileNotFoundError:
            return

    def _replay(self, records: Iterable[dict[str, object]]
                ) -> tuple[OrderedDict[str, Entry], set[str], int]:
        """Files recorded (oldest first, still exactly geplug's), finished runs, lines read.

        A file is ageable only when its run has finished and is not this run.
        """
        entries: OrderedDict[str, Entry] = OrderedDict()
        finished: set[str] = set()
        lines = 0
        for record in records:
            lines += 1
            op = record.get("op")
            if op == "finished":
                run = record.get("run")
                if isinstance(run, str):
                    finished.add(run)
                continue
            rel = record.get("path")
            if not isinstance(rel, str):
                continue
            if op == "del":
                entries.pop(rel, None)
            elif op == "add":
                size, mtime = record.get("size"), record.get("mtime_ns")
                if isinstance(size, int) and isinstance(mtime, int):
                    entries.pop(rel, None)
                    entries[rel] = Entry(rel, size, mtime, False)
        mine = self.run.replace("\\", "/")
        result: OrderedDict[str, Entry] = OrderedDict()
        for rel, e in entries.items():
            if self._is_ours(e):
                run = _run_of(rel)
                result[rel] = attrs.evolve(e, ageable=run in finished and run != mine)
        return result, finished, lines

    def _load(self) -> None:
        """Replay the manifest; keep only files that are still exactly what geplug wrote."""
        self._entries, _finished, lines = self._replay(self._records())
        if lines > 2 * len(self._entries) + 64:
            self._compact()

    def _is_ours(self, entry: Entry) -> bool:
        """Whether ``entry`` still names a file geplug wrote, untouched, inside a PROF_* dir."""
        parts = entry.rel.replace("\\", "/").split("/")
        if os.path.isabs(entry.rel) or ".." in parts or len(parts) < 2:
            return False
        if not PATTERNS["prof_dir"].match(parts[0]):
            return False
        full = os.path.join(self.output, entry.rel)
        try:
            st = os.lstat(full)
        except OSError:
            return False
        if os.path.islink(full) or not os.path.isfile(full):
            return False
        return st.st_size == entry.size and st.st_mtime_ns == entry.mtime_ns

    # -- writing -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _flock(self, *, exclusive: bool) -> Iterator[None]:
        """Hold ``fcntl.flock`` on the manifest's lock file (unlocked where that fails)."""
        fd = -1
        if fcntl is not None:
            try:
                fd = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
                fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            except OSError:
                if fd >= 0:
                    os.close(fd)
                fd = -1
        try:
            yield
        finally:
            if fd >= 0:
                os.close(fd)  # releases the lock

    def _append(self, record: dict[str, object]) -> None:
        """Append one record; when the disk refuses, the file stays unrecorded (so it is never
        aged out: the safe side)."""
        line = json.dumps(record, separators=(",", ":")) + "\n"
        try:
            with self._flock(exclusive=False):
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    os.write(fd, line.encode("utf-8"))
                finally:
                    os.close(fd)
        except OSError:
            pass

    def _compact(self) -> None:
        """Rewrite the manifest with only the live records.

        Under the exclusive lock the file is read again (not this instance's snapshot), so
        lines other runs appended since this one loaded it are kept.
        """
        tmp = ""
        try:
            with self._flock(exclusive=True):
                entries, finished, _lines = self._replay(self._records())
                fd, tmp = mkstemp_near(self.path)
                with open(fd, "w", encoding="utf-8") as fh:
                    for e in entries.values():
                        fh.write(json.dumps({"op": "add", "path": e.rel, "size": e.size,
                                             "mtime_ns": e.mtime_ns},
                                            separators=(",", ":")) + "\n")
                    runs = {_run_of(rel) for rel in entries}
                    for run in sorted(finished & runs):
                        fh.write(json.dumps({"op": "finished", "run": run},
                                            separators=(",", ":")) + "\n")
                os.replace(tmp, self.path)
        except OSError:
            if tmp:
                with contextlib.suppress(OSError):
                    os.remove(tmp)

    def finish(self) -> None:
        """Record that this run is complete: from now on later runs may age its files out."""
        with self._lock:
            if self.finished:
                return
            self.finished = True
            self._append({"op": "finished", "run": self.run.replace("\\", "/")})

    def add(self, path: str, *, ageable: bool) -> Entry | None:
        """Record a completed file of this run; ``None`` when it vanished meanwhile."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        rel = os.path.relpath(os.path.abspath(path), self.output)
        entry = Entry(rel, st.st_size, st.st_mtime_ns, ageable)
        with self._lock:
            self._entries.pop(rel, None)
            self._entries[rel] = entry
            self._append({"op": "add", "path": rel, "size": entry.size,
                          "mtime_ns": entry.mtime_ns})
        return entry

    def remove(self, entry: Entry) -> bool:
        """Delete the file of ``entry`` if it is still exactly geplug's; True when deleted."""
        with self._lock:
            ours = self._is_ours(entry)
            if ours:
                try:
                    os.remove(os.path.join(self.output, entry.rel))
                except FileNotFoundError:
                    pass
                except OSError:
                    return False
            self._entries.pop(entry.rel, None)
            self._append({"op": "del", "path": entry.rel})
        if ours:
            self._prune_dirs(entry.rel)
        return ours

    def _prune_dirs(self, rel: str) -> None:
        """Once an earlier run has no file left, remove its directories that are empty.

        ``os.rmdir`` only removes empty directories, so a user's file keeps its folders.
        """
        run = rel.replace("\\", "/").split("/")[0]
        if run == self.run.replace("\\", "/"):
            return
        with self._lock:
            if any(r.replace("\\", "/").startswith(run + "/") for r in self._entries):
                return
        top = os.path.join(self.output, run)
        for folder, _dirs, _files in os.walk(top, topdown=False):
            try:
                os.rmdir(folder)
            except OSError:
                continue

    # -- queries -----------------------------------------------------------------------------

    def entries(self) -> list[Entry]:
        """Every file geplug wrote here that is still present, oldest first."""
        with self._lock:
            return list(self._entries.values())

    @property
    def total_bytes(self) -> int:
        """Bytes of those files."""
        with self._lock:
            return sum(e.size for e in self._entries.values())
