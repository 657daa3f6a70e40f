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

from typing import Any

from geplug.products.coherence import rule_errors
from geplug.products.domains import (
    DEBUG_CONFIG_ITEMS,
    DEBUG_LEVELS,
    DUMP_DEBUG_MODES,
    FREQUENCY_OPTIONS,
    HOST_SYS_ITEMS,
    KERNEL_META_SUFFIXES,
    PRECISION_MODES,
    PRECISION_MODES_V2,
    REQUIRED_OP_TYPES,
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
    "test_memory_usable_is_within_hbm",
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


def _holds(product: Product, *rules: str) -> None:
    """Assert the named load-time rules of :mod:`geplug.products.coherence` hold: a
    declaration is judged by one set of rules, at load and here (a product built with
    ``attrs.evolve`` never went through the load)."""
    errors = rule_errors(product, *rules)
    assert not errors, "; ".join(f"{key}: {message}" for key, message in errors)


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
    _holds(geplug_conformance_product, "ops_run_somewhere")


def test_default_op_runs_float32(geplug_conformance_product: Product) -> None:
    _holds(geplug_conformance_product, "default_op_float32")


def test_bf16_modes_match_bf16_kernels(geplug_conformance_product: Product) -> None:
    _holds(geplug_conformance_product, "bf16_modes_match_kernels")


# -- precision and implementation modes -------------------------------------------------------


def test_precision_modes_are_known(geplug_conformance_product: Product) -> None:
    _holds(geplug_conformance_product, "precision_modes_known")


def test_precision_defaults_are_accepted_modes(geplug_conformance_product: Product) -> None:
    _holds(geplug_conformance_product, "precision_defaults")


def test_implmode_default_is_selectable(geplug_conformance_product: Product) -> None:
    _holds(geplug_conformance_product, "implmode_selectable")


def test_impl_modes_are_accepted_values(geplug_conformance_product: Product) -> None:
    _holds(geplug_conformance_product, "implmode_ini_values", "op_impl_modes")


def test_optypelist_names_listed_ops(geplug_conformance_product: Product) -> None:
    _holds(geplug_conformance_product, "optypelist_ops")


# -- dump and debug ---------------------------------------------------------------------------


def test_dump_debug_modes_are_known(geplug_conformance_product: Product) -> None:
    _holds(geplug_conformance_product, "dump_debug_modes")


def test_every_kernel_meta_level_is_declared(geplug_conformance_product: Product) -> None:
    levels = set(geplug_conformance_product.debug.kernel_meta)
    assert levels == set(DEBUG_LEVELS), (
        f"debug.kernel_meta must declare op_debug_level 0-4, got {sorted(levels)!r}")


def test_kernel_meta_level_0_writes_nothing(geplug_conformance_product: Product) -> None:
    _holds(geplug_conformance_product, "kernel_meta_level_0")


def test_kernel_meta_suffixes_are_known(geplug_conformance_product: Product) -> None:
    _holds(geplug_conformance_product, "kernel_meta_suffixes")


def test_debug_config_items_are_documented(geplug_conformance_product: Product) -> None:
    _holds(geplug_conformance_product, "debug_config_items")


# -- profiling --------------------------------------------------------------------------------


def test_aic_metrics_default_is_declared(geplug_conformance_product: Product) -> None:
    prof = geplug_conformance_product.profiling
    assert prof.aic_metrics_default in prof.aic_metrics, (
        f"profiling.aic_metrics_default {prof.aic_metrics_default!r} not in aic_metrics")


def test_every_aic_metrics_group_has_pmu_columns(geplug_conformance_product: Product) -> None:
    _holds(geplug_conformance_product, "aic_metrics_columns")


def test_aic_metrics_aliases_point_at_declared_groups(geplug_conformance_product: Product) -> None:
    _holds(geplug_conformance_product, "aic_metrics_aliases")


def test_frequency_options_are_known(geplug_conformance_product: Product) -> None:
    _holds(geplug_conformance_product, "frequency_options")


def test_frequency_ranges_hold_their_defaults(geplug_conformance_product: Product) -> None:
    for name, rng in geplug_conformance_product.profiling.frequencies.items():
        assert 1 <= rng.min <= rng.max, f"profiling.frequencies.{name}: [{rng.min}, {rng.max}]"
        if rng.default is not None:
            assert rng.min <= rng.default <= rng.max, f"profiling.frequencies.{name}.default"
        for item, top in rng.item_max.items():
            assert top >= rng.min, f"profiling.frequencies.{name}.item_max.{item}"


def test_instr_profiling_style_matches_frequencies(geplug_conformance_product: Product) -> None:
    _holds(geplug_conformance_product, "instr_profiling_style")


def test_instr_profiling_exclusions_exactly_with_frequency_style(
        geplug_conformance_product: Product) -> None:
    _holds(geplug_conformance_product, "instr_profiling_exclusions")


def test_sys_io_and_interconnect_targets_match_frequencies(
        geplug_conformance_product: Product) -> None:
    _holds(geplug_conformance_product, "sampling_targets")


def test_pmu_na_metrics_match_declared_columns(geplug_conformance_product: Product) -> None:
    _holds(geplug_conformance_product, "pmu_na_metrics")


def test_host_sys_items_are_known(geplug_conformance_product: Product) -> None:
    _holds(geplug_conformance_product, "host_sys_items")


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


def test_memory_usable_is_within_hbm(geplug_conformance_product: Product) -> None:
    _holds(geplug_conformance_product, "memory")


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
