"""torch_npu's memory views of a collection (``profile_memory=True``), derived from ``PROF_*``.

torch_npu asks CANN for operator memory (task_memory) and the device memory (sys_hardware_mem
at 50 Hz) and rewrites what CANN writes (Ascend/pytorch ``prof_view/_memory_view_parser.py``,
``prof_db_parse/_memory_db_parser.py``, the beans under ``prof_bean/``); geplug does the same
from the ``PROF_*`` files and database its core writers produced from the memory plans, so the
two layers never disagree:

- ``operator_memory.csv``: one row per GE allocation, named ``cann::<op>``, sizes in KB and pool
  totals in MB, Release Time = allocation + duration (the Active / Stream columns are empty:
  GE has no caching-allocator streams);
- ``memory_record.csv``: the ``APP`` rows of npu_mem (reserved MB), then each GE pool record as
  a ``GE`` row followed by its ``PTA+GE`` row (no PTA allocator records: the compiled graphs'
  memory is GE's);
- ``npu_module_mem.csv``: npu_module_mem with Total Reserved in MB;
- the DB export's ``OP_MEMORY`` and ``MEMORY_RECORD`` tables (bytes, ns), from ``NPU_OP_MEM``.
"""

from __future__ import annotations

import csv
import sqlite3
from collections.abc import Callable
from typing import Any

from geplug.profiling.layout import fmt_ns
from geplug.profiling.reader import output_file

__all__ = [
    "MEMORY_RECORD_HEADER",
    "NPU_MODULE_MEM_HEADER",
    "OPERATOR_MEMORY_HEADER",
    "memory_csvs",
    "memory_tables",
]

OPERATOR_MEMORY_HEADER = [
    "Name", "Size(KB)", "Allocation Time(us)", "Release Time(us)", "Active Release Time(us)",
    "Duration(us)", "Active Duration(us)", "Allocation Total Allocated(MB)",
    "Allocation Total Reserved(MB)", "Allocation Total Active(MB)",
    "Release Total Allocated(MB)", "Release Total Reserved(MB)", "Release Total Active(MB)",
    "Stream Ptr", "Device Type",
]
MEMORY_RECORD_HEADER = ["Component", "Timestamp(us)", "Total Allocated(MB)",
                        "Total Reserved(MB)", "Total Active(MB)", "Stream Ptr", "Device Type"]
NPU_MODULE_MEM_HEADER = ["Component", "Timestamp(us)", "Total Reserved(MB)", "Device"]
_OP_MEMORY_COLUMNS = (
    "name INTEGER, size INTEGER, allocationTime INTEGER, releaseTime INTEGER, "
    "activeReleaseTime INTEGER, duration INTEGER, activeDuration INTEGER, "
    "allocationTotalAllocated NUMERIC, allocationTotalReserved NUMERIC, "
    "allocationTotalActive NUMERIC, releaseTotalAllocated NUMERIC, "
    "releaseTotalReserved NUMERIC, releaseTotalActive NUMERIC, streamPtr INTEGER, "
    "deviceId INTEGER")
_MEMORY_RECORD_COLUMNS = ("component INTEGER, timestamp INTEGER, totalAllocated NUMERIC, "
                          "totalReserved NUMERIC, totalActive NUMERIC, streamPtr INTEGER, "
                          "deviceId INTEGER")
_TAB = "\t"


def _rows(prof_dirs: list[str], stem: str) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for d in prof_dirs:
        path = output_file(d, stem)
        if path is not None:
            with open(path, encoding="utf-8", newline="") as fh:
                out.extend(csv.DictReader(fh))
    return out


def _mb(kb: str) -> str:
    return "" if kb in ("", None) else repr(float(kb) / 1024)


def _ns(us: str) -> int:
    whole, _, frac = us.strip().partition(".")
    return int(whole) * 1000 + int((frac + "000")[:3])


