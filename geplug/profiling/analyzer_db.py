"""``analyze/communication_analyzer.db``: msprof's analysis database (``msprof --analyze``).

msprof-analyze's cluster recipes read it next to ``msprof_{ts14}.db`` for msprof data
(``StepTraceTime`` for cluster_time_summary, ``CommAnalyzerTime`` / ``CommAnalyzerBandwidth``
/ ``CommAnalyzerMatrix`` for the communication recipes). geplug writes it from the same
records as ``analyze/communication*.json`` and the Overlap Analysis track: one StepTraceTime
row per step (µs, the overlap intervals clipped to the step), one row per communication op
and link. Without communication tasks the communication tables are present and empty, which
the recipes report as "no communication data". ``CommAnalyzerMatrix`` has msprof's columns
only (no ``op_name``: msprof-analyze renames ``hccl_op_name`` to ``op_name`` for msprof data,
and a second ``op_name`` column makes its communication_matrix recipe fail). Complete or
absent (temporary file, rename).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from geplug.profiling.layout import atomic_sqlite

__all__ = ["SCHEMA", "comm_rows", "write_analyzer_db"]

SCHEMA = {
    "StepTraceTime": ("step INTEGER, computing NUMERIC, communication_not_overlapped NUMERIC, "
                      "overlapped NUMERIC, communication NUMERIC, free NUMERIC, stage NUMERIC, "
                      "bubble NUMERIC, communication_not_overlapped_and_exclude_receive "
                      "NUMERIC, preparing NUMERIC"),
    "CommAnalyzerTime": ("hccl_op_name TEXT, group_name TEXT, start_timestamp NUMERIC, "
                         "elapse_time NUMERIC, transit_time NUMERIC, wait_time NUMERIC, "
                         "synchronization_time NUMERIC, idle_time NUMERIC, "
                         "synchronization_time_ratio NUMERIC, wait_time_ratio NUMERIC"),
    "CommAnalyzerBandwidth": ("hccl_op_name TEXT, group_name TEXT, transport_type TEXT, "
                              "transit_size NUMERIC, transit_time NUMERIC, bandwidth NUMERIC, "
                              "large_packet_ratio NUMERIC, package_size NUMERIC, "
                              "count NUMERIC, total_duration NUMERIC"),
    "CommAnalyzerMatrix": ("hccl_op_name TEXT, group_name TEXT, src_rank TEXT, "
                           "dst_rank TEXT, transport_type TEXT, transit_size NUMERIC, "
                           "transit_time NUMERIC, bandwidth NUMERIC"),
}


def comm_rows(communication: dict[str, Any], matrix: dict[str, Any]) -> tuple[
        list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The ``CommAnalyzerTime``, ``CommAnalyzerBandwidth`` and ``CommAnalyzerMatrix`` rows of
    communication.json / communication_matrix.json entries (``<op>@<group>`` keys)."""
    times, bands, links = [], [], []
    for key, info in communication.items():
        if key == "Total Op Info":
            continue
        name, _, group = key.partition("@")
        t = info["Communication Time Info"]
        times.append((name, group, t["Start Timestamp(us)"], t["Elapse Time(ms)"],
                      t["Transit Time(ms)"], t["Wait Time(ms)"], t["Synchronization Time(ms)"],
                      t["Idle Time(ms)"], t["Synchronization Time Ratio"],
                      t["Wait Time Ratio"]))
        for link, b in info["Communication Bandwidth Info"].items():
            sizes = b.get("Size Distribution") or {"0": [0, 0.0]}
            for size, (count, dur) in sizes.items():
                bands.append((name, group, link, b["Transit Size(MB)"], b["Transit Time(ms)"],
                              b["Bandwidth(GB/s)"], b["Large Packet Ratio"], float(size),
                              count, dur))
    for key, pairs in matrix.items():
        name, _, group = key.partition("@")
        for pair, m in pairs.items():
            src, _, dst = pair.partition("-")
            links.append((name, group, src, dst, m["Transport Type"], m["Transit Size(MB)"],
                          m["Transit Time(ms)"], m["Bandwidth(GB/s)"]))
    return times, bands, links


def write_analyzer_db(path: str, steps: Iterable[tuple[int, dict[str, int]]],
                      communication: dict[str, Any] | None = None,
                      matrix: dict[str, Any] | None = None) -> str:
    """Write the database at ``path`` from per-step overlap totals (ns, from
    :func:`geplug.profiling.overlap.per_step`) and the communication summaries."""
    with atomic_sqlite(path) as conn:
        for table, cols in SCHEMA.items():
            conn.execute(f"CREATE TABLE {table} ({cols})")
        rows = []
        for step, t in steps:
            comp, com = t["Computing"], t["Communication"]
            pure, free = t["Communication(Not Overlapped)"], t["Free"]
            us = [v / 1000 for v in (comp, pure, com - pure, com, free)]
            rows.append((step, *us, (comp + pure + free) / 1000, 0, pure / 1000, 0))
        conn.executemany("INSERT INTO StepTraceTime VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
        times, bands, links = comm_rows(communication or {}, matrix or {})
        conn.executemany("INSERT INTO CommAnalyzerTime VALUES (?,?,?,?,?,?,?,?,?,?)",
                         times)
        conn.executemany("INSERT INTO CommAnalyzerBandwidth VALUES (?,?,?,?,?,?,?,?,?,?)",
                         bands)
        conn.executemany("INSERT INTO CommAnalyzerMatrix VALUES (?,?,?,?,?,?,?,?)",
                         links)
    return path
