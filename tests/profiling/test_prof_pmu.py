"""aic_metrics / aiv_metrics: the product's PMU columns and modelled values (formats.md §6.5)."""

from __future__ import annotations

import pytest
from prof_helpers import card, drive, make_system, read_csv, run

from geplug.errors import ProfilingError
from geplug.profiling.export import op_summary_header

BASE = len(op_summary_header([]))


def _pmu(header):
    return header[BASE:]


def _row(header, rows, name):
    return dict(zip(header, next(r for r in rows if r[header.index("Op Name")] == name),
                    strict=True))


def test_every_aic_metrics_group_writes_the_products_exact_block(manager, tmp_path, geplug_product):
    for group, block in geplug_product.profiling.pmu_columns.items():
        run(manager, tmp_path / group, geplug_product, steps=1, aic_metrics=group)
        header, rows = read_csv(tmp_path / group, "op_summary")
        assert _pmu(header) == list(block), group
        assert rows and all(len(r) == len(header) for r in rows), group


def test_default_group_is_the_products_default(manager, tmp_path, geplug_product):
    run(manager, tmp_path, geplug_product, steps=1)
    header, _ = read_csv(tmp_path, "op_summary")
    default = geplug_product.profiling.aic_metrics_default
    assert _pmu(header) == list(geplug_product.profiling.pmu_columns[default])


@pytest.mark.geplug_product_capability("profiling.aic_metrics_aliases", "PipeUtilizationExct")
def test_alias_group_maps_to_its_target(manager, tmp_path, geplug_product):
    run(manager, tmp_path, geplug_product, steps=1, aic_metrics="PipeUtilizationExct")
    header, _ = read_csv(tmp_path, "op_summary")
    target = geplug_product.profiling.aic_metrics_aliases["PipeUtilizationExct"]
    assert _pmu(header) == list(geplug_product.profiling.pmu_columns[target])


def test_custom_registers_give_one_column_per_register(manager, tmp_path, geplug_product):
    run(manager, tmp_path, geplug_product, steps=1, aic_metrics="Custom:0x1B,12")
    header, rows = read_csv(tmp_path, "op_summary")
    if geplug_product.profiling.split_cores:
        expected = ["aicore_time(us)", "aic_total_cycles", "aic_0x1b", "aic_0xc",
                    "aiv_time(us)", "aiv_total_cycles", "aiv_0x1b", "aiv_0xc"]
        column = "aic_0x1b"
    else:
        expected = ["aicore_time(us)", "total_cycles", "0x1b", "0xc"]
        column = "0x1b"
    assert _pmu(header) == expected
    assert int(_row(header, rows, "conv1")[column]) > 0


@pytest.mark.geplug_product_capability("profiling.split_cores")
def test_aiv_metrics_selects_the_aiv_half_of_the_block(manager, tmp_path, geplug_product):
    cols = geplug_product.profiling.pmu_columns
    aic, aiv = "PipeUtilization", "Memory"
    run(manager, tmp_path, geplug_product, steps=1, aic_metrics=aic, aiv_metrics=aiv)
    header, _ = read_csv(tmp_path, "op_summary")
    aic_half = list(cols[aic][: cols[aic].index("aiv_time(us)")])
    aiv_half = list(cols[aiv][cols[aiv].index("aiv_time(us)"):])
    tail = ["cube_utilization(%)"] if cols[aic][-1] == "cube_utilization(%)" else []
    assert _pmu(header) == aic_half + aiv_half + tail


def test_aiv_metrics_has_no_effect_without_split_cores(manager, tmp_path):
    run(manager, tmp_path, steps=1, aic_metrics="PipeUtilization", aiv_metrics="Memory")
    header, _ = read_csv(tmp_path, "op_summary")
    assert _pmu(header) == list(card().profiling.pmu_columns["PipeUtilization"])


def test_unknown_group_is_a_clear_error(manager, tmp_path):
    system = make_system(manager, tmp_path, aic_metrics="NoSuchGroup")
    with pytest.raises(ProfilingError, match=r"aic_metrics = 'NoSuchGroup'.*PipeUtilization"):
        drive(system, 1)


def test_pmu_values_are_na_for_tasks_without_ai_core_counters(manager, tmp_path, geplug_product):
    run(manager, tmp_path, geplug_product, steps=1)
    header, rows = read_csv(tmp_path, "op_summary")
    for name in ("where1", "allreduce1"):  # AI_CPU and COMMUNICATION tasks
        assert set(_pmu(list(_row(header, rows, name).values()))) == {"N/A"}, name


def test_pmu_values_are_written_as_numbers_with_fixed_decimals(manager, tmp_path, geplug_product):
    run(manager, tmp_path, geplug_product, steps=1)
    header, rows = read_csv(tmp_path, "op_summary")
    row = _row(header, rows, "conv1")
    for col in _pmu(header):
        value = row[col]
        if value == "N/A":
            continue
        if "total_cycles" in col:
            assert value.isdigit(), (col, value)
        else:
            assert float(value) >= 0 and len(value.rsplit(".", 1)[-1]) == 3, (col, value)


def test_modelled_ratios_are_pipe_time_over_task_time(manager, tmp_path):
    run(manager, tmp_path, aic_metrics="PipeUtilization")
    header, rows = read_csv(tmp_path, "op_summary")
    conv = _row(header, rows, "conv1")
    dur = float(conv["Task Duration(us)"])
    assert 0 < float(conv["mac_ratio"]) <= 1
    assert float(conv["mac_time(us)"]) / dur == pytest.approx(float(conv["mac_ratio"]), abs=2e-3)
    mb = float(conv["memory_bound"])
    assert mb >= 0


@pytest.mark.geplug_product_capability("profiling.split_cores")
def test_split_cores_report_cube_work_on_aic_and_vector_work_on_aiv(
        manager, tmp_path, geplug_product):
    group = geplug_product.profiling.aic_metrics_default
    run(manager, tmp_path, geplug_product, steps=1, aic_metrics=group)
    header, rows = read_csv(tmp_path, "op_summary")
    conv, relu = _row(header, rows, "conv1"), _row(header, rows, "relu1")
    assert conv["aiv_time(us)"] == "N/A"  # a pure cube op has no vector half
    assert relu["aic_total_cycles"] == "N/A"  # a pure vector op has no cube half
    assert int(conv["aic_total_cycles"]) > 0 and int(relu["aiv_total_cycles"]) > 0


def test_metrics_the_product_declares_unsupported_are_na(manager, tmp_path):
    """``pmu_na_metrics`` (310b: vec / ub / bank columns exist but hold N/A)."""
    from types import SimpleNamespace

    import attrs

    from geplug.profiling.pmu import PmuModel, TaskWork

    product = card()
    caps = attrs.evolve(product.profiling, pmu_na_metrics=("vec_ratio", "vec_time"))
    fake = SimpleNamespace(compute=product.compute, profiling=caps)
    cols = ["aicore_time(us)", "total_cycles", "vec_time(us)", "vec_ratio", "mac_ratio"]
    values = PmuModel(fake, cols).values(TaskWork(  # type: ignore[arg-type]
        task_type="AI_CORE", duration_us=10.0, flops=1e9, bytes_moved=1e6, cube_fraction=0.5,
        block_dim=2, dtype="float16"))
    assert values[2:4] == ["N/A", "N/A"]
    assert values[4] != "N/A"
