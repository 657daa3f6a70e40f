"""The two inference declarations (310p, 310b): what sets them apart, via the public API."""

from __future__ import annotations

import pytest

from geplug.products import Product, ProductRegistry

pytestmark = pytest.mark.geplug_requires_products("atlas_infer", "atlas_200i_a2")

NAMES = ("atlas_infer", "atlas_200i_a2")


@pytest.fixture(scope="module")
def p310p(geplug_product_registry: ProductRegistry) -> Product:
    return geplug_product_registry.get("atlas_infer")


@pytest.fixture(scope="module")
def p310b(geplug_product_registry: ProductRegistry) -> Product:
    return geplug_product_registry.get("atlas_200i_a2")


@pytest.mark.parametrize(
    ("soc", "name"),
    [("Ascend310P3", "atlas_infer"), ("Ascend310P3vir04", "atlas_infer"),
     ("Ascend310P7", "atlas_infer"), ("Ascend310B1", "atlas_200i_a2"),
     ("Ascend310B4", "atlas_200i_a2")],
)
def test_soc_versions_resolve(
        geplug_product_registry: ProductRegistry, soc: str, name: str) -> None:
    assert geplug_product_registry.get(soc).name == name


def test_both_products_come_from_one_distribution(geplug_product_registry: ProductRegistry) -> None:
    dists = {geplug_product_registry.get(n).distribution.split()[0] for n in NAMES}
    assert dists == {"geplug-atlas-infer"}


@pytest.mark.parametrize("name", NAMES)
def test_initialize_system_is_unsupported(
        geplug_product_registry: ProductRegistry, name: str) -> None:
    assert not geplug_product_registry.get(name).supports("runtime.initialize_system")


@pytest.mark.parametrize("name", NAMES)
def test_no_training_and_no_training_default(
        geplug_product_registry: ProductRegistry, name: str) -> None:
    product = geplug_product_registry.get(name)
    assert not product.runtime.training
    assert product.precision.default_training == ""
    assert not product.profiling.training_trace


@pytest.mark.parametrize("name", NAMES)
def test_dump_debug_mode_is_not_applicable(
        geplug_product_registry: ProductRegistry, name: str) -> None:
    assert geplug_product_registry.get(name).dump.debug_modes == ()


@pytest.mark.parametrize("name", NAMES)
def test_inference_default_is_force_fp16(
        geplug_product_registry: ProductRegistry, name: str) -> None:
    product = geplug_product_registry.get(name)
    assert (product.precision.default_inference, product.precision.default_inference_v2) == (
        "force_fp16", "fp16")


def test_310p_has_no_bfloat16_anywhere(p310p: Product) -> None:
    entries = [*p310p.ops.values(), p310p.default_op]
    assert not any("bfloat16" in (*e.aicore_dtypes, *e.aicpu_dtypes) for e in entries)
    assert "mixed_bfloat16" not in (*p310p.precision.modes_v2, *p310p.precision.atc_only_modes)


@pytest.mark.parametrize("op_type", ["MatMulV2", "BatchMatMulV2", "Conv2D", "Conv2DTranspose"])
def test_310p_cube_takes_float16_and_int8(p310p: Product, op_type: str) -> None:
    assert p310p.op(op_type).aicore_dtypes == ("float16", "int8")


def test_310p_has_no_sys_io_sampling(p310p: Product) -> None:
    assert "sys_io_sampling_freq" not in p310p.profiling.frequencies
    assert p310p.profiling.sys_io_targets == ()


def test_310p_interconnect_is_pcie(p310p: Product) -> None:
    assert p310p.profiling.interconnect_targets == ("PCIe",)


def test_310p_pmu_columns_are_unprefixed(p310p: Product) -> None:
    assert not p310p.profiling.split_cores
    assert p310p.profiling.pmu_columns["PipeUtilization"][1] == "total_cycles"


def test_310b_bf16_modes_are_atc_only(p310b: Product) -> None:
    for mode in ("allow_mix_precision_bf16", "allow_fp32_to_bf16", "mixed_bfloat16"):
        assert mode in p310b.precision.atc_only_modes
        assert mode not in (*p310b.precision.modes, *p310b.precision.modes_v2)


def test_310b_operators_take_bfloat16(p310b: Product) -> None:
    assert "bfloat16" in p310b.op("MatMulV2").aicore_dtypes


def test_310b_default_metrics_group_is_pipeline_execute_utilization(p310b: Product) -> None:
    assert p310b.profiling.aic_metrics_default == "PipelineExecuteUtilization"
    assert "PipelineExecuteUtilization" in p310b.profiling.pmu_columns


def test_310b_has_l2cache_but_not_memory_access(p310b: Product) -> None:
    assert p310b.supports("profiling.aic_metrics", "L2Cache")
    assert not p310b.supports("profiling.aic_metrics", "MemoryAccess")


def test_310b_pipe_utilization_has_no_fixpipe(p310b: Product) -> None:
    assert not any("fixpipe" in c for c in p310b.profiling.pmu_columns["PipeUtilization"])


def test_310b_has_no_interconnect_sampling(p310b: Product) -> None:
    assert "sys_interconnection_freq" not in p310b.profiling.frequencies


def test_310b_has_no_rank_queries(p310b: Product) -> None:
    assert not p310b.runtime.rank_queries


@pytest.mark.parametrize("name", NAMES)
def test_instruction_profiling_is_unsupported(
        geplug_product_registry: ProductRegistry, name: str) -> None:
    assert geplug_product_registry.get(name).profiling.instr_profiling == "unsupported"
