"""A conformance suite generated from a product's own declaration, run with plain ``pytest``.

A vendor tests a card by importing the suite into one test module::

    # tests/test_conformance.py
    from geplug.testing.conformance import *  # noqa: F403 - the test_* functions

    GEPLUG_CONFORMANCE = "example_card"       # the product(s) under test

or, with no file at all, ``pytest -p geplug.testing --geplug-conformance=example_card``.
Importing the suite turns geplug's pytest plugin on for that module (``pytest_plugins``).
Every test takes the ``geplug_conformance_product`` fixture (see :mod:`geplug.testing.plugin`),
parametrised over the named products (all selected installed products when none is named).
The checks are the facts a declaration must agree with (``docs/reference/options.md``,
``formats.md``) and the invariants the core and the simulator rely on; each failure message
names the key path in ``capabilities.toml``.
"""

from __future__ import annotations

import fnmatch
from typing import Any

from geplug.products.domains import (
    BF16_MODES,
    DEBUG_CONFIG_ITEMS,
    DUMP_DEBUG_MODES,
    FREQUENCY_OPTIONS,
    HOST_SYS_ITEMS,
    IMPL_INI_VALUES,
    KERNEL_META_SUFFIXES,
    PRECISION_MODES,
    PRECISION_MODES_V2,
    PROFILING_SWITCHES,
    REQUIRED_OP_TYPES,
    SELECT_IMPLMODES,
)
from geplug.products.schema import DTYPES, Product

pytest_plugins = ["geplug.testing"]
"""A test module importing this suite turns on geplug's pytest plugin (its fixtures)."""

__all__ = [
    "DEBUG_CONFIG_ITEMS",
    "DUMP_DEBUG_MODES",
    "FREQUENCY_OPTIONS",
    "HOST_SYS_ITEMS",
    "KERNEL_META_SUFFIXES",
    "PRECISION_MODES",
    "PRECISION_MODES_V2",
    "REQUIRED_OP_TYPES",
    "check_product",
    "pytest_plugins",
    "test_aic_metrics_aliases_point_at_declared_groups",
    "test_aic_metrics_default_is_declared",
    "test_bf16_modes_match_bf16_kernels",
    "test_compute_model_is_positive_and_approximate",
    "test_debug_config_items_are_documented",
    "test_default_op_runs_float32",
    "test_dump_debug_modes_are_known",
    "test_every_aic_metrics_group_has_pmu_columns",
    "test_every_kernel_meta_level_is_declared",
    "test_every_op_dtype_is_known",
    "test_every_op_runs_somewhere",
    "test_frequency_options_are_known",
    "test_frequency_ranges_hold_their_defaults",
    "test_host_link_is_positive",
    "test_host_sys_items_are_known",
    "test_identity_is_complete",
    "test_impl_modes_are_accepted_values",
    "test_implmode_default_is_selectable",
    "test_instr_profiling_exclusions_exactly_with_frequency_style",
    "test_instr_profiling_style_matches_frequencies",
    "test_kernel_meta_level_0_writes_nothing",
    "test_kernel_meta_suffixes_are_known",
    "test_optypelist_names_listed_ops",
    "test_pmu_na_metrics_match_declared_columns",
    "test_precision_defaults_are_accepted_modes",
    "test_precision_modes_are_known",
    "test_required_op_types_are_listed",
    "test_soc_versions_are_unique_across_installed_products",
    "test_sys_io_and_interconnect_targets_match_frequencies",
]

def _all_ops(product: Product) -> list[Any]:
    return [*product.ops.values(), product.default_op]


# -- identity ---------------------------------------------------------------------------------


def test_identity_is_complete(geplug_conformance_product: Product) -> None:
    p = geplug_conformance_product
    assert p.name and p.display_name and p.family_id, "product.name/display_name/family_id"
    assert p.soc_versions, "product.soc_versions is empty"
    assert all(s.strip() == s and s for s in p.soc_versions), (
        f"product.soc_versions has blank or padded strings: {list(p.soc_versions)!r}")


def test_soc_versions_are_unique_across_installed_products(
        geplug_conformance_product: Product) -> None:
    from geplug.testing.installed import installed_registry

    owners = installed_registry().soc_owners()
    me = geplug_conformance_product.name
    shared = {s: [o for o in owners.get(s, []) if o != me]
              for s in geplug_conformance_product.soc_versions}
    shared = {s: others for s, others in shared.items() if others}
    assert not shared, f"product.soc_versions also declared by other products: {shared!r}"


# -- operators --------------------------------------------------------------------------------


