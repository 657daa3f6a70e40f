"""The Atlas training series (910) declaration: the facts that set it apart, via the public API."""

from __future__ import annotations

import pytest

from geplug.products import Product, ProductRegistry

pytestmark = pytest.mark.geplug_requires_products("atlas_train")

CUBE_OPS = ("MatMulV2", "BatchMatMulV2", "Conv2D", "Conv2DTranspose")


@pytest.fixture(scope="module")
def train(geplug_product_registry: ProductRegistry) -> Product:
    return geplug_product_registry.get("atlas_train")


@pytest.mark.parametrize(
    "soc", ["Ascend910A", "Ascend910B", "Ascend910ProA", "Ascend910ProB", "Ascend910PremiumA"]
)
def test_soc_versions_resolve_to_atlas_train(
        geplug_product_registry: ProductRegistry, soc: str) -> None:
    assert geplug_product_registry.get(soc).name == "atlas_train"


def test_family_id_is_910(train: Product) -> None:
    assert train.family_id == "910"


@pytest.mark.parametrize("op_type", CUBE_OPS)
def test_cube_ops_take_float16_and_int8_only_on_ai_core(train: Product, op_type: str) -> None:
    assert train.op(op_type).aicore_dtypes == ("float16", "int8")


@pytest.mark.parametrize("op_type", CUBE_OPS)
def test_cube_ops_run_float32_on_ai_cpu(train: Product, op_type: str) -> None:
    assert "float32" in train.op(op_type).aicpu_dtypes


def test_no_bfloat16_in_any_operator_entry(train: Product) -> None:
    entries = [*train.ops.values(), train.default_op]
    offenders = [e.op_type for e in entries if "bfloat16" in (*e.aicore_dtypes, *e.aicpu_dtypes)]
    assert offenders == []


def test_no_bfloat16_in_compute_model(train: Product) -> None:
    assert "bfloat16" not in train.compute.cube_tflops
    assert "bfloat16" not in train.compute.vector_tflops


def test_bf16_precision_modes_are_rejected(train: Product) -> None:
    for mode in ("allow_mix_precision_bf16", "allow_fp32_to_bf16"):
        assert not train.supports("precision.modes", mode)
        assert mode not in train.precision.atc_only_modes
    assert not train.supports("precision.modes_v2", "mixed_bfloat16")


def test_three_dump_debug_modes(train: Product) -> None:
    assert set(train.dump.debug_modes) == {"aicore_overflow", "atomic_overflow", "all"}


def test_training_default_is_allow_fp32_to_fp16_without_v2_default(train: Product) -> None:
    assert train.precision.default_training == "allow_fp32_to_fp16"
    assert train.precision.default_training_v2 == ""


def test_torch_default_is_allow_fp32_to_fp16(train: Product) -> None:
    assert train.precision.torch_default == "allow_fp32_to_fp16"


def test_aic_metrics_are_the_first_six_groups(train: Product) -> None:
    assert set(train.profiling.aic_metrics) == {
        "ArithmeticUtilization", "PipeUtilization", "Memory", "MemoryL0", "MemoryUB",
        "ResourceConflictRatio",
    }


def test_pmu_columns_have_no_core_prefix_and_one_total_cycles(train: Product) -> None:
    for columns in train.profiling.pmu_columns.values():
        assert columns[:2] == ("aicore_time(us)", "total_cycles")
        assert not any(c.startswith(("aic_", "aiv_")) for c in columns)


def test_pipe_utilization_has_no_fixpipe_columns(train: Product) -> None:
    assert not any("fixpipe" in c for c in train.profiling.pmu_columns["PipeUtilization"])


def test_instruction_profiling_is_unsupported(train: Product) -> None:
    assert train.profiling.instr_profiling == "unsupported"
    assert "instr_profiling_freq" not in train.profiling.frequencies


def test_l2_switch_collects_hit_rate_only(train: Product) -> None:
    assert train.profiling.l2 == "l2"


def test_rank_tables_v1_and_legacy_template(train: Product) -> None:
    assert set(train.runtime.rank_table_versions) == {"1.0", "legacy"}


def test_overflow_saturates(train: Product) -> None:
    assert train.dump.overflow_mode == "saturation"


def test_enable_float_32_execution_is_not_an_ini_value(train: Product) -> None:
    assert not train.supports("implmode.ini_values", "enable_float_32_execution")


def test_initialize_system_and_training_are_supported(train: Product) -> None:
    assert train.supports("runtime.initialize_system")
    assert train.supports("runtime.training")
