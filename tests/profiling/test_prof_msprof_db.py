"""msprof_{ts14}.db: the schema the analysers query, filled from the same records as the CSVs."""

from __future__ import annotations

import glob
import itertools
import os
import re
import sqlite3
from typing import Any

import pytest
from prof_helpers import DUR, drive, make_system, prof_dir, read_csv, run

from geplug.profiling import msprof_db


def _db(out: Any) -> sqlite3.Connection:
    (path,) = glob.glob(os.path.join(prof_dir(out), "msprof_*.db"))
    return sqlite3.connect(path)


def _q(conn: sqlite3.Connection, sql: str) -> list[tuple[Any, ...]]:
    return conn.execute(sql).fetchall()


def test_every_profiled_run_writes_the_db_with_the_msprof_name(manager, tmp_path):
    run(manager, tmp_path)
    names = os.listdir(prof_dir(tmp_path))
    dbs = [n for n in names if n.endswith(".db")]
    assert len(dbs) == 1 and re.match(r"^msprof_\d{14}\.db$", dbs[0])  # formats.md §6.8


def test_db_has_every_documented_table_with_its_columns(manager, tmp_path):
    run(manager, tmp_path)
    conn = _db(tmp_path)
    for table, cols in msprof_db.SCHEMA.items():
        got = [r[1] for r in _q(conn, f"PRAGMA table_info({table})")]
        assert got == [c.split()[0] for c in cols.split(", ")], table
    assert ("TaskIndex",) in _q(conn, "SELECT name FROM sqlite_master WHERE type='index'")


def test_task_and_compute_rows_carry_the_op_summary_numbers(manager, tmp_path):
    run(manager, tmp_path, task_time="l1")
    header, rows = read_csv(tmp_path, "op_summary")
    conn = _db(tmp_path)
    got = _q(conn, """
        SELECT n.value, t.startNs, t.endNs - t.startNs, s.value
        FROM COMPUTE_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId
        JOIN STRING_IDS n ON n.id = c.name JOIN STRING_IDS s ON s.id = c.inputShapes
        ORDER BY t.startNs""")
    csv_rows = [r for r in rows if r[header.index("Op Name")] != "allreduce1"]
    assert len(got) == len(csv_rows) == 4 * 3
    for (name, start, dur, shapes), row in zip(got, csv_rows, strict=True):
        assert name == row[header.index("Op Name")]
        assert f"{start // 1000}.{start % 1000:03d}\t" == row[header.index("Task Start Time(us)")]
        assert f"{dur // 1000}.{dur % 1000:03d}" == row[header.index("Task Duration(us)")]
        assert shapes == row[header.index("Input Shapes")] == '"128,256;256,512"'
    assert {r[1] for r in got} and all(d == DUR[n] * 1000 for n, _, d, _ in got)


def test_strings_are_interned_once(manager, tmp_path):
    run(manager, tmp_path)
    conn = _db(tmp_path)
    values = [v for (v,) in _q(conn, "SELECT value FROM STRING_IDS")]
    assert len(values) == len(set(values)) and "conv1" in values


def test_communication_tasks_fill_the_communication_tables_not_compute(manager, tmp_path):
    run(manager, tmp_path, hccl="on")
    conn = _db(tmp_path)
    ops = _q(conn, """SELECT n.value, o.endNs - o.startNs, g.value FROM COMMUNICATION_OP o
                      JOIN STRING_IDS n ON n.id = o.opName JOIN STRING_IDS g ON
                      g.id = o.groupName""")
    assert ops == [("allreduce1", 50_000, "hccl_world_group")] * 3
    tasks = _q(conn, "SELECT COUNT(*) FROM COMMUNICATION_TASK_INFO c JOIN TASK t "
                     "ON t.globalTaskId = c.globalTaskId")
    assert tasks == [(3,)]
    names = _q(conn, "SELECT s.value FROM COMPUTE_TASK_INFO c JOIN STRING_IDS s ON "
                     "s.id = c.name")
    assert ("allreduce1",) not in names


def test_each_task_has_its_launch_in_cann_api_by_connection_id(manager, tmp_path):
    run(manager, tmp_path)
    conn = _db(tmp_path)
    pairs = _q(conn, """SELECT a.startNs, a.endNs, t.startNs FROM TASK t JOIN CANN_API a
                        ON a.connectionId = t.connectionId JOIN STRING_IDS s ON s.id = a.name
                        WHERE s.value = 'launch'""")
    assert len(pairs) == 5 * 3
    assert all(ls < le <= ts + 1 for ls, le, ts in pairs)
    ends = sorted(pairs)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ends))  # one host thread


def test_pmu_values_are_per_task_with_times_in_ns(manager, tmp_path):
    run(manager, tmp_path, task_time="l1", aic_metrics="PipeUtilization")
    conn = _db(tmp_path)
    rows = dict(_q(conn, """SELECT s.value, p.value FROM TASK_PMU_INFO p
                            JOIN STRING_IDS s ON s.id = p.name
                            JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = p.globalTaskId
                            JOIN STRING_IDS n ON n.id = c.name
                            WHERE n.value = 'conv1' AND p.globalTaskId = 0"""))
    header, csv_rows = read_csv(tmp_path, "op_summary")
    assert rows["aic_total_time"] == pytest.approx(
        float(csv_rows[0][header.index("aicore_time(us)")]) * 1000)
    assert "mac_ratio" in rows


def test_markers_steps_and_session_info_are_recorded(manager, tmp_path):
    import geplug.mstx as mstx

    system = make_system(manager, tmp_path, msproftx="on", training_trace="on")
    from geplug.runtime import api

    api._current.append(system)
    try:
        mstx.mark("hello")
    finally:
        api._current.remove(system)
    drive(system, 2)
    system.shutdown()
    conn = _db(tmp_path)
    assert _q(conn, "SELECT s.value, e.eventType FROM MSTX_EVENTS e JOIN STRING_IDS s ON "
                    "s.id = e.message") == [("hello", 0)]
    steps = _q(conn, "SELECT id, endNs - startNs > 0 FROM STEP_TIME")
    assert steps == [(1, 1), (2, 1)]
    assert _q(conn, "SELECT COUNT(*) FROM SESSION_TIME_INFO WHERE endTimeNs >= startTimeNs")\
        == [(1,)]
    assert _q(conn, "SELECT rankId, deviceId FROM RANK_DEVICE_MAP") == [(-1, 0)]


def test_a_failing_export_leaves_no_partial_db(manager, tmp_path, monkeypatch):
    from geplug.profiling import task_export

    def boom(self: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(task_export.TaskPass, "run", boom)
    with pytest.warns(Warning):
        run(manager, tmp_path)
    leftovers = [n for n in os.listdir(prof_dir(tmp_path)) if ".db" in n]
    assert leftovers == []
