"""geplug_torch.profiler: torch_npu's signature, its *_ascend_pt layout, readable by geplug."""

from __future__ import annotations

import csv
import glob
import json
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

from geplug.cli.main import main  # noqa: E402
from geplug.errors import ProfilingError  # noqa: E402
from geplug.profiling.reader import find_prof_dirs, output_file  # noqa: E402

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")

FILES = ("trace_view.json", "kernel_details.csv", "operator_details.csv", "op_statistic.csv",
         "step_trace_time.csv", "api_statistic.csv", "ascend_pytorch_profiler_0.db")


def _rows(path):
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    import torch._dynamo

    torch._dynamo.reset()
    out = tmp_path_factory.mktemp("prof")
    be = geplug_torch.backend(product="atlas_a2",
                              config={"precision_mode": "must_keep_origin_dtype"})
    compiled = torch.compile(GPT(layers=1), backend=be)
    exp = P._ExperimentalConfig(profiler_level=P.ProfilerLevel.Level1,
                                export_type=[P.ExportType.Text, P.ExportType.Db])
    with P.profile(activities=[P.ProfilerActivity.CPU, P.ProfilerActivity.NPU],
                   schedule=P.schedule(wait=1, warmup=0, active=2, repeat=1),
                   on_trace_ready=P.tensorboard_trace_handler(str(out), "worker0"),
                   record_shapes=True, profile_memory=True,
                   experimental_config=exp) as prof:
        train(compiled, 5, prof=prof)
    be.shutdown()
    (root,) = prof.outputs
    return root, be


def test_ascend_pt_directory_has_every_file(collected):
    root, _ = collected
    name = os.path.basename(root)
    assert name.startswith("worker0_") and name.endswith("_ascend_pt")
    assert len(name.split("_")[1]) == 17
    assert os.path.isfile(os.path.join(root, "profiler_info_0.json"))
    assert os.path.isfile(os.path.join(root, "profiler_metadata.json"))
    for f in FILES:
        assert os.path.isfile(os.path.join(root, "ASCEND_PROFILER_OUTPUT", f)), f
    (prof_dir,) = find_prof_dirs(root)
    assert os.path.isdir(os.path.join(prof_dir, "mindstudio_profiler_output"))


def test_kernel_details_cover_only_the_active_steps(collected):
    root, be = collected
    rows = _rows(os.path.join(root, "ASCEND_PROFILER_OUTPUT", "kernel_details.csv"))
    (model,) = be.models
    per_step = sum(len(g.ops) for g in model.graphs.values())
    assert {r["Step Id"] for r in rows} == {"1", "2"}
    assert len(rows) == 2 * per_step
    assert {"Name", "Type", "Accelerator Core", "Start Time(us)", "Duration(us)"} <= set(rows[0])
    assert not any(r["Input Data Types"].startswith("DT_") for r in rows)


