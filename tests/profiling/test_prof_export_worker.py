"""A large export writes the msprof database in a forked worker beside the text files."""

from __future__ import annotations

import glob
import os
import sqlite3

import pytest
from prof_helpers import OPS, drive, make_system, prof_dir

from geplug.errors import ProfilingError
from geplug.events import GraphEvent, RunInfo
from geplug.profiling import export as export_mod
from geplug.profiling.msprof_db import MsprofDb

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

START_US = 1_700_000_000_000_000.0


def _run(manager, out, monkeypatch, min_tasks: int) -> str:
    monkeypatch.setattr(export_mod, "PARALLEL_MIN_TASKS", min_tasks)
    system = make_system(manager, out, task_time="l1", training_trace="on",
                         sys_hardware_mem_freq="50")
    # a loaded model holding HBM: the memory tables have rows too
    system.emit_profile(GraphEvent(run=RunInfo(system=system, model_name="held", model_id=2,
                                               step=-1), ops=OPS, memory_bytes=1 << 30))
    drive(system, 4, start=START_US, gap_us=20_000.0)
    system.shutdown()
    return prof_dir(out)


def _tables(prof: str) -> dict[str, list[tuple[object, ...]]]:
    (path,) = glob.glob(os.path.join(prof, "msprof_*.db"))
    conn = sqlite3.connect(path)
    try:
        names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {n: conn.execute(f"SELECT * FROM {n} ORDER BY rowid").fetchall() for n in names}
    finally:
        conn.close()


def test_the_worker_database_equals_the_one_process_database(manager, tmp_path, monkeypatch):
    one = _tables(_run(manager, tmp_path / "one", monkeypatch, 10**12))
    forked = _tables(_run(manager, tmp_path / "forked", monkeypatch, 0))
    assert forked == one
    assert len(one["TASK"]) > 10 and len(one["TASK_PMU_INFO"]) > len(one["TASK"])
    assert one["NPU_MEM"] and one["NPU_MODULE_MEM"]


def test_a_failing_worker_is_a_clear_error_and_leaves_no_database(manager, tmp_path,
                                                                  monkeypatch):
    def full(self: MsprofDb) -> str:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(MsprofDb, "commit", full)  # the forked child inherits the patch
    with pytest.raises(ProfilingError, match=r"msprof database .*No space left on device"):
        _run(manager, tmp_path, monkeypatch, 0)
    prof = prof_dir(tmp_path)
    assert not glob.glob(os.path.join(prof, "*.db*")) and not glob.glob(
        os.path.join(prof, ".*tmp"))
    assert glob.glob(os.path.join(prof, "mindstudio_profiler_output", "op_summary_*.csv"))