def test_required_op_types_are_listed(geplug_conformance_product: Product) -> None:
    missing = [op for op in REQUIRED_OP_TYPES if op not in geplug_conformance_product.ops]
    assert not missing, f"[ops] lacks entries for {missing!r}"


def test_every_op_dtype_is_known(geplug_conformance_product: Product) -> None:
    bad = {
        op.op_type: sorted(set(op.aicore_dtypes + op.aicpu_dtypes) - set(DTYPES))
        for op in _all_ops(geplug_conformance_product)
        if set(op.aicore_dtypes + op.aicpu_dtypes) - set(DTYPES)
    }
    assert not bad, f"unknown dtypes in [ops]: {bad!r}; known: {list(DTYPES)!r}"


def test_every_op_runs_somewhere(geplug_conformance_product: Product) -> None:
    nowhere = [op.op_type for op in _all_ops(geplug_conformance_product)
               if not op.aicore_dtypes and not op.aicpu_dtypes]
    assert not nowhere, f"ops with neither aicore_dtypes nor aicpu_dtypes: {nowhere!r}"


def test_default_op_runs_float32(geplug_conformance_product: Product) -> None:
    default = geplug_conformance_product.default_op
    assert "float32" in default.aicore_dtypes + default.aicpu_dtypes, (
        "[ops.default] must run float32 on some engine so any ONNX operator can be simulated")


def test_bf16_modes_match_bf16_kernels(geplug_conformance_product: Product) -> None:
    p = geplug_conformance_product
    modes = set(p.precision.modes) | set(p.precision.modes_v2) | set(p.precision.atc_only_modes)
    has_modes = bool(modes & BF16_MODES)
    kernels = [op.op_type for op in _all_ops(p) if "bfloat16" in op.aicore_dtypes]
    assert has_modes == bool(kernels), (
        f"bf16 precision modes {sorted(modes & BF16_MODES)!r} but AI Core bfloat16 kernels "
        f"{kernels!r}: a product has both or neither (bf16 modes need bf16 kernels)")


# -- precision and implementation modes -------------------------------------------------------


def test_precision_modes_are_known(geplug_conformance_product: Product) -> None:
    prec = geplug_conformance_product.precision
    assert set(prec.modes) <= PRECISION_MODES, (
        f"precision.modes: unknown {sorted(set(prec.modes) - PRECISION_MODES)!r}")
    assert set(prec.modes_v2) <= PRECISION_MODES_V2, (
        f"precision.modes_v2: unknown {sorted(set(prec.modes_v2) - PRECISION_MODES_V2)!r}")
    extra = set(prec.atc_only_modes) - PRECISION_MODES - PRECISION_MODES_V2
    assert not extra, f"precision.atc_only_modes: unknown {sorted(extra)!r}"


def test_precision_defaults_are_accepted_modes(geplug_conformance_product: Product) -> None:
    p = geplug_conformance_product
    prec = p.precision
    v1 = set(prec.modes) | set(prec.atc_only_modes)
    v2 = set(prec.modes_v2) | set(prec.atc_only_modes)
    assert prec.default_inference in v1, f"precision.default_inference {prec.default_inference!r}"
    assert prec.default_inference_v2 in v2, (
        f"precision.default_inference_v2 {prec.default_inference_v2!r}")
    if p.runtime.training:
        assert prec.default_training in v1, (
            f"precision.default_training {prec.default_training!r} (training product)")
    else:
        assert prec.default_training == "", "precision.default_training set without training"
    assert prec.default_training_v2 in v2 | {""}, (
        f"precision.default_training_v2 {prec.default_training_v2!r}")
    assert prec.torch_default in v1 | {""}, f"precision.torch_default {prec.torch_default!r}"


def test_implmode_default_is_selectable(geplug_conformance_product: Product) -> None:
    im = geplug_conformance_product.implmode
    assert set(im.select_values) <= SELECT_IMPLMODES, (
        f"implmode.select_values: unknown {sorted(set(im.select_values) - SELECT_IMPLMODES)!r}")
    assert im.default_mode in im.select_values, f"implmode.default_mode {im.default_mode!r}"


def test_impl_modes_are_accepted_values(geplug_conformance_product: Product) -> None:
    p = geplug_conformance_product
    ini = set(p.implmode.ini_values)
    assert ini <= IMPL_INI_VALUES, f"implmode.ini_values: unknown {sorted(ini - IMPL_INI_VALUES)!r}"
    bad = {op.op_type: sorted(set(op.impl_modes) - ini) for op in _all_ops(p)
           if set(op.impl_modes) - ini}
    assert not bad, f"ops impl_modes outside implmode.ini_values: {bad!r}"
    for stem, table in p.implmode.builtin_lists.items():
        wrong = {op: mode for op, mode in table.items() if mode not in ini}
        assert not wrong, f"implmode.builtin_lists.{stem}: modes not in ini_values: {wrong!r}"