def test_geplug_profile_summary_reads_the_directory(collected, capsys):
    root, _ = collected
    assert main(["profile", "summary", root, "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["product"] == "atlas_a2"


def test_training_trace_shows_fp_and_bp(collected):
    root, be = collected
    (prof_dir,) = find_prof_dirs(root)
    rows = _rows(output_file(prof_dir, "step_trace"))
    assert [r["Iteration ID"] for r in rows] == ["2", "3"]
    kernels = _rows(os.path.join(root, "ASCEND_PROFILER_OUTPUT", "kernel_details.csv"))
    (model,) = be.models
    first_fw = model.graphs["forward"].ops[0].record.name
    last_bw = model.graphs["backward"].ops[-1].record.name
    for row in rows:
        step = str(int(row["Iteration ID"]) - 1)
        mine = [k for k in kernels if k["Step Id"] == step]
        fp = next(k for k in mine if k["Name"] == first_fw)
        bp = next(k for k in mine if k["Name"] == last_bw)
        assert float(row["FP Start(us)"]) == pytest.approx(float(fp["Start Time(us)"]))
        # exact decimal arithmetic: a float64 sum at ~1.8e15 us only resolves 0.25 us
        assert Decimal(row["BP End(us)"].strip()) == Decimal(bp["Start Time(us)"].strip()) + \
            Decimal(bp["Duration(us)"].strip())
        assert float(row["Iteration Refresh(us)"]) > 0  # the optimizer's update


def test_trace_view_has_torch_ops_kernels_and_their_flows(collected):
    root, _ = collected
    with open(os.path.join(root, "ASCEND_PROFILER_OUTPUT", "trace_view.json")) as fh:
        events = json.load(fh)
    assert isinstance(events, list)
    procs = {e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert {"Python", "Ascend Hardware", "CANN", "Overlap Analysis"} <= procs
    cpu = [e for e in events if e.get("cat") == "cpu_op"]
    assert any(e["name"] == "aten::mm" for e in cpu)
    assert any(e["name"].startswith("ProfilerStep#") for e in cpu)
    starts = {e["id"] for e in events if e.get("ph") == "s" and e["cat"] == "async_npu"}
    ends = {e["id"] for e in events if e.get("ph") == "f" and e["cat"] == "async_npu"}
    assert starts and starts == ends


def test_step_trace_time_computing_is_the_kernel_time(collected):
    root, _ = collected
    out = os.path.join(root, "ASCEND_PROFILER_OUTPUT")
    steps = _rows(os.path.join(out, "step_trace_time.csv"))
    kernels = _rows(os.path.join(out, "kernel_details.csv"))
    for row in steps:
        busy = sum(float(k["Duration(us)"]) for k in kernels if k["Step Id"] == row["Step"])
        assert float(row["Computing"]) == pytest.approx(busy, abs=1e-2)


def _db(root):
    out = os.path.join(root, "ASCEND_PROFILER_OUTPUT")
    return sqlite3.connect(os.path.join(out, "ascend_pytorch_profiler_0.db"))


def test_database_has_torch_npus_tables_with_every_kernel(collected):
    root, _ = collected
    con = _db(root)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"STRING_IDS", "META_DATA", "PYTORCH_API", "CONNECTION_IDS", "ENUM_API_TYPE",
            "STEP_TIME", "TASK", "COMPUTE_TASK_INFO", "CANN_API"} <= tables
    (tasks,) = con.execute("SELECT COUNT(*) FROM COMPUTE_TASK_INFO").fetchone()
    con.close()
    kernels = _rows(os.path.join(root, "ASCEND_PROFILER_OUTPUT", "kernel_details.csv"))
    assert tasks == len(kernels)


def test_database_links_every_torch_op_to_the_kernel_it_launched(collected):
    root, _ = collected
    con = _db(root)
    linked = con.execute(
        "SELECT s.value, k.value FROM PYTORCH_API a "
        "JOIN ENUM_API_TYPE e ON e.id = a.type AND e.name = 'op' "
        "JOIN STRING_IDS s ON s.id = a.name "
        "JOIN CONNECTION_IDS c ON c.id = a.connectionId "
        "JOIN TASK t ON t.connectionId = c.connectionId "
        "JOIN COMPUTE_TASK_INFO i ON i.globalTaskId = t.globalTaskId "
        "JOIN STRING_IDS k ON k.id = i.name").fetchall()
    (tasks,) = con.execute("SELECT COUNT(*) FROM COMPUTE_TASK_INFO").fetchone()
    steps = con.execute("SELECT id FROM STEP_TIME ORDER BY id").fetchall()
    con.close()
    assert len(linked) == tasks
    assert ("aten::mm", "gradients/mm") in linked
    assert [s for (s,) in steps] == [1, 2]  # the two active steps of the schedule


def test_invalid_experimental_config_values_are_refused():
    with pytest.raises(ProfilingError, match="aic_metrics"):
        P._ExperimentalConfig(aic_metrics="PipeUtilisation")
    with pytest.raises(ProfilingError, match="profiler_level"):
        P._ExperimentalConfig(profiler_level=3)


def test_schedule_rejects_a_window_without_active_steps():
    with pytest.raises(ProfilingError, match="active"):
        P.schedule(wait=1, active=0)


def test_schedule_follows_torch_npu_wait_warmup_active_repeat():
    s = P.schedule(wait=1, warmup=1, active=2, repeat=1, skip_first=1)
    actions = [s(i) for i in range(7)]
    A = P.ProfilerAction
    assert actions == [A.NONE, A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE, A.NONE, A.NONE]


# -- profile_memory=True (the collection above) ------------------------------------------


def _mem_csv(root, name):
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
    header, rows = _mem_csv(root, "operator_memory.csv")
    allocs = _query(_msprof_db(root), "SELECT COUNT(*) FROM NPU_OP_MEM m JOIN STRING_IDS s "
                                      "ON s.id = m.type WHERE s.value = 'allocate'")
    assert header == OPERATOR_MEMORY_HEADER
    assert len(rows) == allocs[0][0] > 0
    assert all(r["Name"].startswith("cann::") and r["Device Type"] == "NPU:0" for r in rows)


def test_operator_memory_release_is_allocation_plus_duration(collected):
    root, _ = collected
    _, rows = _mem_csv(root, "operator_memory.csv")
    for r in rows:
        alloc, release, dur = (Decimal(r[k].strip()) for k in (
            "Allocation Time(us)", "Release Time(us)", "Duration(us)"))
        assert release == alloc + dur


def test_memory_record_ge_peak_is_the_plans_weights_plus_activation_peak(collected):
    root, be = collected
    (model,) = be.models
    header, rows = _mem_csv(root, "memory_record.csv")
    assert header == MEMORY_RECORD_HEADER
    ge = [float(r["Total Allocated(MB)"]) for r in rows if r["Component"] == "GE"]
    assert max(ge) == pytest.approx(_plan_peak(model) / 2**20)
    assert {r["Component"] for r in rows} == {"APP", "GE", "PTA+GE"}


def test_database_op_memory_and_memory_record_match_the_csvs(collected):
    root, be = collected
    (model,) = be.models
    _, rows = _mem_csv(root, "operator_memory.csv")
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
    header, rows = _mem_csv(root, "npu_module_mem.csv")
    assert header == NPU_MODULE_MEM_HEADER and {r["Component"] for r in rows} == \
        {"GE", "RUNTIME"}


def test_input_batch_and_loss_read_back_are_memcpy_tasks_at_the_host_link_cost(collected):
    from torch_helpers import batch

    from geplug.device import STREAMS, copy_us

    root, be = collected
    con = _db(root)
    rows = con.execute(
        "SELECT m.size, e.name, t.endNs - t.startNs, t.streamId, s.value FROM MEMCPY_INFO m "
        "JOIN TASK t ON t.globalTaskId = m.globalTaskId "
        "JOIN ENUM_MEMCPY_OPERATION e ON e.id = m.memcpyOperation "
        "JOIN STRING_IDS s ON s.id = t.taskType ORDER BY t.startNs").fetchall()
    con.close()
    idx, tgt = batch()
    product = be.system.product
    # per active step: the token ids and the targets go in, the scalar loss comes back
    step = [(idx.nbytes, "host to device"), (tgt.nbytes, "host to device"),
            (4, "device to host")]
    want = [(n, d, round(copy_us(n, product) * 1000), STREAMS["copy"], "MEMCPY_ASYNC")
            for n, d in step] * 2
    assert rows == want
    (model,) = be.models
    assert [c.direction for c in model.graphs["forward"].copies] == ["H2D", "H2D", "D2H"]
    assert not model.graphs["backward"].copies
    with open(os.path.join(root, "ASCEND_PROFILER_OUTPUT", "trace_view.json")) as fh:
        shown = [e for e in json.load(fh) if e.get("name") == "MEMCPY_ASYNC"]
    assert [e["args"]["size(Byte)"] for e in shown] == [r[0] for r in rows]
