"""training_trace, hccl, aicpu, l2, runtime_api / ge_api: each switch shows its effect."""

from __future__ import annotations

import json
import os

import pytest
from prof_helpers import DUR, drive, make_system, out_file, prof_dir, read_csv, run, timeline

from geplug.errors import ProfilingError
from geplug.events import ApiCall, RunInfo


def test_training_trace_writes_one_step_trace_row_per_step(manager, tmp_path):
    run(manager, tmp_path, steps=4, training_trace="on")
    header, rows = read_csv(tmp_path, "step_trace")
    assert header[:6] == ["Device_id", "Iteration ID", "FP Start(us)", "BP End(us)",
                          "Iteration End(us)", "Iteration Time(us)"]
    assert [r[1] for r in rows] == ["1", "2", "3", "4"]


def test_automatic_fp_bp_are_first_and_last_compute_tasks(manager, tmp_path):
    system = make_system(manager, tmp_path, training_trace="on")
    start = 1_700_000_000_000_000.0
    drive(system, 1, start=start)
    system.shutdown()
    header, rows = read_csv(tmp_path, "step_trace")
    row = dict(zip(header, rows[0], strict=False))
    assert float(row["FP Start(us)"]) == pytest.approx(start + 5.0)
    # last compute op fc1 ends right before the step end (2 us gap)
    assert float(row["Iteration Refresh(us)"]) == pytest.approx(2.0)
    assert row["Data Aug Bound(us)"] == "N/A"
    assert float(row["Reduce Duration(us)"]) == pytest.approx(DUR["allreduce1"])


def test_named_fp_and_bp_points_are_used(manager, tmp_path):
    system = make_system(manager, tmp_path, training_trace="on", fp_point="relu1",
                         bp_point="where1")
    start = 1_700_000_000_000_000.0
    drive(system, 1, start=start)
    system.shutdown()
    header, rows = read_csv(tmp_path, "step_trace")
    row = dict(zip(header, rows[0], strict=False))
    relu_start = start + 5.0 + DUR["conv1"] + 2.0
    where_end = relu_start + DUR["relu1"] + 2 + DUR["allreduce1"] + 2 + DUR["where1"]
    assert float(row["FP Start(us)"]) == pytest.approx(relu_start)
    assert float(row["BP End(us)"]) == pytest.approx(where_end)
    assert float(row["FP to BP Time(us)"]) == pytest.approx(where_end - relu_start)


def test_second_step_reports_data_aug_bound_from_previous_end(manager, tmp_path):
    run(manager, tmp_path, steps=2, training_trace="on")
    header, rows = read_csv(tmp_path, "step_trace")
    row = dict(zip(header, rows[1], strict=False))
    assert float(row["Data Aug Bound(us)"]) == pytest.approx(1000.0 + 5.0)


def test_named_fp_point_not_in_graph_is_a_clear_error(manager, tmp_path):
    system = make_system(manager, tmp_path, training_trace="on", fp_point="conv_1")
    with pytest.raises(ProfilingError, match=r"fp_point = 'conv_1'.*did you mean 'conv1'"):
        drive(system, 1)
    system.shutdown()


def test_training_trace_off_writes_no_step_trace(manager, tmp_path):
    run(manager, tmp_path)
    assert out_file(tmp_path, "step_trace") is None


def test_training_trace_follows_the_products_declaration(manager, tmp_path, geplug_product):
    run(manager, tmp_path, geplug_product, steps=2, training_trace="on")
    written = out_file(tmp_path, "step_trace") is not None
    # inference products: no iteration trace
    assert written == geplug_product.profiling.training_trace


def test_hccl_on_writes_communication_files(manager, tmp_path):
    run(manager, tmp_path, steps=2, hccl="on")
    analyze = os.path.join(prof_dir(tmp_path), "analyze")
    with open(os.path.join(analyze, "communication.json")) as fh:
        comm = json.load(fh)
    info = comm["allreduce1@hccl_world_group"]
    assert set(info) == {"Communication Time Info", "Communication Bandwidth Info"}
    assert info["Communication Time Info"]["Elapse Time(ms)"] == pytest.approx(0.1)
    assert "Total Op Info" in comm
    with open(os.path.join(analyze, "communication_matrix.json")) as fh:
        matrix = json.load(fh)
    assert "0-0" in matrix["allreduce1@hccl_world_group"]
    _header, rows = read_csv(tmp_path, "communication_statistic")
    assert rows[0][1] == "HcomAllReduce" and rows[0][2] == "2"
    procs = {e["args"]["name"] for e in timeline(tmp_path) if e["name"] == "process_name"}
    assert "Communication" in procs


