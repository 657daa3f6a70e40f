"""Robustness of the collectors: closed logs, the sampler thread, mstx, shared outputs, options."""

from __future__ import annotations

import glob
import json
import os
import threading

import pytest
from prof_helpers import card, drive, make_system

from geplug import mstx
from geplug.config.rules import profiling as rules
from geplug.errors import ProfilingError
from geplug.profiling import host_sampler, layout, plugin
from geplug.profiling import mstx as prof_mstx
from geplug.profiling import options as prof_options
from geplug.profiling.host_sampler import HostSampler
from geplug.profiling.layout import AtomicFile, new_prof_name
from geplug.profiling.manifest import MANIFEST_NAME, Manifest
from geplug.profiling.rawlog import RawLog
from geplug.profiling.records import RecordLog
from geplug.profiling.storage import ProfilingStorageWarning, StorageGuard
from geplug.runtime import api


def _guard(tmp_path, index=1):
    root = os.path.join(str(tmp_path), new_prof_name(index=index)[0])
    os.makedirs(root)
    return StorageGuard(str(tmp_path), root, 0), root


# -- closed logs (item 1) ----------------------------------------------------------------------


def test_a_raw_log_write_after_close_leaves_the_last_slice_intact(tmp_path):
    guard, root = _guard(tmp_path)
    log = RawLog(root, "api_event", 0, guard)
    log.write("first\n")
    log.close()
    log.write("late\n")
    log.close()
    assert [os.path.basename(p) for p in log.paths()] == ["api_event.data.0.slice_0"]
    assert list(log.lines()) == ["first\n"]
    assert log.closed and log.count == 1


def test_a_record_log_append_after_close_writes_nothing(tmp_path):
    guard, root = _guard(tmp_path)
    log = RecordLog(root, "task_time", 0, guard, fields=2, slice_bytes=1 << 20)
    log.append((1, 2))
    log.close()
    log.append((3, 4))
    log.flush()
    log.close()
    assert len(log.paths()) == 1
    assert list(log.records()) == [(1, 2)]


# -- the host sampler thread (item 2) ----------------------------------------------------------


def test_a_failing_first_psutil_call_ends_sampling_with_a_notice(tmp_path, monkeypatch):
    pytest.importorskip("psutil")
    guard, root = _guard(tmp_path)
    raised: list[object] = []
    monkeypatch.setattr(threading, "excepthook", raised.append)

    def broken(self, proc):
        raise RuntimeError("counters gone")

    monkeypatch.setattr(HostSampler, "_io", broken)
    sampler = HostSampler(("cpu",), (), 50, RawLog(root, "host_sample", 0, guard))
    sampler.start()
    assert sampler._thread is not None
    sampler._thread.join(5)
    sampler.stop()
    assert raised == []
    assert any("RuntimeError: counters gone" in n for n in sampler.notices)


def test_a_sampler_thread_outliving_stop_is_noted_and_can_no_longer_write(tmp_path,
                                                                          monkeypatch):
    pytest.importorskip("psutil")
    guard, root = _guard(tmp_path)
    entered, release = threading.Event(), threading.Event()

    def stuck(self, proc, last):
        entered.set()
        release.wait(5)
        return {"ts": 1.0}

    monkeypatch.setattr(HostSampler, "_sample", stuck)
    monkeypatch.setattr(host_sampler, "JOIN_TIMEOUT_S", 0.05)
    log = RawLog(root, "host_sample", 0, guard)
    sampler = HostSampler(("cpu",), (), 50, log)
    sampler.start()
    thread = sampler._thread
    assert thread is not None and entered.wait(5)
    sampler.stop()
    assert any("did not stop" in n for n in sampler.notices)
    assert log.closed
    log.write("late\n")
    release.set()
    thread.join(5)
    assert log.count == 0 and log.paths() == []


# -- mstx ranges never ended (item 3) ----------------------------------------------------------


def test_unended_mstx_ranges_are_dropped_with_one_warning_at_shutdown(manager, tmp_path):
    system = make_system(manager, tmp_path, msproftx="on")
    api._current.append(system)
    try:
        drive(system, 1)
        ids = [mstx.range_start("open-a"), mstx.range_start("open-b")]
        assert all(ids)
        with pytest.warns(prof_mstx.MstxWarning, match="2 geplug.mstx range") as caught:
            system.shutdown()
    finally:
        if system in api._current:
            api._current.remove(system)
    assert len([w for w in caught if issubclass(w.category, prof_mstx.MstxWarning)]) == 1
    assert system.id not in prof_mstx._open
    assert not any(rid in prof_mstx._owner for rid in ids)


# -- plugin: closed systems, unwritable output (item 4) ----------------------------------------


