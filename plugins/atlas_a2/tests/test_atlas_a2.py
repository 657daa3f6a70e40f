"""The Atlas A2 (910b) declaration: the facts that set it apart, via the public API."""

from __future__ import annotations

import pytest

from geplug.products import Product, ProductRegistry

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")

CUBE_OPS = ("MatMulV2", "BatchMatMulV2", "Conv2D", "Conv2DTranspose")


@pytest.fixture(scope="module")
def a2(geplug_product_registry: ProductRegistry) -> Product:
    return geplug_product_registry.get("atlas_a2")


@pytest.mark.parametrize(
    "soc",
    ["Ascend910B1", "Ascend910B2", "Ascend910B2C", "Ascend910B3", "Ascend910B4", "Ascend910B4-1"],
)
def test_soc_versions_resolve_to_atlas_a2(
        geplug_product_registry: ProductRegistry, soc: str) -> None:
    assert geplug_product_registry.get(soc).name == "atlas_a2"


def test_ascend910b_without_digit_is_not_atlas_a2(a2: Product) -> None:
    assert "Ascend910B" not in a2.soc_versions


def test_bf16_precision_modes_are_accepted_by_sessions(a2: Product) -> None:
    assert a2.supports("precision.modes", "allow_mix_precision_bf16")
    assert a2.supports("precision.modes", "allow_fp32_to_bf16")
    assert a2.supports("precision.modes_v2", "mixed_bfloat16")


def test_hif8_modes_are_not_accepted(a2: Product) -> None:
    for mode in ("cube_hif8", "mixed_hif8"):
        assert mode not in (*a2.precision.modes_v2, *a2.precision.atc_only_modes)


def test_training_defaults_keep_origin_dtype(a2: Product) -> None:
    assert a2.precision.default_training == "must_keep_origin_dtype"
    assert a2.precision.default_training_v2 == "origin"
    assert a2.precision.torch_default == "must_keep_origin_dtype"


def test_dump_debug_mode_is_all_only(a2: Product) -> None:
    assert a2.dump.debug_modes == ("all",)


def test_dump_names_carry_ffts_plus_suffix(a2: Product) -> None:
    assert a2.dump.ffts_plus_names


@pytest.mark.parametrize("op_type", CUBE_OPS)
def test_cube_ops_take_bfloat16_and_float32(a2: Product, op_type: str) -> None:
    assert {"float16", "bfloat16", "float32"} <= set(a2.op(op_type).aicore_dtypes)


@pytest.mark.parametrize("op_type", CUBE_OPS)
def test_cube_ops_implement_enable_float_32_execution(a2: Product, op_type: str) -> None:
    assert "enable_float_32_execution" in a2.op(op_type).impl_modes
    assert a2.supports("implmode.ini_values", "enable_float_32_execution")


def test_memory_access_columns_use_upper_case_unit_names(a2: Product) -> None:
    columns = a2.profiling.pmu_columns["MemoryAccess"]
    assert "aic_GM_to_L1_datas(KB)" in columns
    assert "aiv_UB_to_GM_datas(KB)" in columns


def test_l2cache_and_memory_access_groups_exist(a2: Product) -> None:
    assert a2.supports("profiling.aic_metrics", "L2Cache")
    assert a2.supports("profiling.aic_metrics", "MemoryAccess")


def test_pipe_utilization_exct_is_an_alias(a2: Product) -> None:
    assert a2.profiling.aic_metrics_aliases["PipeUtilizationExct"] == "PipeUtilization"


def test_pipe_utilization_block_is_the_exact_910b_block(a2: Product) -> None:
    columns = a2.profiling.pmu_columns["PipeUtilization"]
    assert columns[:3] == ("aicore_time(us)", "aic_total_cycles", "aic_mac_time(us)")
    assert columns[-1] == "cube_utilization(%)"
    assert "aic_fixpipe_ratio" in columns
    assert "memory_bound" not in columns


def test_instruction_profiling_by_frequency(a2: Product) -> None:
    assert a2.profiling.instr_profiling == "frequency"
    freq = a2.profiling.frequencies["instr_profiling_freq"]
    assert (freq.min, freq.max) == (300, 30000)


def test_l2_switch_collects_l2_and_tlb(a2: Product) -> None:
    assert a2.profiling.l2 == "l2_tlb"


def test_interconnect_targets(a2: Product) -> None:
    assert set(a2.profiling.interconnect_targets) == {"HCCS", "PCIe", "inter-chip"}


def test_large_matmul_reported_as_mix_aic(a2: Product) -> None:
    assert a2.profiling.mix_aic_large_matmul


def test_rank_table_v1_only(a2: Product) -> None:
    assert a2.runtime.rank_table_versions == ("1.0",)
    assert a2.runtime.dies_per_device == 1