def test_hccl_link_type_is_the_products_interconnect(manager, tmp_path, geplug_product):
    run(manager, tmp_path, geplug_product, steps=1, hccl="on")
    with open(os.path.join(prof_dir(tmp_path), "analyze", "communication.json")) as fh:
        bandwidth = json.load(fh)["allreduce1@hccl_world_group"]["Communication Bandwidth Info"]
    used = {link for link, info in bandwidth.items() if info["Transit Size(MB)"] > 0}
    targets = [t.upper() for t in geplug_product.profiling.interconnect_targets]
    assert used == {"HCCS" if "HCCS" in targets else "PCIE"}


def test_hccl_and_task_time_off_leave_analyze_empty_and_no_communication_track(manager,
                                                                               tmp_path):
    import sqlite3

    run(manager, tmp_path, task_time="off")
    # only the analysis database (per-step overlap) with empty communication tables
    analyze = os.path.join(prof_dir(tmp_path), "analyze")
    assert os.listdir(analyze) == ["communication_analyzer.db"]
    conn = sqlite3.connect(os.path.join(analyze, "communication_analyzer.db"))
    assert conn.execute("SELECT COUNT(*) FROM CommAnalyzerTime").fetchone() == (0,)
    procs = {e["args"]["name"] for e in timeline(tmp_path) if e["name"] == "process_name"}
    assert "Communication" not in procs


def test_task_time_collects_communication_without_the_deprecated_hccl_switch(manager,
                                                                             tmp_path):
    # the collector deprecates hccl: "use task_time to collect communication data"
    run(manager, tmp_path, task_time="on")
    assert sorted(os.listdir(os.path.join(prof_dir(tmp_path), "analyze"))) == [
        "communication.json", "communication_analyzer.db", "communication_matrix.json"]
    procs = {e["args"]["name"] for e in timeline(tmp_path) if e["name"] == "process_name"}
    assert "Communication" in procs


def test_aicpu_on_lists_only_ai_cpu_tasks(manager, tmp_path):
    run(manager, tmp_path, steps=3, aicpu="on")
    header, rows = read_csv(tmp_path, "aicpu")
    assert header[:3] == ["Device_id", "Timestamp(us)", "Node"]
    assert [r[2] for r in rows] == ["where1"] * 3


def test_aicpu_off_writes_no_aicpu_file(manager, tmp_path):
    run(manager, tmp_path)
    assert out_file(tmp_path, "aicpu") is None


def test_l2_on_writes_hit_rates_and_tlb_where_the_product_collects_it(manager, tmp_path,
                                                                     geplug_product):
    run(manager, tmp_path, geplug_product, l2="on")
    header, rows = read_csv(tmp_path, "l2_cache")
    assert ("TLB Hit Rate" in header) == (geplug_product.profiling.l2 == "l2_tlb")
    assert {r[5] for r in rows} == {"conv1", "relu1", "fc1"}
    assert all(0 <= float(r[3]) <= 1 for r in rows)


def test_l2_off_writes_no_l2_file(manager, tmp_path):
    run(manager, tmp_path)
    assert out_file(tmp_path, "l2_cache") is None


def test_runtime_api_on_writes_api_statistic(manager, tmp_path):
    run(manager, tmp_path, steps=3, runtime_api="on")
    header, rows = read_csv(tmp_path, "api_statistic")
    assert header == ["Device_id", "Level", "API Name", "Time(us)", "Count", "Avg(us)",
                      "Min(us)", "Max(us)", "Variance"]
    row = rows[0]
    assert row[:3] == ["host", "runtime", "aclrtMemcpy"]
    assert row[4] == "3" and float(row[3]) == pytest.approx(4 + 5 + 6)
    assert float(row[6]) == 4 and float(row[7]) == 6
    assert float(row[8]) == pytest.approx(2 / 3, abs=1e-3)


def test_runtime_api_off_writes_no_api_statistic(manager, tmp_path):
    run(manager, tmp_path)
    assert out_file(tmp_path, "api_statistic") is None


def test_ge_api_collects_ge_level_calls_only(manager, tmp_path):
    system = make_system(manager, tmp_path, ge_api="l1")
    drive(system, 1)
    run_info = RunInfo(system=system, model_name="net", model_id=1, step=0)
    system.emit_profile(ApiCall(run=run_info, name="GeExecute", level="ge", start_us=1.0,
                                duration_us=3.0))
    system.shutdown()
    _, rows = read_csv(tmp_path, "api_statistic")
    assert [(r[1], r[2]) for r in rows] == [("ge", "GeExecute")]
