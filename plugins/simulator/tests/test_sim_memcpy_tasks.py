"""Host<->device copies are MEMCPY_ASYNC device tasks with MEMCPY_INFO rows (msprof DB)."""

from __future__ import annotations

import glob
import json
import os
import sqlite3

import numpy as np
import pytest
from geplug_simulator import netbuild as nb

import geplug
from geplug.device import STREAMS
from geplug.profiling import export as export_mod

pytestmark = pytest.mark.requires_products("atlas_a2")

STEPS = 2
BATCH, WIDTH = 16, 64

_COPIES = ("SELECT m.size, e.name, t.startNs, t.endNs, t.streamId, s.value FROM MEMCPY_INFO m "
           "JOIN TASK t ON t.globalTaskId = m.globalTaskId "
           "JOIN ENUM_MEMCPY_OPERATION e ON e.id = m.memcpyOperation "
           "JOIN STRING_IDS s ON s.id = t.taskType ORDER BY t.startNs")


def _run(out, monkeypatch, min_tasks: int) -> tuple[list[tuple], list[dict], object]:
    monkeypatch.setattr(export_mod, "PARALLEL_MIN_TASKS", min_tasks)
    options = {"output": str(out), "task_time": "l1", "runtime_api": "on"}
    cfg = {"profiling_mode": True, "profiling_options": json.dumps(options)}
    with geplug.initialize_system("atlas_a2", cfg) as system:
        product = system.product
        compiled = system.compile(nb.mlp(batch=BATCH, width=WIDTH))
        results = [compiled.run({"x": np.ones((BATCH, WIDTH), np.float32)})
                   for _ in range(STEPS)]
    (prof,) = glob.glob(os.path.join(str(out), "PROF_*"))
    (path,) = glob.glob(os.path.join(prof, "msprof_*.db"))
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(_COPIES).fetchall()
    finally:
        conn.close()
    (tl,) = glob.glob(os.path.join(prof, "mindstudio_profiler_output", "msprof_*.json"))
    with open(tl, encoding="utf-8") as fh:
        events = [e for e in json.load(fh) if e.get("name") == "MEMCPY_ASYNC"]
    return rows, events, (product, results[0])


def _expected(product, outputs) -> list[tuple[int, str, int]]:
    """(bytes, direction, duration ns) of one step's copies: the input, then each output."""
    c = product.compute

    def ns(nbytes: int) -> int:
        return round((c.host_copy_overhead_us + nbytes / (c.host_link_gbps * 1e9) * 1e6)
                     * 1000)

    feed = BATCH * WIDTH * 4
    out = [(int(np.asarray(v).nbytes), "device to host") for v in outputs.values()]
    return [(n, d, ns(n)) for n, d in [(feed, "host to device"), *out]]


@pytest.mark.parametrize("worker", [False, True], ids=["one-process", "forked-worker"])
def test_memcpy_info_rows_are_the_steps_copies_with_their_task(tmp_path, monkeypatch, worker):
    rows, events, (product, outputs) = _run(tmp_path, monkeypatch, 0 if worker else 10**12)
    want = _expected(product, outputs) * STEPS
    got = [(size, op, end - start) for size, op, start, end, _, _ in rows]
    assert got == want
    assert {(r[4], r[5]) for r in rows} == {(STREAMS["copy"], "MEMCPY_ASYNC")}
    # one timeline event per copy, on the copy stream, with its bytes and direction
    shown = [(e["args"]["size(Byte)"], e["args"]["Memcpy Direction"], round(e["dur"] * 1000))
             for e in events]
    assert shown == got and {e["tid"] for e in events} == {STREAMS["copy"]}


def test_a_copy_event_with_an_unknown_direction_is_refused_naming_it():
    from geplug.events import ApiCall, RunInfo

    with pytest.raises(ValueError, match=r"ApiCall.copy=\('toNPU', 8\).*'H2D'"):
        ApiCall(run=RunInfo(system=None, model_name="m", model_id=1, step=0), name="memcpy",
                start_us=0.0, duration_us=1.0, copy=("toNPU", 8))
