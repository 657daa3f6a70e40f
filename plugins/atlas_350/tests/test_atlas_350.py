"""The Atlas 350 (950) declaration: the facts that set it apart, via the public API."""

from __future__ import annotations

import pytest

from geplug.products import Product, ProductRegistry

pytestmark = pytest.mark.geplug_requires_products("atlas_350")

TBE_MAPPING_SUFFIXES = (".cce", "_loc.json", "_compute.json")


@pytest.fixture(scope="module")
def p350(geplug_product_registry: ProductRegistry) -> Product:
    return geplug_product_registry.get("atlas_350")


def test_soc_version_resolves_to_atlas_350(geplug_product_registry: ProductRegistry) -> None:
    assert geplug_product_registry.get("Ascend950PR_9599").name == "atlas_350"


def test_memory_access_is_not_an_aic_metrics_group(p350: Product) -> None:
    assert not p350.supports("profiling.aic_metrics", "MemoryAccess")
    assert "MemoryAccess" not in p350.profiling.pmu_columns


def test_l2cache_is_an_aic_metrics_group(p350: Product) -> None:
    assert p350.supports("profiling.aic_metrics", "L2Cache")


@pytest.mark.parametrize("suffix", TBE_MAPPING_SUFFIXES)
def test_no_kernel_meta_level_keeps_tbe_mapping_files(p350: Product, suffix: str) -> None:
    kept = {s for files in p350.debug.kernel_meta.values() for s in files}
    assert suffix not in kept


@pytest.mark.parametrize("suffix", TBE_MAPPING_SUFFIXES)
def test_no_op_debug_config_item_keeps_tbe_mapping_files(p350: Product, suffix: str) -> None:
    kept = {s for files in p350.debug.debug_config_files.values() for s in files}
    assert suffix not in kept


def test_no_ub_fusion(p350: Product) -> None:
    assert not p350.debug.ub_fusion


def test_instruction_profiling_is_the_switch(p350: Product) -> None:
    assert p350.profiling.instr_profiling == "switch"
    assert "instr_profiling_freq" not in p350.profiling.frequencies


def test_qos_and_soc_sample_up_to_10000_hz_others_100(p350: Product) -> None:
    freq = p350.profiling.frequencies["sys_hardware_mem_freq"]
    assert freq.max == 100
    assert dict(freq.item_max) == {"qos": 10000, "soc": 10000}


def test_hif8_modes_are_atc_only(p350: Product) -> None:
    for mode in ("cube_hif8", "mixed_hif8"):
        assert mode in p350.precision.atc_only_modes
        assert mode not in p350.precision.modes_v2


@pytest.mark.parametrize("op_type", ["MatMulV2", "BatchMatMulV2", "Conv2D", "Conv2DTranspose"])
def test_cube_ops_take_hifloat8(p350: Product, op_type: str) -> None:
    assert "hifloat8" in p350.op(op_type).aicore_dtypes


def test_l2cache_columns_use_the_local_l2_set(p350: Product) -> None:
    columns = p350.profiling.pmu_columns["L2Cache"]
    assert "aic_read_local_l2_hit" in columns
    assert not any("r0_read_cache" in c for c in columns)


def test_memory_ub_adds_fixp2ub_bandwidth(p350: Product) -> None:
    assert any("ub_fixp2ub_write_bw" in c for c in p350.profiling.pmu_columns["MemoryUB"])


def test_arithmetic_utilization_has_no_vector_ratios(p350: Product) -> None:
    assert not any("vec_" in c for c in p350.profiling.pmu_columns["ArithmeticUtilization"])


def test_memory_has_no_l2_bandwidth(p350: Product) -> None:
    assert not any("_l2_" in c for c in p350.profiling.pmu_columns["Memory"])


def test_sys_io_collects_ub(p350: Product) -> None:
    assert p350.profiling.sys_io_targets == ("UB",)


def test_interconnect_targets(p350: Product) -> None:
    assert set(p350.profiling.interconnect_targets) == {"PCIe", "inter-chip", "CCU", "SIO", "UB"}


def test_rank_table_v2(p350: Product) -> None:
    assert p350.runtime.rank_table_versions == ("2.0",)


def test_dump_debug_mode_is_all_only(p350: Product) -> None:
    assert p350.dump.debug_modes == ("all",)


def test_bf16_session_modes_are_accepted(p350: Product) -> None:
    assert p350.supports("precision.modes", "allow_mix_precision_bf16")


def test_describe_says_no_memory_access_and_no_cce_files(capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from geplug.cli.main import main
    from geplug.plugin import DISABLE_ENV, reset_manager

    monkeypatch.delenv(DISABLE_ENV, raising=False)
    reset_manager(None)
    try:
        assert main(["describe", "atlas_350"]) == 0
    finally:
        reset_manager(None)
    text = " ".join(capsys.readouterr().out.split())
    assert "not in aic_metrics MemoryAccess" in text
    assert "kernel_meta never has .cce, _loc.json, _compute.json" in text
