"""aic_metrics / aiv_metrics: the product's PMU columns and modelled values (formats.md §6.5)."""

from __future__ import annotations

import pytest
from prof_helpers import read_csv, run

from geplug.errors import ProfilingError
from geplug.profiling.export import op_summary_header

A2_GROUPS = ["ArithmeticUtilization", "PipeUtilization", "Memory", "MemoryL0", "MemoryUB",
             "ResourceConflictRatio", "L2Cache", "MemoryAccess"]


def _pmu(header):
    return header[len(op_summary_header([])):]


@pytest.mark.parametrize("group", A2_GROUPS)
def test_each_aic_metrics_group_writes_the_products_exact_block(manager, tmp_path, group):
    system = run(manager, tmp_path, aic_metrics=group)
    header, rows = read_csv(tmp_path, "op_summary")
    assert _pmu(header) == list(system.product.profiling.pmu_columns[group])
    assert all(len(r) == len(header) for r in rows)


def test_alias_group_maps_to_its_target(manager, tmp_path):
    system = run(manager, tmp_path, aic_metrics="PipeUtilizationExct")
    header, _ = read_csv(tmp_path, "op_summary")
    assert _pmu(header) == list(system.product.profiling.pmu_columns["PipeUtilization"])


def test_default_group_is_the_products_default(manager, tmp_path):
    system = run(manager, tmp_path)
    header, _ = read_csv(tmp_path, "op_summary")
    default = system.product.profiling.aic_metrics_default
    assert _pmu(header) == list(system.product.profiling.pmu_columns[default])


def test_custom_registers_give_one_column_per_register_and_core(manager, tmp_path):
    run(manager, tmp_path, aic_metrics="Custom:0x1B,12")
    header, rows = read_csv(tmp_path, "op_summary")
    assert _pmu(header) == ["aicore_time(us)", "aic_total_cycles", "aic_0x1b", "aic_0xc",
                            "aiv_time(us)", "aiv_total_cycles", "aiv_0x1b", "aiv_0xc"]
    conv = next(r for r in rows if r[4] == "conv1")
    assert int(conv[header.index("aic_0x1b")]) > 0


def test_aiv_metrics_selects_the_aiv_half_of_the_block(manager, tmp_path):
    system = run(manager, tmp_path, aic_metrics="PipeUtilization", aiv_metrics="Memory")
    header, _ = read_csv(tmp_path, "op_summary")
    cols = system.product.profiling.pmu_columns
    assert "aic_mac_ratio" in header
    assert "aiv_ub_read_bw(GB/s)" in header
    assert "aiv_vec_ratio" not in header
    assert _pmu(header)[-1] == cols["PipeUtilization"][-1]


def test_unknown_group_is_a_clear_error(manager, tmp_path):
    from prof_helpers import drive, make_system

    system = make_system(manager, tmp_path, aic_metrics="NoSuchGroup")
    with pytest.raises(ProfilingError, match="NoSuchGroup"):
        drive(system, 1)


def test_pmu_values_are_na_for_tasks_without_ai_core_counters(manager, tmp_path):
    run(manager, tmp_path)
    _header, rows = read_csv(tmp_path, "op_summary")
    cpu = next(r for r in rows if r[4] == "where1")
    assert set(_pmu(cpu)) == {"N/A"}


def test_modelled_ratios_are_pipe_time_over_task_time(manager, tmp_path):
    run(manager, tmp_path, aic_metrics="PipeUtilization")
    header, rows = read_csv(tmp_path, "op_summary")
    conv = next(r for r in rows if r[4] == "conv1")
    dur = float(conv[header.index("Task Duration(us)")])
    mac_t = float(conv[header.index("aic_mac_time(us)")])
    mac_r = float(conv[header.index("aic_mac_ratio")])
    assert 0 < mac_r <= 1
    assert abs(mac_t / dur - mac_r) < 2e-3
    assert conv[header.index("aiv_time(us)")] == "N/A"  # pure cube op: no vector half


def test_vector_op_has_aiv_values_and_no_aic_values(manager, tmp_path):
    run(manager, tmp_path, aic_metrics="PipeUtilization")
    header, rows = read_csv(tmp_path, "op_summary")
    relu = next(r for r in rows if r[4] == "relu1")
    assert relu[header.index("aic_mac_ratio")] == "N/A"
    assert float(relu[header.index("aiv_vec_ratio")]) > 0
