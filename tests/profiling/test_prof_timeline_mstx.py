"""The Chrome-trace timeline and geplug.mstx markers (formats.md §6.6)."""

from __future__ import annotations

import time

from prof_helpers import drive, make_system, out_file, read_csv, run, timeline

from geplug import mstx
from geplug.runtime import api


def test_timeline_is_a_json_array_of_trace_events(manager, tmp_path):
    run(manager, tmp_path, hccl="on", runtime_api="on")
    events = timeline(tmp_path)
    assert isinstance(events, list) and events
    for e in events:
        assert {"ph", "name", "pid", "tid"} <= set(e)
        if e["ph"] == "X":
            assert isinstance(e["ts"], str) and float(e["ts"]) > 0
            assert isinstance(e["dur"], (int, float))


def test_every_process_used_has_process_name_metadata(manager, tmp_path):
    run(manager, tmp_path, hccl="on", runtime_api="on")
    events = timeline(tmp_path)
    named = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert {e["pid"] for e in events} <= named
    names = {e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert {"Ascend Hardware", "CANN"} <= names


def test_device_kernels_carry_msprof_args(manager, tmp_path):
    run(manager, tmp_path)
    kernel = next(e for e in timeline(tmp_path) if e.get("cat") == "kernel")
    assert {"Model Id", "Task Type", "Physic Stream Id", "Task Id", "Aicore Time(ms)",
            "Total Cycle"} <= set(kernel["args"])


def _with_current(system):
    api._current.append(system)
    return system


def test_mstx_marks_and_ranges_reach_timeline_and_msprof_tx(manager, tmp_path):
    system = _with_current(make_system(manager, tmp_path, msproftx="on"))
    try:
        drive(system, 1)
        mstx.mark("checkpoint")
        with mstx.range("train-loop"):
            time.sleep(0.01)
    finally:
        system.shutdown()
    header, rows = read_csv(tmp_path, "msprof_tx")
    assert header[0] == "Device_id" and "message" in header
    msgs = {r[header.index("message")]: r for r in rows}
    assert set(msgs) == {"checkpoint", "train-loop"}
    rng = msgs["train-loop"]
    span = float(rng[header.index("End_time(us)")]) - float(rng[header.index("Start_time(us)")])
    assert span >= 10_000
    marks = [e for e in timeline(tmp_path) if e.get("cat") == "MsTx"]
    assert {e["ph"] for e in marks} == {"i", "X"}


def test_mstx_is_a_noop_when_msproftx_is_off(manager, tmp_path):
    system = _with_current(make_system(manager, tmp_path))
    try:
        drive(system, 1)
        mstx.mark("ignored")
        assert mstx.range_start("ignored") == 0
    finally:
        system.shutdown()
    assert out_file(tmp_path, "msprof_tx") is None
    assert not [e for e in timeline(tmp_path) if e.get("cat") == "MsTx"]


def test_mstx_without_a_system_does_nothing():
    assert not api._current
    mstx.mark("nothing")
    with mstx.range("nothing") as rid:
        assert rid == 0
