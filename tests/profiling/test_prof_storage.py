"""storage_limit ageing and the low-disk stop, with a simulated disk."""

from __future__ import annotations

import glob
import os
import time

import pytest
from prof_helpers import OPS, drive, make_system, out_file, prof_dir

from geplug.errors import ProfilingError
from geplug.profiling import session as session_mod
from geplug.profiling import storage
from geplug.profiling.manifest import Manifest
from geplug.profiling.storage import ProfilingStorageWarning


@pytest.fixture
def small_disk(monkeypatch):
    """1 "MB" = 1 KiB and 1 GiB free: storage_limit 200MB means 200 KiB."""
    monkeypatch.setattr(storage, "MB", 1024)
    monkeypatch.setattr(session_mod, "SLICE_BYTES", 8 * 1024)
    monkeypatch.setattr(storage, "disk_free", lambda path: 1 << 30)


def _raw(out):
    return sorted(glob.glob(os.path.join(prof_dir(out), "device_0", "data",
                                         "task_time.data.0.slice_*")))


def test_storage_limit_deletes_the_oldest_raw_files_only(manager, tmp_path, small_disk):
    user_file = tmp_path / "keep_me.txt"
    user_file.write_text("not geplug's")
    system = make_system(manager, tmp_path, storage_limit="200MB")
    with pytest.warns(ProfilingStorageWarning, match="storage_limit"):
        drive(system, 2000, api=False)
    remaining = _raw(tmp_path)  # during collection
    indexes = sorted(int(p.rsplit("_", 1)[1]) for p in remaining)
    assert indexes[0] > 0  # slice_0 (the oldest) was aged out
    assert indexes == list(range(indexes[0], indexes[-1] + 1))  # newest kept, in order
    written = sum(os.path.getsize(p) for p in remaining)
    assert written <= 200 * storage.MB
    system.shutdown()
    assert user_file.read_text() == "not geplug's"
    assert os.path.isfile(os.path.join(prof_dir(tmp_path), "device_0", "info.json.0"))
    assert out_file(tmp_path, "op_summary") is not None


def test_without_storage_limit_nothing_is_deleted(manager, tmp_path, small_disk):
    system = make_system(manager, tmp_path)
    drive(system, 300, api=False)
    system.shutdown()
    indexes = [int(p.rsplit("_", 1)[1]) for p in _raw(tmp_path)]
    assert sorted(indexes) == list(range(len(indexes)))


def test_low_disk_stops_collection_and_keeps_written_files_readable(manager, tmp_path,
                                                                    monkeypatch, small_disk):
    free = {"bytes": 1 << 30}
    monkeypatch.setattr(storage, "disk_free", lambda path: free["bytes"])
    system = make_system(manager, tmp_path)
    drive(system, 100, api=False)
    free["bytes"] = 10 * storage.MB  # 10 "MB": below the 20 MB floor
    with pytest.warns(ProfilingStorageWarning, match="stopped"):
        drive(system, 300, api=False)
        system.shutdown()
    raw = _raw(tmp_path)
    assert raw
    sizes = [os.path.getsize(p) for p in raw]
    assert all(size % 40 == 0 for size in sizes)  # whole five-float64 task records only
    assert sum(sizes) // 40 < 400 * 5  # collection stopped before the end of the run
    assert out_file(tmp_path, "op_summary") is None  # no summaries on a full disk


def test_nothing_is_written_when_the_disk_is_low_at_start(manager, tmp_path, monkeypatch):
    monkeypatch.setattr(storage, "disk_free", lambda path: 5 * 1024 * 1024)
    system = make_system(manager, tmp_path)
    with pytest.warns(ProfilingStorageWarning, match="not collected"):
        drive(system, 2)
    system.shutdown()
    assert not glob.glob(os.path.join(str(tmp_path), "PROF_*"))


