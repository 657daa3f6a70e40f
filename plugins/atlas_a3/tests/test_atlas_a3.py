"""The Atlas A3 (a3) declaration: the facts that set it apart, via the public API."""

from __future__ import annotations

import pytest

from geplug.products import Product, ProductRegistry

pytestmark = pytest.mark.geplug_requires_products("atlas_a3")


@pytest.fixture(scope="module")
def a3(geplug_product_registry: ProductRegistry) -> Product:
    return geplug_product_registry.get("atlas_a3")


@pytest.mark.parametrize(
    "soc",
    ["Ascend910_9391", "Ascend910_9392", "Ascend910_9381", "Ascend910_9382", "Ascend910_9372",
     "Ascend910_9362"],
)
def test_soc_versions_resolve_to_atlas_a3(
        geplug_product_registry: ProductRegistry, soc: str) -> None:
    assert geplug_product_registry.get(soc).name == "atlas_a3"


def test_family_id_is_a3(a3: Product) -> None:
    assert a3.family_id == "a3"


def test_two_dies_per_device_each_a_rank(a3: Product) -> None:
    assert a3.runtime.dies_per_device == 2


def test_rank_table_v1_2(a3: Product) -> None:
    assert a3.runtime.rank_table_versions == ("1.2",)


def test_sio_is_an_interconnect_target(a3: Product) -> None:
    assert set(a3.profiling.interconnect_targets) == {"HCCS", "PCIe", "inter-chip", "SIO"}


def test_memory_access_group_exists(a3: Product) -> None:
    assert a3.supports("profiling.aic_metrics", "MemoryAccess")
    assert "aic_L0C_to_GM_datas(KB)" in a3.profiling.pmu_columns["MemoryAccess"]


def test_bf16_precision_modes_are_accepted_by_sessions(a3: Product) -> None:
    assert a3.supports("precision.modes", "allow_fp32_to_bf16")
    assert a3.supports("precision.modes_v2", "mixed_bfloat16")


def test_dump_debug_mode_is_all_only(a3: Product) -> None:
    assert a3.dump.debug_modes == ("all",)


def test_instruction_profiling_by_frequency(a3: Product) -> None:
    assert a3.profiling.instr_profiling == "frequency"
    assert "instr_profiling_freq" in a3.profiling.frequencies


def test_training_default_keeps_origin_dtype(a3: Product) -> None:
    assert a3.precision.default_training == "must_keep_origin_dtype"


def test_matmul_takes_bfloat16_on_ai_core(a3: Product) -> None:
    assert "bfloat16" in a3.op("MatMulV2").aicore_dtypes