def test_optypelist_names_listed_ops(geplug_conformance_product: Product) -> None:
    p = geplug_conformance_product
    missing = [op for op in p.implmode.optypelist_allowed if op not in p.ops]
    assert not missing, f"implmode.optypelist_allowed names unlisted ops {missing!r}"


# -- dump and debug ---------------------------------------------------------------------------


def test_dump_debug_modes_are_known(geplug_conformance_product: Product) -> None:
    modes = set(geplug_conformance_product.dump.debug_modes)
    unknown = sorted(modes - DUMP_DEBUG_MODES)
    assert not unknown, f"dump.debug_modes: unknown {unknown!r}"


def test_every_kernel_meta_level_is_declared(geplug_conformance_product: Product) -> None:
    levels = set(geplug_conformance_product.debug.kernel_meta)
    assert levels == {"0", "1", "2", "3", "4"}, (
        f"debug.kernel_meta must declare op_debug_level 0-4, got {sorted(levels)!r}")


def test_kernel_meta_level_0_writes_nothing(geplug_conformance_product: Product) -> None:
    assert tuple(geplug_conformance_product.debug.kernel_meta.get("0", ())) == (), (
        "debug.kernel_meta.0: op_debug_level 0 creates no kernel_meta files")


def test_kernel_meta_suffixes_are_known(geplug_conformance_product: Product) -> None:
    debug = geplug_conformance_product.debug
    used = {s for files in (*debug.kernel_meta.values(), *debug.debug_config_files.values())
            for s in files}
    assert used <= set(KERNEL_META_SUFFIXES), (
        f"debug: unknown kernel_meta files {sorted(used - set(KERNEL_META_SUFFIXES))!r}")


def test_debug_config_items_are_documented(geplug_conformance_product: Product) -> None:
    items = set(geplug_conformance_product.debug.debug_config_files)
    assert items <= DEBUG_CONFIG_ITEMS, (
        f"debug.debug_config_files: unknown items {sorted(items - DEBUG_CONFIG_ITEMS)!r}")


# -- profiling --------------------------------------------------------------------------------


def test_aic_metrics_default_is_declared(geplug_conformance_product: Product) -> None:
    prof = geplug_conformance_product.profiling
    assert prof.aic_metrics_default in prof.aic_metrics, (
        f"profiling.aic_metrics_default {prof.aic_metrics_default!r} not in aic_metrics")


def test_every_aic_metrics_group_has_pmu_columns(geplug_conformance_product: Product) -> None:
    prof = geplug_conformance_product.profiling
    missing = [g for g in prof.aic_metrics if not prof.pmu_columns.get(g)]
    assert not missing, f"profiling.pmu_columns lacks the column block of {missing!r}"


def test_aic_metrics_aliases_point_at_declared_groups(geplug_conformance_product: Product) -> None:
    prof = geplug_conformance_product.profiling
    bad = {k: v for k, v in prof.aic_metrics_aliases.items() if v not in prof.aic_metrics}
    assert not bad, f"profiling.aic_metrics_aliases point at undeclared groups: {bad!r}"


def test_frequency_options_are_known(geplug_conformance_product: Product) -> None:
    names = set(geplug_conformance_product.profiling.frequencies)
    assert names <= FREQUENCY_OPTIONS, (
        f"profiling.frequencies: unknown options {sorted(names - FREQUENCY_OPTIONS)!r}")


def test_frequency_ranges_hold_their_defaults(geplug_conformance_product: Product) -> None:
    for name, rng in geplug_conformance_product.profiling.frequencies.items():
        assert 1 <= rng.min <= rng.max, f"profiling.frequencies.{name}: [{rng.min}, {rng.max}]"
        if rng.default is not None:
            assert rng.min <= rng.default <= rng.max, f"profiling.frequencies.{name}.default"
        for item, top in rng.item_max.items():
            assert top >= rng.min, f"profiling.frequencies.{name}.item_max.{item}"


def test_instr_profiling_style_matches_frequencies(geplug_conformance_product: Product) -> None:
    prof = geplug_conformance_product.profiling
    has_freq = "instr_profiling_freq" in prof.frequencies
    assert has_freq == (prof.instr_profiling == "frequency"), (
        f"profiling.instr_profiling = {prof.instr_profiling!r} but instr_profiling_freq is "
        f"{'declared' if has_freq else 'absent'} (the frequency style needs it, the others "
        "must not declare it)")


