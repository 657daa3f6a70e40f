"""storage_limit ageing and the low-disk stop, with a simulated disk."""

from __future__ import annotations

import glob
import os

import pytest
from prof_helpers import drive, make_system, out_file, prof_dir

from geplug.errors import ProfilingError
from geplug.profiling import session as session_mod
from geplug.profiling import storage
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
    for path in raw:
        with open(path) as fh:
            lines = fh.readlines()
        assert all(line.endswith("\n") and len(line.split("\t")) == 5 for line in lines)
    total = sum(len(open(p).readlines()) for p in raw)
    assert total < 400 * 5  # collection stopped before the end of the run
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
