"""Cross-product checks of the shipped declarations: run against every installed product."""

from __future__ import annotations

from collections import defaultdict

import pytest

from geplug.products import OpSupport, Product
from geplug.products.domains import BF16_MODES, DUMP_DEBUG_MODES
from geplug.products.domains import REQUIRED_OP_TYPES as REQUIRED_OPS
from geplug.testing.plugin import installed_products

CUBE_OPS = ("MatMulV2", "BatchMatMulV2", "Conv2D", "Conv2DTranspose", "Conv2DBackpropInput",
            "Conv2DBackpropFilter", "DynamicRNN", "DynamicGRUV2",
            "RNN", "Einsum")
TORCH_MODES = ("allow_fp32_to_fp16", "must_keep_origin_dtype")
"""The only ACL_PRECISION_MODE values torch_npu accepts (options.md §5.1)."""


def _all_entries(product: Product) -> list[OpSupport]:
    return [*product.ops.values(), product.default_op]


def test_required_ops_are_declared(geplug_product: Product) -> None:
    assert [op for op in REQUIRED_OPS if op not in geplug_product.ops] == []


def test_unlisted_op_uses_the_default_entry(geplug_product: Product) -> None:
    entry = geplug_product.op("SomeUnlistedOnnxOp")
    assert entry.op_type == "SomeUnlistedOnnxOp"
    assert entry.aicore_dtypes == geplug_product.default_op.aicore_dtypes


def test_every_op_runs_somewhere(geplug_product: Product) -> None:
    assert [e.op_type for e in _all_entries(geplug_product)
            if not (e.aicore_dtypes or e.aicpu_dtypes)] == []


@pytest.mark.parametrize("op_type", CUBE_OPS)
def test_cube_ops_are_matrix_white_list_ops(geplug_product: Product, op_type: str) -> None:
    entry = geplug_product.op(op_type)
    assert entry.op_class == "matrix"
    assert entry.precision_reduce is True
    assert "float16" in entry.aicore_dtypes


def test_only_cube_ops_are_matrix_ops(geplug_product: Product) -> None:
    """CUBE_OPS on every product; the fused attention kernels where the SoC has them."""
    from geplug.device.cost import ATTENTION_OPS

    ops = geplug_product.ops.values()
    matrix = {e.op_type for e in ops if e.op_class == "matrix"}
    assert matrix - set(ATTENTION_OPS) == set(CUBE_OPS)
    assert all(geplug_product.ops[op].op_class == "matrix" for op in ATTENTION_OPS
               if op in geplug_product.ops)


def test_inference_defaults_are_accepted_modes(geplug_product: Product) -> None:
    assert geplug_product.precision.default_inference in geplug_product.precision.modes
    assert geplug_product.precision.default_inference_v2 in geplug_product.precision.modes_v2


def test_training_defaults_are_accepted_modes_or_empty(geplug_product: Product) -> None:
    precision = geplug_product.precision
    if geplug_product.runtime.training:
        assert precision.default_training in precision.modes
        assert precision.default_training_v2 in ("", *precision.modes_v2)
    else:
        assert (precision.default_training, precision.default_training_v2) == ("", "")


def test_torch_default_is_a_value_torch_accepts(geplug_product: Product) -> None:
    assert geplug_product.precision.torch_default in TORCH_MODES


def test_atc_only_modes_are_not_session_modes(geplug_product: Product) -> None:
    session = {*geplug_product.precision.modes, *geplug_product.precision.modes_v2}
    assert session.isdisjoint(geplug_product.precision.atc_only_modes)


def test_bfloat16_ops_exactly_where_bf16_modes_exist(geplug_product: Product) -> None:
    accepted = {*geplug_product.precision.modes, *geplug_product.precision.modes_v2,
                *geplug_product.precision.atc_only_modes}
    has_bf16_modes = any(mode in accepted for mode in BF16_MODES)
    has_bf16_ops = any("bfloat16" in e.aicore_dtypes for e in _all_entries(geplug_product))
    assert has_bf16_ops == has_bf16_modes


def test_cube_dtypes_have_cube_throughput(geplug_product: Product) -> None:
    dtypes = {d for op in CUBE_OPS for d in geplug_product.op(op).aicore_dtypes}
    assert dtypes <= set(geplug_product.compute.cube_tflops)


