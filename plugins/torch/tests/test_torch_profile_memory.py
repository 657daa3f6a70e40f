"""profile_memory=True: torch_npu's memory files and tables, from the compiled graphs' plans."""

from __future__ import annotations

import csv
import glob
import os
import sqlite3
from decimal import Decimal

import pytest

torch = pytest.importorskip("torch")

import geplug_torch  # noqa: E402
from geplug_torch import profiler as P  # noqa: E402
from geplug_torch.profiler.memory import (  # noqa: E402
    MEMORY_RECORD_HEADER,
    NPU_MODULE_MEM_HEADER,
    OPERATOR_MEMORY_HEADER,
)
from torch_helpers import GPT, train  # noqa: E402

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")


def _collect(out, *, memory: bool):
    torch._dynamo.reset()
    torch.manual_seed(0)
    be = geplug_torch.backend(product="atlas_a2",
                              config={"precision_mode": "must_keep_origin_dtype"})
    compiled = torch.compile(GPT(layers=1), backend=be)
    exp = P._ExperimentalConfig(profiler_level=P.ProfilerLevel.Level1,
                                export_type=[P.ExportType.Text, P.ExportType.Db])
    with P.profile(activities=[P.ProfilerActivity.CPU, P.ProfilerActivity.NPU],
                   schedule=P.schedule(wait=1, warmup=0, active=1, repeat=1),
                   on_trace_ready=P.tensorboard_trace_handler(str(out), "worker0"),
                   profile_memory=memory, experimental_config=exp) as prof:
        train(compiled, 3, prof=prof)
    be.shutdown()
    (root,) = prof.outputs
    (model,) = be.models
    return root, model


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    return _collect(tmp_path_factory.mktemp("profmem"), memory=True)


def _csv(root, name):
    with open(os.path.join(root, "ASCEND_PROFILER_OUTPUT", name), encoding="utf-8",
              newline="") as fh:
        header, *rows = list(csv.reader(fh))
    return header, [dict(zip(header, r, strict=True)) for r in rows]


def _query(path, sql):
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _pt_db(root):
    return os.path.join(root, "ASCEND_PROFILER_OUTPUT", "ascend_pytorch_profiler_0.db")


def _msprof_db(root):
    (path,) = glob.glob(os.path.join(root, "PROF_*", "msprof_*.db"))
    return path


def _plan_peak(model):
    """Weights plus the largest activation peak of the model's graphs (bytes)."""
    weights = {}
    for plan in model.memory_plans:
        weights.update(dict(plan.resident))
    return sum(weights.values()) + max(p.activation_peak_bytes for p in model.memory_plans)


def test_operator_memory_csv_has_one_row_per_ge_allocation(collected):
    root, _ = collected
    header, rows = _csv(root, "operator_memory.csv")
    allocs = _query(_msprof_db(root), "SELECT COUNT(*) FROM NPU_OP_MEM m JOIN STRING_IDS s "
                                      "ON s.id = m.type WHERE s.value = 'allocate'")
    assert header == OPERATOR_MEMORY_HEADER
    assert len(rows) == allocs[0][0] > 0
    assert all(r["Name"].startswith("cann::") and r["Device Type"] == "NPU:0" for r in rows)


def test_operator_memory_release_is_allocation_plus_duration(collected):
    root, _ = collected
    _, rows = _csv(root, "operator_memory.csv")
    for r in rows:
        alloc, release, dur = (Decimal(r[k].strip()) for k in (
            "Allocation Time(us)", "Release Time(us)", "Duration(us)"))
        assert release == alloc + dur


def test_memory_record_ge_peak_is_the_plans_weights_plus_activation_peak(collected):
    root, model = collected
    header, rows = _csv(root, "memory_record.csv")
    assert header == MEMORY_RECORD_HEADER
    ge = [float(r["Total Allocated(MB)"]) for r in rows if r["Component"] == "GE"]
    assert max(ge) == pytest.approx(_plan_peak(model) / 2**20)
    assert {r["Component"] for r in rows} == {"APP", "GE", "PTA+GE"}


def test_database_op_memory_and_memory_record_match_the_csvs(collected):
    root, model = collected
    _, rows = _csv(root, "operator_memory.csv")
    db = _pt_db(root)
    ops = _query(db, "SELECT s.value, o.size, o.duration FROM OP_MEMORY o "
                     "JOIN STRING_IDS s ON s.id = o.name")
    assert sorted((n, round(size / 1024, 3)) for n, size, _ in ops) == \
        sorted((r["Name"], float(r["Size(KB)"])) for r in rows)
    peak = _query(db, "SELECT MAX(m.totalAllocated) FROM MEMORY_RECORD m "
                      "JOIN STRING_IDS s ON s.id = m.component WHERE s.value = 'GE'")
    assert peak == [(_plan_peak(model),)]


def test_npu_module_mem_csv_is_in_torch_npus_columns(collected):
    root, _ = collected
    header, rows = _csv(root, "npu_module_mem.csv")
    assert header == NPU_MODULE_MEM_HEADER and {r["Component"] for r in rows} == \
        {"GE", "RUNTIME"}