def memory_csvs(prof_dirs: list[str]) -> dict[str, tuple[list[str], list[list[str]]]]:
    """name -> (header, rows) of the memory CSVs the collection has data for."""
    out: dict[str, tuple[list[str], list[list[str]]]] = {}
    ops = []
    for r in _rows(prof_dirs, "operator_memory"):
        alloc, dur = r["Allocation Time(us)"], r["Duration(us)"]
        release = fmt_ns(_ns(alloc) + _ns(dur)) + _TAB if alloc.strip() and dur else ""
        ops.append([f"cann::{r['Name']}", r["Size(KB)"], alloc, release, "", dur, "",
                    _mb(r["Allocation Total Allocated(KB)"]),
                    _mb(r["Allocation Total Reserved(KB)"]), "",
                    _mb(r["Release Total Allocated(KB)"]), _mb(r["Release Total Reserved(KB)"]),
                    "", "", r["Device"]])
    records = [["APP", r["timestamp(us)"], "", _mb(r["memory(KB)"]), "", "",
                f"NPU:{r['Device_id']}"]
               for r in _rows(prof_dirs, "npu_mem") if r["event"] == "APP"]
    ge = sorted(_rows(prof_dirs, "memory_record"), key=lambda r: _ns(r["Timestamp(us)"]))
    for r in ge:
        totals = [_mb(r["Total Allocated(KB)"]), _mb(r["Total Reserved(KB)"])]
        records.append([r["Component"], r["Timestamp(us)"], *totals, "", "", r["Device"]])
        if r["Component"] == "GE":
            records.append(["PTA+GE", r["Timestamp(us)"], *totals, "0", "", r["Device"]])
    if ops:
        out["operator_memory"] = (OPERATOR_MEMORY_HEADER, ops)
    if records:
        out["memory_record"] = (MEMORY_RECORD_HEADER, records)
    modules = [[r["Component"], r["Timestamp(us)"], _mb(r["Total Reserved(KB)"]), r["Device"]]
               for r in _rows(prof_dirs, "npu_module_mem")]
    if modules:
        out["npu_module_mem"] = (NPU_MODULE_MEM_HEADER, modules)
    return out


def memory_tables(conn: sqlite3.Connection, sid: Callable[[str], int]) -> None:
    """``OP_MEMORY`` and ``MEMORY_RECORD`` from the copied database's ``NPU_OP_MEM`` (none
    when it has no rows: profile_memory off)."""
    events = conn.execute(
        "SELECT m.operatorName, m.addr, t.value, m.size, m.timestampNs, m.totalAllocate, "
        "m.totalReserve, m.deviceId FROM NPU_OP_MEM m JOIN STRING_IDS t ON t.id = m.type "
        "ORDER BY m.timestampNs, m.rowid").fetchall()
    if not events:
        return
    ge, pta_ge = sid("GE"), sid("PTA+GE")
    records: list[tuple[Any, ...]] = []
    ops: list[list[Any]] = []
    open_: dict[tuple[int, int, int], int] = {}
    names = {int(i): str(v) for i, v in conn.execute("SELECT id, value FROM STRING_IDS")}
    for name, addr, kind, size, ts, alloc, reserve, dev in events:
        records.append((ge, ts, alloc, reserve, 0, None, dev))
        records.append((pta_ge, ts, alloc, reserve, 0, None, dev))
        key = (name, addr, dev)
        if kind == "allocate":
            open_[key] = len(ops)
            ops.append([sid(f"cann::{names.get(name, '')}"), size, ts, None, None, None, None,
                        alloc, reserve, None, None, None, None, None, dev])
        elif key in open_:
            row = ops[open_.pop(key)]
            row[3], row[5], row[10], row[11] = ts, ts - row[2], alloc, reserve
    conn.execute(f"CREATE TABLE IF NOT EXISTS OP_MEMORY ({_OP_MEMORY_COLUMNS})")
    conn.execute(f"CREATE TABLE IF NOT EXISTS MEMORY_RECORD ({_MEMORY_RECORD_COLUMNS})")
    conn.executemany(f"INSERT INTO OP_MEMORY VALUES ({', '.join('?' * 15)})", ops)
    conn.executemany("INSERT INTO MEMORY_RECORD VALUES (?, ?, ?, ?, ?, ?, ?)", records)

