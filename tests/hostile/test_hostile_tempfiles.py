"""Temporary files accounted for: a dead writer's leftovers are removed by the next writer into
that directory, and nothing that is not ours is ever touched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from geplug import atomic
from geplug.atomic import HOST_TAG, TEMP_PATTERN, sweep_stale_temps, write_atomic

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX pids and kill -9")


def _dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture(autouse=True)
def _fresh_sweep_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(atomic, "_swept", set())


def test_temp_names_carry_host_pid_and_counter() -> None:
    name = atomic.temp_name("summary.json")
    match = TEMP_PATTERN.match(name)
    assert match is not None
    assert (match["name"], match["host"], int(match["pid"])) == ("summary.json", HOST_TAG,
                                                                os.getpid())
    assert atomic.temp_name("summary.json") != name


def test_the_next_writer_removes_a_dead_writers_temp_files(tmp_path: Path) -> None:
    pid = _dead_pid()
    stale = [tmp_path / f".geplug.{HOST_TAG}.{pid}.0.tmp",          # dump writer
             tmp_path / f".op_summary.csv.geplug.{HOST_TAG}.{pid}.3.tmp",  # profiling
             tmp_path / f".geplug.{pid}.7.tmp"]                       # older geplug names
    for path in stale:
        path.write_bytes(b"partial")
    write_atomic(tmp_path / "out.bin", lambda fh: fh.write(b"complete"))
    assert sorted(os.listdir(tmp_path)) == ["out.bin"]


def test_the_next_writer_removes_a_dead_writers_sqlite_journal(tmp_path: Path) -> None:
    pid = _dead_pid()
    temp = f".msprof_20260101000000.db.geplug.{HOST_TAG}.{pid}.0.tmp"
    for name in (temp, temp + "-journal", temp + "-wal", temp + "-shm"):
        (tmp_path / name).write_bytes(b"partial")
    write_atomic(tmp_path / "out.bin", lambda fh: fh.write(b"complete"))
    assert sorted(os.listdir(tmp_path)) == ["out.bin"]


def test_a_journal_of_a_live_writer_or_a_users_file_is_kept(tmp_path: Path) -> None:
    keep = [f".x.db.geplug.{HOST_TAG}.{os.getpid()}.5.tmp-journal",  # this process writes it
            f".x.db.geplug.{HOST_TAG}.1.0.tmp-journal",  # pid 1 is alive
            "results.db-journal", f".x.db.geplug.{HOST_TAG}.{_dead_pid()}.0.tmp-log"]
    for name in keep:
        (tmp_path / name).write_bytes(b"keep")
    assert sweep_stale_temps(str(tmp_path)) == []
    assert sorted(os.listdir(tmp_path)) == sorted(keep)


def test_files_that_are_not_a_dead_writers_are_kept(tmp_path: Path) -> None:
    dead = _dead_pid()
    keep = {
        f".geplug.{HOST_TAG}.{os.getpid()}.999.tmp": b"this process is writing it",
        f".geplug.{HOST_TAG}.1.0.tmp": b"pid 1 is alive",
        f".geplug.h00000000.{dead}.0.tmp": b"another machine's (shared file system)",
        f".geplug.{HOST_TAG}.{dead}.0.tmp.bak": b"a user's copy",
        "geplug.tmp": b"a user's file",
        f"notes.geplug.{HOST_TAG}.{dead}.0.tmp": b"not hidden: not our pattern",
        f".mine.{dead}.0.tmp": b"a user's hidden file",
    }
    for name, data in keep.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / f".geplug.{HOST_TAG}.{dead}.1.tmp").mkdir()  # a directory, never removed
    target = tmp_path / "elsewhere"
    target.write_bytes(b"the link's target")
    (tmp_path / f".geplug.{HOST_TAG}.{dead}.2.tmp").symlink_to(target)
    assert sweep_stale_temps(str(tmp_path)) == []
    for name, data in keep.items():
        assert (tmp_path / name).read_bytes() == data
    assert (tmp_path / f".geplug.{HOST_TAG}.{dead}.1.tmp").is_dir()
    assert target.read_bytes() == b"the link's target"


def test_a_sweep_happens_once_per_directory_per_process(tmp_path: Path) -> None:
    write_atomic(tmp_path / "a", lambda fh: fh.write(b"a"))
    late = tmp_path / f".geplug.{HOST_TAG}.{_dead_pid()}.0.tmp"
    late.write_bytes(b"x")
    write_atomic(tmp_path / "b", lambda fh: fh.write(b"b"))
    assert late.exists()  # the listing is not repeated on every write of a long run


_WRITER = textwrap.dedent("""
    import os, sys, time
    from geplug.atomic import create_temp
    fd, path = create_temp(sys.argv[1], "summary.json")
    os.write(fd, b"half a file")
    print(path, flush=True)
    time.sleep(60)
""")


def test_kill_9_mid_write_leaves_a_temp_file_the_next_run_removes(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    left = proc.stdout.readline().strip()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    assert os.path.exists(left)  # what a kill -9 leaves
    subprocess.run([sys.executable, "-c",
                    "import sys; from geplug.atomic import write_atomic; "
                    "write_atomic(sys.argv[1], lambda fh: fh.write(b'{}'))",
                    str(tmp_path / "summary.json")], check=True)
    assert sorted(os.listdir(tmp_path)) == ["summary.json"]


def test_a_dump_writer_sweeps_its_directory(tmp_path: Path) -> None:
    from geplug.dump.fileio import publish

    stale = tmp_path / f".geplug.{HOST_TAG}.{_dead_pid()}.0.tmp"
    stale.write_bytes(b"partial dump")
    final = publish(str(tmp_path), lambda n: f"Add.add.1.1.{n}", int(time.time() * 1e6),
                    [b"data"])
    assert not stale.exists() and Path(final).read_bytes() == b"data"


def test_a_profiling_writer_sweeps_its_directory(tmp_path: Path) -> None:
    from geplug.profiling.layout import write_text

    stale = tmp_path / f".info.json.geplug.{HOST_TAG}.{_dead_pid()}.0.tmp"
    stale.write_bytes(b"{")
    write_text(str(tmp_path / "info.json"), "{}")
    assert sorted(os.listdir(tmp_path)) == ["info.json"]