def test_vector_float_dtypes_have_vector_throughput(geplug_product: Product) -> None:
    floats = {"float16", "bfloat16", "float32"}
    dtypes = {d for e in _all_entries(geplug_product) if e.op_class == "vector"
              for d in e.aicore_dtypes if d in floats}
    assert dtypes <= set(geplug_product.compute.vector_tflops)


def test_compute_model_is_approximate_and_positive(geplug_product: Product) -> None:
    compute = geplug_product.compute
    assert compute.approximate
    assert compute.source
    numbers = [compute.ai_cores, compute.vector_cores, compute.clock_mhz,
               compute.memory_bandwidth_gbps, compute.aicpu_gflops, compute.launch_overhead_us,
               *compute.cube_tflops.values(), *compute.vector_tflops.values()]
    assert min(numbers) > 0


def test_op_impl_modes_are_accepted_ini_values(geplug_product: Product) -> None:
    allowed = set(geplug_product.implmode.ini_values)
    assert {m for e in _all_entries(geplug_product) for m in e.impl_modes} <= allowed


def test_builtin_lists_name_ops_with_that_mode(geplug_product: Product) -> None:
    wrong = [(stem, op) for stem, entries in geplug_product.implmode.builtin_lists.items()
             for op, mode in entries.items() if mode not in geplug_product.op(op).impl_modes]
    assert wrong == []


def test_optypelist_ops_have_both_modes(geplug_product: Product) -> None:
    for op in geplug_product.implmode.optypelist_allowed:
        assert {"high_precision", "high_performance"} <= set(geplug_product.op(op).impl_modes)


def test_default_impl_mode_is_a_select_value(geplug_product: Product) -> None:
    assert geplug_product.implmode.default_mode in geplug_product.implmode.select_values


def test_dump_debug_modes_are_known_values(geplug_product: Product) -> None:
    assert set(geplug_product.dump.debug_modes) <= set(DUMP_DEBUG_MODES)


def test_dump_debug_modes_only_with_training(geplug_product: Product) -> None:
    assert bool(geplug_product.dump.debug_modes) == geplug_product.runtime.training


def test_overflow_mode_is_known(geplug_product: Product) -> None:
    assert geplug_product.dump.overflow_mode in ("inf_nan", "saturation")


def test_default_aic_metrics_group_is_listed(geplug_product: Product) -> None:
    default = geplug_product.profiling.aic_metrics_default
    assert geplug_product.supports("profiling.aic_metrics", default)


def test_every_listed_group_has_pmu_columns(geplug_product: Product) -> None:
    assert set(geplug_product.profiling.aic_metrics) <= set(geplug_product.profiling.pmu_columns)


def test_a_family_has_pmu_columns_only_for_its_listed_groups(geplug_product: Product) -> None:
    # A card that extends a family and drops a group keeps the family's (unused) column
    # block, since tables merge key by key; a family itself declares no spare block.
    if geplug_product.extends:
        pytest.skip("a variant card inherits the family's column blocks")
    assert set(geplug_product.profiling.pmu_columns) == set(geplug_product.profiling.aic_metrics)


def test_pmu_blocks_start_with_time_and_cycles(geplug_product: Product) -> None:
    cycles = "aic_total_cycles" if geplug_product.profiling.split_cores else "total_cycles"
    for columns in geplug_product.profiling.pmu_columns.values():
        assert columns[:2] == ("aicore_time(us)", cycles)


def test_pmu_prefixes_follow_split_cores(geplug_product: Product) -> None:
    derived = {"aicore_time(us)", "total_cycles", "cube_utilization(%)", "memory_bound"}
    for columns in geplug_product.profiling.pmu_columns.values():
        prefixed = [c for c in columns if c not in derived]
        if geplug_product.profiling.split_cores:
            assert all(c.startswith(("aic_", "aiv_")) for c in prefixed)
        else:
            assert not any(c.startswith(("aic_", "aiv_")) for c in prefixed)


def test_pmu_blocks_have_no_duplicate_columns(geplug_product: Product) -> None:
    for columns in geplug_product.profiling.pmu_columns.values():
        assert len(columns) == len(set(columns))


def test_aliases_point_at_listed_groups(geplug_product: Product) -> None:
    profiling = geplug_product.profiling
    assert set(profiling.aic_metrics_aliases.values()) <= set(profiling.aic_metrics)


