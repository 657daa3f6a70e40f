"""Faults: kill -9 at random moments of dumping and profiling writes, a full disk, concurrent
writers. Every file under its final name is complete and readable, or absent; no temporary
file of a dead writer survives the next write into its directory."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from geplug.atomic import TEMP_PATTERN

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and mounts")

_DUMPER = textwrap.dedent("""
    import sys, time
    import numpy as np
    from geplug.dump.encode import TensorPayload, encode_dump
    from geplug.dump.fileio import publish
    directory, n = sys.argv[1], 0
    while True:
        n += 1
        big = np.full((n % 7) * 20000 + 1, n, dtype=np.float32)
        chunks = encode_dump(op_name=f"op{n}", dump_time=n,
                             inputs=[TensorPayload(array=big)], outputs=[TensorPayload(array=big)])
        publish(directory, lambda k: f"Add.op{n}.{n}.1.{k}", int(time.time() * 1e6), chunks)
""")

_PROFILER = textwrap.dedent("""
    import sys
    from geplug.profiling.layout import AtomicFile
    directory, n = sys.argv[1], 0
    while True:
        n += 1
        with AtomicFile(f"{directory}/op_summary_{n:014d}.csv") as fh:
            fh.write("Op Name,Task Duration(us)\\n")
            for i in range((n % 5) * 5000 + 1):
                fh.write(f"op{i},{i}.5\\n")
            fh.write("END\\n")
""")


_DB_WRITER = textwrap.dedent("""
    import sys
    from geplug.profiling.analyzer_db import write_analyzer_db
    directory, n = sys.argv[1], 0
    steps = [(i, {"Computing": 5000, "Communication": 3000,
                  "Communication(Not Overlapped)": 1000, "Free": 200}) for i in range(20000)]
    while True:
        n += 1
        write_analyzer_db(f"{directory}/analyzer_{n:06d}.db", steps)
""")


def _kill_at_random(script: str, directory: str, seed: int) -> None:
    proc = subprocess.Popen([sys.executable, "-c", script, directory])
    deadline = time.monotonic() + 60
    while not [n for n in os.listdir(directory) if not n.startswith(".")]:
        assert proc.poll() is None and time.monotonic() < deadline, "the writer never wrote"
        time.sleep(0.01)
    time.sleep(random.Random(seed).random() * 0.5)  # a random moment of writing
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def _temps(directory: str) -> list[str]:
    return [n for n in os.listdir(directory) if TEMP_PATTERN.match(n)]


@pytest.mark.parametrize("seed", range(3))
def test_kill_9_while_dumping_leaves_complete_files_only(tmp_path: Path, seed: int) -> None:
    from geplug.dump.fileio import publish
    from geplug.dump.reader import read_dump

    _kill_at_random(_DUMPER, str(tmp_path), seed)
    finals = [n for n in os.listdir(tmp_path) if not n.startswith(".")]
    assert finals
    for name in finals:  # complete: the reader takes every one, payload size rule included
        dump = read_dump(tmp_path / name)
        assert dump.header.op_name.startswith("op")
    publish(str(tmp_path), lambda k: f"Add.next.1.1.{k}", 1, [b"x"])  # the next writer
    assert _temps(str(tmp_path)) == []


@pytest.mark.parametrize("seed", range(3))
def test_kill_9_while_profiling_leaves_complete_files_only(tmp_path: Path, seed: int) -> None:
    from geplug.profiling.layout import write_text

    _kill_at_random(_PROFILER, str(tmp_path), seed)
    for name in os.listdir(tmp_path):
        if not name.startswith("."):
            assert (tmp_path / name).read_text(encoding="utf-8").endswith("END\n"), name
    write_text(str(tmp_path / "info.json"), "{}")  # the next writer
    assert _temps(str(tmp_path)) == []


@pytest.mark.parametrize("seed", range(3))
def test_kill_9_while_writing_a_database_leaves_complete_ones_and_no_journal(
        tmp_path: Path, seed: int) -> None:
    import sqlite3

    from geplug.profiling.layout import write_text

    _kill_at_random(_DB_WRITER, str(tmp_path), seed)
    for name in os.listdir(tmp_path):
        if not name.startswith("."):
            with sqlite3.connect(f"file:{tmp_path / name}?mode=ro", uri=True) as conn:
                assert conn.execute("SELECT count(*) FROM StepTraceTime").fetchone() == (20000,)
            conn.close()
    write_text(str(tmp_path / "info.json"), "{}")  # the next writer
    assert [n for n in os.listdir(tmp_path) if n.startswith(".")] == []


@pytest.fixture
def small_disk() -> object:
    """A 256 KiB tmpfs, or a skip saying why none can be mounted here."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root; the full-disk test cannot run here")
    mount = tempfile.mkdtemp(prefix="geplug-fulldisk-")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mount],
                          capture_output=True, text=True)
    if done.returncode != 0:
        os.rmdir(mount)
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode}); "
                    "the full-disk test needs one")
    yield mount
    subprocess.run(["umount", mount], check=False)
    os.rmdir(mount)


def test_a_full_disk_stops_a_dump_cleanly(small_disk: str) -> None:
    import numpy as np

    from geplug.dump.encode import TensorPayload, encode_dump
    from geplug.dump.fileio import publish
    from geplug.dump.reader import read_dump
    from geplug.errors import DumpError

    user_file = os.path.join(small_disk, "notes.txt")
    Path(user_file).write_text("mine", encoding="utf-8")
    with pytest.raises(DumpError, match=r"No space left on device.*free some space"):
        for n in range(100):
            chunks = encode_dump(op_name=f"op{n}", dump_time=n, inputs=[
                TensorPayload(array=np.zeros(8000, dtype=np.float32))])
            publish(small_disk, lambda k, n=n: f"Add.op{n}.{n}.1.{k}", n, chunks)
    for name in os.listdir(small_disk):
        if name != "notes.txt":
            assert read_dump(os.path.join(small_disk, name)).header.op_name.startswith("op")
    assert _temps(small_disk) == []
    assert Path(user_file).read_text(encoding="utf-8") == "mine"


def test_a_full_disk_stops_a_summary_write_cleanly(small_disk: str) -> None:
    from geplug.profiling.layout import write_text

    write_text(os.path.join(small_disk, "small.txt"), "ok")
    with pytest.raises(OSError):
        write_text(os.path.join(small_disk, "huge.csv"), "x" * (1 << 20))
    assert sorted(os.listdir(small_disk)) == ["small.txt"]  # huge.csv absent, no temp file


_CONCURRENT = textwrap.dedent("""
    import sys
    from geplug.dump.fileio import publish
    from geplug.profiling.layout import write_text
    directory, who = sys.argv[1], sys.argv[2]
    for n in range(60):
        publish(directory, lambda k: f"Add.op.{n}.1.{k}", 1000 + n, [f"{who}:{n}".encode()])
        write_text(f"{directory}/summary.json", f"{who}:{n}")
""")


def test_concurrent_writers_never_lose_or_mix_files(tmp_path: Path) -> None:
    procs = [subprocess.Popen([sys.executable, "-c", _CONCURRENT, str(tmp_path), f"w{i}"])
             for i in range(4)]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    dumps = [n for n in os.listdir(tmp_path) if n.startswith("Add.")]
    contents = sorted((tmp_path / n).read_text() for n in dumps)
    assert contents == sorted(f"w{i}:{n}" for i in range(4) for n in range(60))
    assert (tmp_path / "summary.json").read_text().split(":")[1] == "59"
    assert _temps(str(tmp_path)) == []