def test_malformed_storage_limit_is_a_clear_error(manager, tmp_path):
    system = make_system(manager, tmp_path, storage_limit="500mb")
    with pytest.raises(ProfilingError, match="storage_limit = '500mb'"):
        drive(system, 1)


def _all_files(root):
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs}


def _first_run(manager, out, steps=400):
    system = make_system(manager, out)
    drive(system, steps, api=False)
    system.shutdown()
    return prof_dir(out)


def test_the_manifest_lists_every_file_geplug_wrote_and_nothing_else(manager, tmp_path):
    (tmp_path / "user.txt").write_text("mine")
    root = _first_run(manager, tmp_path, steps=2)
    manifest = Manifest(str(tmp_path), str(tmp_path / "PROF_000000_00000000000000000_X"))
    listed = {os.path.join(str(tmp_path), e.rel) for e in manifest.entries()}
    on_disk = {os.path.join(root, f) for f in _all_files(root)}
    assert listed == on_disk
    assert str(tmp_path / "user.txt") not in listed


def test_storage_limit_ages_out_earlier_runs_first_and_never_a_users_file(manager, tmp_path,
                                                                          small_disk):
    old = _first_run(manager, tmp_path)
    (tmp_path / "keep_me.txt").write_text("not geplug's")
    (tmp_path / "PROF_000001_20000101000000000_USERSOWNDIRECTORY").mkdir()
    user_in_old = os.path.join(old, "notes.txt")
    with open(user_in_old, "w") as fh:
        fh.write("my notes about this run")
    time.sleep(0.01)  # a distinct PROF_* name for the second run
    system = make_system(manager, tmp_path, storage_limit="200MB")
    with pytest.warns(ProfilingStorageWarning, match="storage_limit"):
        drive(system, 400, api=False)
        system.shutdown()
    new = [p for p in glob.glob(os.path.join(str(tmp_path), "PROF_*"))
           if p != old and "USERSOWN" not in p]
    assert len(new) == 1
    assert (tmp_path / "keep_me.txt").read_text() == "not geplug's"
    assert (tmp_path / "PROF_000001_20000101000000000_USERSOWNDIRECTORY").is_dir()
    assert _all_files(old) == {"notes.txt"}  # every geplug file of the old run aged out
    assert os.path.isfile(os.path.join(new[0], "device_0", "info.json.0"))
    summary = glob.glob(os.path.join(new[0], "mindstudio_profiler_output", "op_summary_*.csv"))
    assert summary


def test_a_file_changed_after_geplug_wrote_it_is_never_aged_out(manager, tmp_path,
                                                                small_disk):
    old = _first_run(manager, tmp_path)
    edited = glob.glob(os.path.join(old, "mindstudio_profiler_output", "op_summary_*.csv"))[0]
    with open(edited, "a") as fh:
        fh.write("# my annotation\n")
    time.sleep(0.01)
    system = make_system(manager, tmp_path, storage_limit="200MB")
    with pytest.warns(ProfilingStorageWarning):
        drive(system, 400, api=False)
        system.shutdown()
    assert os.path.isfile(edited)
    assert not glob.glob(os.path.join(old, "device_0", "data", "task_time.data.0.slice_0"))


def test_a_refused_write_stops_collection_without_failing_the_run(manager, tmp_path,
                                                                 monkeypatch):
    system = make_system(manager, tmp_path)
    drive(system, 2)
    from geplug.profiling.plugin import session_for

    session = session_for(system)
    assert session is not None

    def full(line):
        raise OSError(28, "No space left on device")

    session.tasks.tasks.flush()
    monkeypatch.setattr(session.tasks.ops._fh, "write", full)
    new_op = OPS[0].__class__(name="late_op", op_type="Add", task_id=99)
    with pytest.warns(ProfilingStorageWarning, match="No space left"):
        drive(system, 2, ops=(*OPS, new_op))  # no exception reaches the model run
    system.shutdown()
    assert os.path.getsize(_raw(tmp_path)[0]) == 2 * 5 * 40