def test_a_closed_system_never_starts_a_collection(manager, tmp_path):
    system = make_system(manager, tmp_path)
    system.shutdown()
    assert plugin.session_for(system) is None
    assert system.id not in plugin._sessions
    assert not glob.glob(os.path.join(str(tmp_path), "PROF_*"))


def test_an_output_that_cannot_be_created_is_a_warning_not_an_exception(manager, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory\n")
    system = make_system(manager, blocker / "sub")
    try:
        with pytest.warns(ProfilingStorageWarning, match="cannot create the profiling output"):
            drive(system, 1)
        assert plugin._sessions.get(system.id) is None
    finally:
        system.shutdown()


# -- unique temporary names (item 5) -----------------------------------------------------------


def test_two_writers_of_one_path_use_distinct_temporary_files(tmp_path):
    path = str(tmp_path / "summary.json")
    first, second = AtomicFile(path), AtomicFile(path)
    with first as fh1:
        fh1.write("first")
        with second as fh2:
            fh2.write("second")
        assert first.tmp != second.tmp
    with open(path, encoding="utf-8") as fh:
        assert fh.read() == "first"
    assert os.listdir(tmp_path) == ["summary.json"]


def test_atomic_files_get_the_usual_permissions(tmp_path):
    path = str(tmp_path / "info.json")
    layout.write_text(path, "{}")
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~umask


# -- the manifest of a shared output (item 6) --------------------------------------------------


def _file(tmp_path, run, name, size=100):
    folder = os.path.join(str(tmp_path), run, "device_0", "data")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    with open(path, "wb") as fh:
        fh.write(b"x" * size)
    return path


def test_files_of_a_run_still_collecting_are_not_ageable_by_another(tmp_path):
    run_a, run_b = new_prof_name(index=1)[0], new_prof_name(index=2)[0]
    first = Manifest(str(tmp_path), os.path.join(str(tmp_path), run_a))
    first.add(_file(tmp_path, run_a, "slice_0"), ageable=True)
    second = Manifest(str(tmp_path), os.path.join(str(tmp_path), run_b))
    assert [(e.rel.split("/")[0], e.ageable) for e in second.entries()] == [(run_a, False)]


def test_files_of_a_finished_run_are_ageable_by_later_runs(tmp_path):
    run_a, run_b = new_prof_name(index=1)[0], new_prof_name(index=2)[0]
    first = Manifest(str(tmp_path), os.path.join(str(tmp_path), run_a))
    first.add(_file(tmp_path, run_a, "slice_0"), ageable=True)
    first.finish()
    later = Manifest(str(tmp_path), os.path.join(str(tmp_path), run_b))
    assert [e.ageable for e in later.entries()] == [True]


def test_compaction_keeps_lines_appended_after_the_snapshot(tmp_path):
    run_a, run_b = new_prof_name(index=1)[0], new_prof_name(index=2)[0]
    first = Manifest(str(tmp_path), os.path.join(str(tmp_path), run_a))
    first.add(_file(tmp_path, run_a, "slice_0"), ageable=True)
    stale = Manifest(str(tmp_path), os.path.join(str(tmp_path), run_b))
    newer = first.add(_file(tmp_path, run_a, "slice_1"), ageable=True)
    first.finish()
    stale._compact()
    with open(os.path.join(str(tmp_path), MANIFEST_NAME), encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh]
    assert newer is not None
    assert {"op": "finished", "run": run_a} in records
    assert newer.rel in {r.get("path") for r in records}
    reread = Manifest(str(tmp_path), os.path.join(str(tmp_path), run_b))
    assert [e.ageable for e in reread.entries()] == [True, True]


def test_a_closed_session_marks_its_run_finished(manager, tmp_path):
    system = make_system(manager, tmp_path)
    drive(system, 1)
    system.shutdown()
    with open(os.path.join(str(tmp_path), MANIFEST_NAME), encoding="utf-8") as fh:
        ops = [json.loads(line)["op"] for line in fh]
    assert ops[-1] == "finished"


# -- options agree with the checker (item 7) ---------------------------------------------------


def test_storage_limit_with_a_trailing_newline_is_rejected():
    with pytest.raises(ProfilingError, match="storage_limit"):
        prof_options.parse_storage_limit("500MB\n")


def test_a_lower_case_custom_prefix_is_not_a_register_list(manager, tmp_path):
    system = make_system(manager, tmp_path, aic_metrics="custom:0x1b")
    with pytest.raises(ProfilingError, match="aic_metrics = 'custom:0x1b'"):
        prof_options.Effective.from_config(system.config, card())


def test_options_use_the_checkers_definitions():
    assert prof_options.CUSTOM_PREFIX is rules.CUSTOM
    assert prof_options.STORAGE_RE is rules.STORAGE_RE