def test_frequency_defaults_lie_in_their_ranges(geplug_product: Product) -> None:
    for freq in geplug_product.profiling.frequencies.values():
        assert freq.min <= (freq.default if freq.default is not None else freq.min) <= freq.max
        assert all(limit >= freq.max for limit in freq.item_max.values())


def test_instr_profiling_freq_exactly_with_frequency_style(geplug_product: Product) -> None:
    has_freq = "instr_profiling_freq" in geplug_product.profiling.frequencies
    assert has_freq == (geplug_product.profiling.instr_profiling == "frequency")


def test_sys_io_targets_exactly_with_sys_io_sampling(geplug_product: Product) -> None:
    has_freq = "sys_io_sampling_freq" in geplug_product.profiling.frequencies
    assert has_freq == bool(geplug_product.profiling.sys_io_targets)


def test_interconnect_targets_exactly_with_interconnect_sampling(geplug_product: Product) -> None:
    has_freq = "sys_interconnection_freq" in geplug_product.profiling.frequencies
    assert has_freq == bool(geplug_product.profiling.interconnect_targets)


def test_kernel_meta_levels_zero_to_four(geplug_product: Product) -> None:
    kernel_meta = geplug_product.debug.kernel_meta
    assert sorted(kernel_meta) == ["0", "1", "2", "3", "4"]
    assert kernel_meta["0"] == ()
    assert set(kernel_meta["3"]) == {".o", ".json"}


def test_kernel_meta_debug_levels_keep_objects(geplug_product: Product) -> None:
    for level in ("1", "2", "4"):
        assert {".o", ".json"} <= set(geplug_product.debug.kernel_meta[level])


def test_compute_json_only_with_ub_fusion(geplug_product: Product) -> None:
    keeps = "_compute.json" in geplug_product.debug.kernel_meta["4"]
    assert keeps == geplug_product.debug.ub_fusion


def test_training_trace_only_with_training(geplug_product: Product) -> None:
    assert geplug_product.profiling.training_trace == geplug_product.runtime.training


def test_rank_tables_only_with_initialize_system(geplug_product: Product) -> None:
    if not geplug_product.runtime.initialize_system:
        assert geplug_product.runtime.rank_table_versions == ()


def test_soc_versions_are_unique_across_products() -> None:
    owners: dict[str, list[str]] = defaultdict(list)
    for product in installed_products():
        for soc in product.soc_versions:
            owners[soc].append(product.name)
    assert {soc: names for soc, names in owners.items() if len(names) > 1} == {}


def test_mixed_precision_lists_agree_across_products() -> None:
    seen: dict[str, set[object]] = defaultdict(set)
    for product in installed_products():
        for op_type, entry in product.ops.items():
            seen[op_type].add(entry.precision_reduce)
    assert {op: flags for op, flags in seen.items() if len(flags) > 1} == {}


def test_high_precision_impl_modes_agree_across_products() -> None:
    seen: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    shared = ("high_precision", "high_performance")
    for product in installed_products():
        for op_type, entry in product.ops.items():
            if entry.op_class == "vector":
                seen[op_type].add(tuple(m for m in entry.impl_modes if m in shared))
    assert {op: modes for op, modes in seen.items() if len(modes) > 1} == {}


def test_host_link_is_declared_per_bus(geplug_product: Product) -> None:
    # PCIe 4.0 x16 ~ 25 GB/s, PCIe 5.0 x16 ~ 50 GB/s (inferred, approximate)
    assert 1.0 <= geplug_product.compute.host_link_gbps <= 64.0
    assert geplug_product.compute.host_copy_overhead_us > 0


@pytest.mark.geplug_requires_products("atlas_200i_a2")
def test_310b_reports_vec_and_ub_columns_as_na() -> None:
    from geplug.testing.plugin import require_product

    na = require_product("atlas_200i_a2").profiling.pmu_na_metrics
    assert {"vec_ratio", "ub_*_bw*", "vec_*cflt_ratio"} <= set(na)


@pytest.mark.geplug_requires_products("atlas_a2", "atlas_train")
def test_910b_host_link_is_faster_than_910() -> None:
    from geplug.testing.plugin import require_product

    a2, train = require_product("atlas_a2"), require_product("atlas_train")
    assert a2.compute.host_link_gbps > train.compute.host_link_gbps