def test_instr_profiling_exclusions_exactly_with_frequency_style(
    geplug_conformance_product: Product,
) -> None:
    prof = geplug_conformance_product.profiling
    assert bool(prof.instr_profiling_exclusions) == (prof.instr_profiling == "frequency"), (
        "profiling.instr_profiling_exclusions: the keys instr_profiling_freq excludes are "
        f"declared exactly when instr_profiling = 'frequency', got "
        f"{list(prof.instr_profiling_exclusions)!r} with {prof.instr_profiling!r}")
    unknown = sorted(set(prof.instr_profiling_exclusions) - PROFILING_SWITCHES)
    assert not unknown, f"profiling.instr_profiling_exclusions: unknown keys {unknown!r}"


def test_sys_io_and_interconnect_targets_match_frequencies(
        geplug_conformance_product: Product) -> None:
    prof = geplug_conformance_product.profiling
    assert bool(prof.sys_io_targets) == ("sys_io_sampling_freq" in prof.frequencies), (
        "profiling.sys_io_targets and frequencies.sys_io_sampling_freq: both or neither (R25)")
    assert bool(prof.interconnect_targets) == (
        "sys_interconnection_freq" in prof.frequencies), (
        "profiling.interconnect_targets and frequencies.sys_interconnection_freq: both or "
        "neither (R25)")


def _base_metric(column: str) -> str:
    """``aic_ub_read_bw(GB/s)`` -> ``ub_read_bw``: the name ``pmu_na_metrics`` globs match."""
    name = column[4:] if column.startswith(("aic_", "aiv_")) else column
    return name.split("(", 1)[0]


def test_pmu_na_metrics_match_declared_columns(geplug_conformance_product: Product) -> None:
    prof = geplug_conformance_product.profiling
    bases = {_base_metric(c) for cols in prof.pmu_columns.values() for c in cols}
    unmatched = [p for p in prof.pmu_na_metrics
                 if not any(fnmatch.fnmatchcase(b, p) for b in bases)]
    assert not unmatched, (
        f"profiling.pmu_na_metrics: patterns matching no pmu_columns metric {unmatched!r} "
        "(base names: no aic_/aiv_ prefix, no unit; `geplug describe PRODUCT` lists the "
        "columns)")


def test_host_sys_items_are_known(geplug_conformance_product: Product) -> None:
    items = set(geplug_conformance_product.profiling.host_sys)
    unknown = sorted(items - HOST_SYS_ITEMS)
    assert not unknown, f"profiling.host_sys: unknown {unknown!r}"


# -- compute model ----------------------------------------------------------------------------


def test_compute_model_is_positive_and_approximate(geplug_conformance_product: Product) -> None:
    c = geplug_conformance_product.compute
    assert c.approximate, "compute.approximate must be true: public figures, not measurements"
    assert min(c.ai_cores, c.clock_mhz) > 0 and c.vector_cores >= 0, "compute core counts"
    assert min(c.memory_bandwidth_gbps, c.aicpu_gflops) > 0, "compute bandwidth / aicpu"
    assert c.launch_overhead_us >= 0, "compute.launch_overhead_us"
    assert c.cube_tflops and c.vector_tflops, "compute.cube_tflops / vector_tflops are empty"
    bad = {k: v for k, v in {**c.cube_tflops, **c.vector_tflops}.items() if v <= 0}
    assert not bad, f"compute throughput must be positive: {bad!r}"
    cube_ops = {d for op in _all_ops(geplug_conformance_product) if op.op_class == "matrix"
                for d in op.aicore_dtypes if d.startswith(("float", "bfloat"))}
    missing = sorted(cube_ops - set(c.cube_tflops))
    assert not missing, f"compute.cube_tflops lacks float dtypes the cube ops take: {missing!r}"


def test_host_link_is_positive(geplug_conformance_product: Product) -> None:
    c = geplug_conformance_product.compute
    assert c.host_link_gbps > 0, f"compute.host_link_gbps must be > 0, got {c.host_link_gbps!r}"
    assert c.host_copy_overhead_us >= 0, (
        f"compute.host_copy_overhead_us must be >= 0, got {c.host_copy_overhead_us!r}")


_TESTS = [v for k, v in sorted(globals().items()) if k.startswith("test_")]


def check_product(product: Product) -> list[str]:
    """Run every conformance check on ``product``; the failure messages (empty = conforms).

    For use outside pytest (a vendor's CI script, ``python -c``): needs no pytest installed.
    """
    failures = []
    for test in _TESTS:
        try:
            test(product)
        except AssertionError as exc:
            failures.append(f"{test.__name__}: {exc}")
    return failures
