"""task_time / task_trace levels and the op_summary / task_time / op_statistic formats."""

from __future__ import annotations

from prof_helpers import out_file, read_csv, run

from geplug.profiling.export import op_summary_header


def _col(header, rows, name):
    i = header.index(name)
    return [r[i] for r in rows]


def test_l1_op_summary_has_base_columns_then_the_product_pmu_block(manager, tmp_path):
    system = run(manager, tmp_path, task_time="l1")
    header, _ = read_csv(tmp_path, "op_summary")
    block = list(system.product.profiling.pmu_columns["PipeUtilization"])
    assert header == op_summary_header(block)


def test_task_start_time_is_written_with_a_trailing_tab(manager, tmp_path):
    run(manager, tmp_path)
    header, rows = read_csv(tmp_path, "op_summary")
    starts = _col(header, rows, "Task Start Time(us)")
    assert all(s.endswith("\t") and float(s) > 0 for s in starts)


def test_l1_writes_msprof_dtype_format_and_shape_spellings(manager, tmp_path):
    run(manager, tmp_path, task_time="on")
    header, rows = read_csv(tmp_path, "op_summary")
    row = rows[0]
    # the cell value carries literal quotes, as in msprof's files (readers cut one character
    # at each end: msprof-analyze advisor's `input_shapes[1:-1]`)
    assert row[header.index("Input Shapes")] == '"128,256;256,512"'
    assert row[header.index("Input Shapes")][1:-1] == "128,256;256,512"
    assert row[header.index("Input Data Types")] == "DT_FLOAT16;DT_FLOAT16"
    assert row[header.index("Input Formats")] == "FORMAT_ND;FORMAT_ND"
    assert row[header.index("OP Type")] == "Conv2D"
    assert row[header.index("OP State")] == "static"
    assert row[header.index("HF32 Eligible")] in ("YES", "NO")


def test_communication_rows_have_na_task_and_stream_ids(manager, tmp_path):
    run(manager, tmp_path)
    header, rows = read_csv(tmp_path, "op_summary")
    comm = [r for r in rows if r[header.index("Op Name")] == "allreduce1"]
    assert comm and all(r[header.index("Task ID")] == "N/A" for r in comm)
    assert all(r[header.index("OP State")] == "N/A" for r in comm)


def test_l0_writes_timings_only_with_na_conventions_and_no_pmu(manager, tmp_path):
    run(manager, tmp_path, task_time="l0")
    header, rows = read_csv(tmp_path, "op_summary")
    assert header == op_summary_header([])
    for name in ("OP Type", "Task Type", "OP State", "HF32 Eligible", "Input Shapes",
                 "Input Data Types", "Output Formats", "Mix Block Dim"):
        assert set(_col(header, rows, name)) == {"N/A"}, name
    assert set(_col(header, rows, "Block Dim")) == {"0"}
    assert all(float(d) > 0 for d in _col(header, rows, "Task Duration(us)"))


def test_task_time_off_writes_no_task_summaries(manager, tmp_path):
    run(manager, tmp_path, task_time="off")
    assert out_file(tmp_path, "op_summary") is None
    assert out_file(tmp_path, "task_time") is None
    assert out_file(tmp_path, "op_statistic") is None


def test_task_trace_is_used_when_task_time_is_unset(manager, tmp_path):
    run(manager, tmp_path, task_trace="l0")
    header, rows = read_csv(tmp_path, "op_summary")
    assert set(_col(header, rows, "OP Type")) == {"N/A"}


def test_task_time_csv_has_msprof_columns_and_stop_equals_start_plus_time(manager, tmp_path):
    run(manager, tmp_path)
    header, rows = read_csv(tmp_path, "task_time")
    assert header == ["Device_id", "kernel_name", "kernel_type", "stream_id", "task_id",
                      "task_time(us)", "task_start(us)", "task_stop(us)"]
    for r in rows:
        assert abs(float(r[6]) + float(r[5]) - float(r[7])) < 1e-3


def test_op_statistic_aggregates_per_op_type_and_core_type(manager, tmp_path):
    run(manager, tmp_path, steps=4)
    header, rows = read_csv(tmp_path, "op_statistic")
    assert header == ["Device_id", "OP Type", "Core Type", "Count", "Total Time(us)",
                      "Min Time(us)", "Avg Time(us)", "Max Time(us)", "Ratio(%)"]
    conv = next(r for r in rows if r[1] == "Conv2D")
    assert conv[2] == "AI_CORE" and conv[3] == "4"
    assert abs(float(conv[4]) - 4 * 120.0) < 1e-6
    assert abs(sum(float(r[8]) for r in rows) - 100.0) < 0.01
