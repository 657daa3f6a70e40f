"""Complete-or-absent files, no clash between processes, clear errors (issue 5 reliability)."""

from __future__ import annotations

import errno
import multiprocessing
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from dump_helpers import all_files
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from geplug.dump import fileio
from geplug.dump.reader import iter_dump_tree, read_dump, read_header
from geplug.errors import DumpError


def test_disk_full_stops_with_a_dump_error_and_keeps_earlier_files(
    make_system: Any, make_event: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    system = make_system(enable_dump=True)
    (first,) = system.emit_dump(make_event(system, op="a", outputs=[np.ones(64, np.float32)]))[0]
    before = Path(first).read_bytes()

    def full(fd: int, data: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fileio, "_os_write", full)
    with pytest.raises(DumpError, match="No space left on device") as info:
        system.emit_dump(make_event(system, op="b", outputs=[np.ones(64, np.float32)]))
    assert "free some space" in str(info.value) and info.value.path
    assert all_files(system.config.dump_root) == [first]
    assert Path(first).read_bytes() == before


def test_disk_full_midway_leaves_no_partial_file(make_system: Any, make_event: Any,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    system = make_system(enable_dump=True)
    real = os.write
    calls = {"n": 0}

    def half(fd: int, data: Any) -> int:
        calls["n"] += 1
        if calls["n"] > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, memoryview(data)[: max(1, len(memoryview(data)) // 2)])

    monkeypatch.setattr(fileio, "_os_write", half)
    with pytest.raises(DumpError):
        system.emit_dump(make_event(system, outputs=[np.ones(1 << 17, np.float32)]))
    assert all_files(system.config.dump_root) == []


def test_truncated_file_is_a_clear_error_naming_it(make_system: Any, make_event: Any) -> None:
    system = make_system(enable_dump=True)
    (path,) = system.emit_dump(make_event(system, outputs=[np.ones(16, np.float32)]))[0]
    with open(path, "r+b") as fh:
        fh.truncate(os.path.getsize(path) - 3)
    with pytest.raises(DumpError, match="truncated") as info:
        read_dump(path)
    assert repr(path) in str(info.value) and info.value.path == path


def test_truncated_header_is_a_clear_error(tmp_path: Any) -> None:
    path = tmp_path / "Add.Add.1.0.1700000000000000"
    path.write_bytes(b"\x40\x00\x00\x00\x00\x00\x00\x00abc")
    with pytest.raises(DumpError, match="not a complete dump file"):
        read_header(str(path))


def test_tiny_file_is_a_clear_error(tmp_path: Any) -> None:
    path = tmp_path / "x"
    path.write_bytes(b"\x01\x02")
    with pytest.raises(DumpError, match="shorter than the 8-byte header"):
        read_dump(str(path))


def test_foreign_file_is_a_clear_error(tmp_path: Any) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("this is not a dump file at all, just text\n" * 3)
    with pytest.raises(DumpError, match=r"notes\.txt"):
        read_dump(str(path))


def test_file_longer_than_its_header_says_is_rejected(make_system: Any,
                                                      make_event: Any) -> None:
    system = make_system(enable_dump=True)
    (path,) = system.emit_dump(make_event(system, outputs=[np.ones(4, np.float32)]))[0]
    with open(path, "ab") as fh:
        fh.write(b"\0")
    with pytest.raises(DumpError, match="longer than its header says"):
        read_dump(path)


def _dump_in_process(root: str, tag: int) -> None:
    import warnings

    from dump_helpers import sample_product

    from geplug.config.model import SessionConfig
    from geplug.config.resolve import resolve
    from geplug.events import DumpEvent, OpRecord, RunInfo, TensorRecord
    from geplug.plugin import PluginManager
    from geplug.runtime.system import System

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        manager = PluginManager().load()
    product = sample_product(ffts_plus=True)
    cfg = SessionConfig(enable_dump=True, dump_path=root, dump_mode="all",
                        enable_exception_dump=0)
    system = System(product=product, config=resolve(cfg, product, env={}, cwd=root),
                    manager=manager)
    record: Any = TensorRecord
    for i in range(20):
        arr = np.full(8, tag * 1000 + i, np.int32)
        system.emit_dump(DumpEvent(
            kind="data", run=RunInfo(system=system, model_name="g", model_id=1, step=0),
            op=OpRecord(name=f"op{i}", op_type="Add", task_id=i + 1),
            inputs=(record(name="x", array=arr, dtype="int32"),),
            outputs=(record(name="y", array=arr, dtype="int32"),),
            timestamp_us=1700000000000000 + i,  # identical in both processes on purpose
        ))
    system.shutdown()


def test_two_processes_dumping_into_one_path_never_clash(tmp_path: Any) -> None:
    root = str(tmp_path)
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_dump_in_process, args=(root, tag)) for tag in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    values = sorted(int(e.read().outputs[0].array[0])  # type: ignore[index]
                    for e in iter_dump_tree(root))
    assert values == sorted([1000 + i for i in range(20)] + [2000 + i for i in range(20)])


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(min_size=0, max_size=200))
def test_any_foreign_bytes_give_a_dump_error_or_a_valid_file(tmp_path: Any, blob: bytes) -> None:
    path = tmp_path / "Add.Add.1.0.1700000000000000"
    path.write_bytes(blob)
    try:
        read_dump(str(path))
    except DumpError as exc:
        assert str(path) in str(exc)


def test_every_truncation_of_a_real_file_is_a_dump_error(make_system: Any, make_event: Any,
                                                         tmp_path: Any) -> None:
    system = make_system(enable_dump=True, dump_mode="all")
    (path,) = system.emit_dump(make_event(system, inputs=[np.ones((2, 3), np.float16)],
                                          outputs=[np.arange(5, dtype=np.int64)]))[0]
    blob = Path(path).read_bytes()
    cut = tmp_path / "cut"
    for length in range(len(blob)):
        cut.write_bytes(blob[:length])
        with pytest.raises(DumpError, match="cut"):
            read_dump(str(cut))


def test_a_header_with_absurd_dims_is_a_dump_error(tmp_path: Any) -> None:
    from geplug.dump import schema

    header = schema.DumpData(version="2.0", op_name="x")
    entry = header.output.add(data_type=1, size=4)
    entry.shape.dim.extend([2**62, 2**62])
    head = header.SerializeToString()
    path = tmp_path / "Add.x.1.0.1700000000000000"
    path.write_bytes(len(head).to_bytes(8, "little") + head + b"\0" * 4)
    with pytest.raises(DumpError, match="corrupt"):
        read_dump(str(path))
