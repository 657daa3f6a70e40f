"""Cross-key rules of one declaration, checked at load: one truth for a card.

A declaration that is incomplete for a feature (an aic_metrics group without its PMU column
block, a default that is not one of the declared values, ...) is refused when it is loaded,
so ``geplug check``, ``compile``, ``run`` and the conformance suite never disagree about it:
before this, ``check`` accepted a group that ``run`` then refused. Each rule returns
``(dotted key path, message)`` pairs naming the key of ``capabilities.toml``; values outside
a known domain get a did-you-mean. :func:`plausibility` adds warnings for what is valid but
probably a mistake of a card that ``extends`` a family.
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from geplug.products.domains import (
    AIC_METRICS_GROUPS,
    BF16_MODES,
    DEBUG_CONFIG_ITEMS,
    DEBUG_LEVELS,
    DUMP_DEBUG_MODES,
    FREQUENCY_OPTIONS,
    HOST_SYS_ITEMS,
    IMPL_INI_VALUES,
    KERNEL_META_SUFFIXES,
    PRECISION_MODES,
    PRECISION_MODES_V2,
    PROFILING_SWITCHES,
    SELECT_IMPLMODES,
)
from geplug.products.schema import DTYPES, OpSupport, Product

__all__ = ["CHECKS", "RULES", "coherence_errors", "did_you_mean", "plausibility", "rule_errors"]

Errors = list[tuple[str, str]]


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'X'?"`` for the closest of ``choices`` (case-insensitive), or ""."""
    options = sorted({str(c) for c in choices})
    lowered = {c.lower(): c for c in options}
    if value.lower() in lowered and lowered[value.lower()] != value:
        return f"; did you mean {lowered[value.lower()]!r}?"
    close = difflib.get_close_matches(value.lower(), list(lowered), n=1, cutoff=0.6)
    return f"; did you mean {lowered[close[0]]!r}?" if close else ""


def _unknown(errors: Errors, where: str, values: Iterable[str], domain: Iterable[str],
             what: str) -> None:
    """One error per value of ``values`` outside ``domain``, with a did-you-mean."""
    known = sorted(domain)
    for index, value in enumerate(values):
        if value not in known:
            errors.append((f"{where}[{index}]" if not isinstance(values, Mapping) else
                           f"{where}.{value}",
                           f"expected {what} in {known}, got {value!r}"
                           f"{did_you_mean(value, known)}"))


def _identity(p: Product, errors: Errors) -> None:
    for index, soc in enumerate(p.soc_versions):
        if not soc or soc.strip() != soc:
            errors.append((f"product.soc_versions[{index}]",
                           f"expected a SoC string without blanks, got {soc!r}"))
    folded: dict[str, str] = {}
    for soc in p.soc_versions:
        other = folded.setdefault(soc.casefold(), soc)
        if other != soc:
            errors.append(("product.soc_versions", f"expected SoC strings that differ in more "
                           f"than case, got {other!r} and {soc!r} (lookups ignore case)"))


def _ops_run_somewhere(p: Product, errors: Errors) -> None:
    for name, op in {**p.ops, "default": p.default_op}.items():
        if not op.aicore_dtypes and not op.aicpu_dtypes:
            errors.append((f"ops.{name}", "expected aicore_dtypes or aicpu_dtypes to list a "
                           "dtype (an op must run somewhere), got both empty"))


def _default_op_float32(p: Product, errors: Errors) -> None:
    if "float32" not in p.default_op.aicore_dtypes + p.default_op.aicpu_dtypes:
        errors.append(("ops.default", "expected float32 on some engine (any ONNX operator must "
                       "be simulable), got none"))


def _bf16_modes_match_kernels(p: Product, errors: Errors) -> None:
    ops = {**p.ops, "default": p.default_op}
    modes = set(p.precision.modes) | set(p.precision.modes_v2) | set(p.precision.atc_only_modes)
    kernels = [n for n, op in ops.items() if "bfloat16" in op.aicore_dtypes]
    if bool(modes & BF16_MODES) != bool(kernels):
        errors.append(("precision.modes", f"expected bf16 precision modes exactly when some "
                       f"op has AI Core bfloat16 kernels (bf16 modes need bf16 kernels), got modes "
                       f"{sorted(modes & BF16_MODES)} and kernels {kernels}"))


def _op_impl_modes(p: Product, errors: Errors) -> None:
    for name, op in {**p.ops, "default": p.default_op}.items():
        _unknown(errors, f"ops.{name}.impl_modes", op.impl_modes, p.implmode.ini_values,
                 "a mode of implmode.ini_values")
        _impl_by_dtype(name, op, errors)


def _impl_by_dtype(name: str, op: OpSupport, errors: Errors) -> None:
    """Per-dtype modes narrow ``impl_modes`` for a known dtype (one a card's own
    ``aicore_dtypes`` may lack: an inherited entry for it is simply unused)."""
    for dtype, modes in op.impl_modes_by_dtype.items():
        where = f"ops.{name}.impl_modes_by_dtype.{dtype}"
        if dtype not in DTYPES:
            errors.append((where, f"expected a dtype in {list(DTYPES)}, got "
                           f"{dtype!r}{did_you_mean(dtype, DTYPES)}"))
        if not modes:
            errors.append((where, "expected at least one mode (an op runs some "
                           "implementation), got []"))
        extra = [m for m in modes if m not in op.impl_modes]
        if extra:
            errors.append((where, f"expected modes of ops.{name}.impl_modes "
                           f"{list(op.impl_modes)} (all_ops_impl_mode.ini), got {extra}"))


def _precision_modes_known(p: Product, errors: Errors) -> None:
    prec = p.precision
    _unknown(errors, "precision.modes", prec.modes, PRECISION_MODES, "a precision_mode")
    _unknown(errors, "precision.modes_v2", prec.modes_v2, PRECISION_MODES_V2,
             "a precision_mode_v2")
    _unknown(errors, "precision.atc_only_modes", prec.atc_only_modes,
             PRECISION_MODES | PRECISION_MODES_V2, "a precision mode")


def _precision_defaults(p: Product, errors: Errors) -> None:
    prec = p.precision
    v1 = set(prec.modes) | set(prec.atc_only_modes)
    v2 = set(prec.modes_v2) | set(prec.atc_only_modes)
    checks: list[tuple[str, str, set[str]]] = [
        ("default_inference", prec.default_inference, v1),
        ("default_inference_v2", prec.default_inference_v2, v2),
        ("default_training_v2", prec.default_training_v2, v2 | {""}),
        ("torch_default", prec.torch_default, v1 | {""}),
    ]
    if p.runtime.training:
        checks.append(("default_training", prec.default_training, v1))
    elif prec.default_training:
        errors.append(("precision.default_training", "expected \"\" on a product without "
                       f"training (runtime.training = false), got {prec.default_training!r}"))
    for key, value, allowed in checks:
        if value not in allowed:
            errors.append((f"precision.{key}", f"expected one of the declared modes "
                           f"{sorted(allowed - {''})}, got {value!r}"
                           f"{did_you_mean(value, allowed)}"))


def _implmode_selectable(p: Product, errors: Errors) -> None:
    im = p.implmode
    _unknown(errors, "implmode.select_values", im.select_values, SELECT_IMPLMODES,
             "an op_select_implmode value")
    if im.default_mode not in im.select_values:
        errors.append(("implmode.default_mode", f"expected one of implmode.select_values "
                       f"{list(im.select_values)}, got {im.default_mode!r}"
                       f"{did_you_mean(im.default_mode, im.select_values)}"))


def _implmode_ini_values(p: Product, errors: Errors) -> None:
    im = p.implmode
    _unknown(errors, "implmode.ini_values", im.ini_values, IMPL_INI_VALUES,
             "an op_precision_mode ini value")
    for stem, table in im.builtin_lists.items():
        for op, mode in table.items():
            if mode not in im.ini_values:
                errors.append((f"implmode.builtin_lists.{stem}.{op}", f"expected a mode of "
                               f"implmode.ini_values {list(im.ini_values)}, got {mode!r}"))


def _optypelist_ops(p: Product, errors: Errors) -> None:
    for index, op in enumerate(p.implmode.optypelist_allowed):
        if op not in p.ops:
            errors.append((f"implmode.optypelist_allowed[{index}]", f"expected an op type "
                           f"listed under [ops], got {op!r}{did_you_mean(op, p.ops)}"))


def _dump_debug_modes(p: Product, errors: Errors) -> None:
    _unknown(errors, "dump.debug_modes", p.dump.debug_modes, DUMP_DEBUG_MODES,
             "a dump_debug_mode")


def _kernel_meta_levels(p: Product, errors: Errors) -> None:
    debug = p.debug
    missing = [level for level in DEBUG_LEVELS if level not in debug.kernel_meta]
    if missing:
        errors.append(("debug.kernel_meta", f"expected every op_debug_level {list(DEBUG_LEVELS)}"
                       f" declared, got no entry for {missing}"))


def _kernel_meta_level_0(p: Product, errors: Errors) -> None:
    if tuple(p.debug.kernel_meta.get("0", ())):
        errors.append(("debug.kernel_meta.0", "expected [] (op_debug_level 0 keeps no "
                       f"kernel_meta files), got {list(p.debug.kernel_meta['0'])}"))


def _kernel_meta_suffixes(p: Product, errors: Errors) -> None:
    for table_name, table in (("kernel_meta", p.debug.kernel_meta),
                              ("debug_config_files", p.debug.debug_config_files)):
        for key, suffixes in table.items():
            _unknown(errors, f"debug.{table_name}.{key}", suffixes, KERNEL_META_SUFFIXES,
                     "a kernel_meta file suffix")


def _debug_config_items(p: Product, errors: Errors) -> None:
    for item in p.debug.debug_config_files:
        if item not in DEBUG_CONFIG_ITEMS:
            errors.append((f"debug.debug_config_files.{item}", f"expected an op_debug_config "
                           f"item in {sorted(DEBUG_CONFIG_ITEMS)}, got {item!r}"
                           f"{did_you_mean(item, DEBUG_CONFIG_ITEMS)}"))


def _base_metric(column: str) -> str:
    """``aic_ub_read_bw(GB/s)`` -> ``ub_read_bw``: the name ``pmu_na_metrics`` globs match."""
    name = column[4:] if column.startswith(("aic_", "aiv_")) else column
    return name.split("(", 1)[0]


def _aic_metrics_columns(p: Product, errors: Errors) -> None:
    prof = p.profiling
    _unknown(errors, "profiling.aic_metrics", prof.aic_metrics, AIC_METRICS_GROUPS,
             "an aic_metrics group")
    for group in prof.aic_metrics:
        if not prof.pmu_columns.get(group):
            errors.append((f"profiling.pmu_columns.{group}", f"expected the PMU column block "
                           f"of aic_metrics group {group!r} (`geplug describe "
                           f"{p.extends or p.name}` lists a base's blocks), got none: "
                           "without it profiling cannot write op_summary"))


def _aic_metrics_aliases(p: Product, errors: Errors) -> None:
    prof = p.profiling
    for alias, group in prof.aic_metrics_aliases.items():
        if group not in prof.aic_metrics:
            errors.append((f"profiling.aic_metrics_aliases.{alias}", f"expected a declared "
                           f"aic_metrics group {list(prof.aic_metrics)}, got {group!r}"))


def _frequency_options(p: Product, errors: Errors) -> None:
    prof = p.profiling
    for name in prof.frequencies:
        if name not in FREQUENCY_OPTIONS:
            errors.append((f"profiling.frequencies.{name}", f"expected a frequency option in "
                           f"{sorted(FREQUENCY_OPTIONS)}, got {name!r}"
                           f"{did_you_mean(name, FREQUENCY_OPTIONS)}"))
        elif prof.frequencies[name].min < 1:
            errors.append((f"profiling.frequencies.{name}.min", "expected a minimum >= 1 Hz "
                           f"(sampling ranges start at 1), got {prof.frequencies[name].min}"))


def _instr_profiling_style(p: Product, errors: Errors) -> None:
    prof = p.profiling
    has_freq = "instr_profiling_freq" in prof.frequencies
    if has_freq != (prof.instr_profiling == "frequency"):
        errors.append(("profiling.instr_profiling", f"expected 'frequency' exactly when "
                       f"frequencies.instr_profiling_freq is declared, got "
                       f"{prof.instr_profiling!r} with instr_profiling_freq "
                       f"{'declared' if has_freq else 'absent'}"))


def _instr_profiling_exclusions(p: Product, errors: Errors) -> None:
    prof = p.profiling
    if bool(prof.instr_profiling_exclusions) != (prof.instr_profiling == "frequency"):
        errors.append(("profiling.instr_profiling_exclusions", "expected exclusions exactly "
                       "when instr_profiling = 'frequency', got "
                       f"{list(prof.instr_profiling_exclusions)} with {prof.instr_profiling!r}"))
    _unknown(errors, "profiling.instr_profiling_exclusions", prof.instr_profiling_exclusions,
             PROFILING_SWITCHES, "a profiling_options switch")


def _sampling_targets(p: Product, errors: Errors) -> None:
    prof = p.profiling
    for targets, option in (("sys_io_targets", "sys_io_sampling_freq"),
                            ("interconnect_targets", "sys_interconnection_freq")):
        if bool(getattr(prof, targets)) != (option in prof.frequencies):
            errors.append((f"profiling.{targets}", f"expected targets exactly when "
                           f"frequencies.{option} is declared, got "
                           f"{list(getattr(prof, targets))}"))


def _pmu_na_metrics(p: Product, errors: Errors) -> None:
    prof = p.profiling
    bases = {_base_metric(c) for cols in prof.pmu_columns.values() for c in cols}
    for index, pattern in enumerate(prof.pmu_na_metrics):
        if not any(fnmatch.fnmatchcase(b, pattern) for b in bases):
            errors.append((f"profiling.pmu_na_metrics[{index}]", f"expected a pattern matching "
                           f"a pmu_columns metric (base name, no aic_/aiv_ prefix, no unit), "
                           f"got {pattern!r}"))


def _host_sys_items(p: Product, errors: Errors) -> None:
    _unknown(errors, "profiling.host_sys", p.profiling.host_sys, HOST_SYS_ITEMS,
             "a host_sys item")


def _compute(p: Product, errors: Errors) -> None:
    c = p.compute
    if not c.approximate:
        errors.append(("compute.approximate", "expected true (figures are public "
                       "approximations, never measurements of hardware), got false"))
    if not c.cube_tflops or not c.vector_tflops:
        errors.append(("compute", "expected cube_tflops and vector_tflops to list dtypes, got "
                       "an empty table"))
    cube_ops = {d for op in (*p.ops.values(), p.default_op) if op.op_class == "matrix"
                for d in op.aicore_dtypes if d.startswith(("float", "bfloat"))}
    missing = sorted(cube_ops - set(c.cube_tflops))
    if missing:
        errors.append(("compute.cube_tflops", f"expected a peak for every float dtype the cube "
                       f"ops take, got none for {missing}"))


def _memory(p: Product, errors: Errors) -> None:
    m = p.memory
    for soc, gib in m.usable_gib.items():
        hbm = m.hbm_gib.get(soc)
        if hbm is None:
            errors.append((f"memory.usable_gib.{soc}", f"expected a SoC of memory.hbm_gib "
                           f"({sorted(m.hbm_gib)}), got {soc!r}{did_you_mean(soc, m.hbm_gib)}"))
        elif not 0 < gib <= hbm:
            errors.append((f"memory.usable_gib.{soc}", f"expected more than 0 and at most "
                           f"the SoC's hbm_gib ({hbm:g}), got {gib:g}"))


Rule = Callable[[Product, Errors], None]
CHECKS: dict[str, Rule] = {
    "identity": _identity,
    "ops_run_somewhere": _ops_run_somewhere,
    "default_op_float32": _default_op_float32,
    "op_impl_modes": _op_impl_modes,
    "bf16_modes_match_kernels": _bf16_modes_match_kernels,
    "precision_modes_known": _precision_modes_known,
    "precision_defaults": _precision_defaults,
    "implmode_selectable": _implmode_selectable,
    "implmode_ini_values": _implmode_ini_values,
    "optypelist_ops": _optypelist_ops,
    "dump_debug_modes": _dump_debug_modes,
    "kernel_meta_levels": _kernel_meta_levels,
    "kernel_meta_level_0": _kernel_meta_level_0,
    "kernel_meta_suffixes": _kernel_meta_suffixes,
    "debug_config_items": _debug_config_items,
    "aic_metrics_columns": _aic_metrics_columns,
    "aic_metrics_aliases": _aic_metrics_aliases,
    "frequency_options": _frequency_options,
    "instr_profiling_style": _instr_profiling_style,
    "instr_profiling_exclusions": _instr_profiling_exclusions,
    "sampling_targets": _sampling_targets,
    "pmu_na_metrics": _pmu_na_metrics,
    "host_sys_items": _host_sys_items,
    "compute": _compute,
    "memory": _memory,
}
"""Every load-time rule by name; the conformance suite (geplug.testing.conformance) runs the
same rules by these names, so a declaration is judged once, the same way, at load and in a
vendor's tests."""
RULES: tuple[Rule, ...] = tuple(CHECKS.values())
"""Every load-time rule, in order."""


def rule_errors(product: Product, *names: str) -> Errors:
    """The errors of the named rules of :data:`CHECKS` only."""
    errors: Errors = []
    for name in names:
        CHECKS[name](product, errors)
    return errors


def coherence_errors(product: Product) -> Errors:
    """Every cross-key error of ``product`` (empty when the declaration is coherent)."""
    errors: Errors = []
    for rule in RULES:
        rule(product, errors)
    return errors


PEAK_TABLES = ("cube_tflops", "vector_tflops")


def plausibility(card_raw: Mapping[str, Any], product: Product, base: Product | None,
                 others: Iterable[Product] = ()) -> list[tuple[str, str]]:
    """Warnings ``(key path, message)`` for a valid but probably mistaken declaration.

    ``card_raw`` is the card's own TOML (before merging over ``base``); ``others`` are the
    other installed products. Flags: per-core counts changed while whole-chip peaks are
    inherited; SoC strings equal to another product's ignoring case; inherited description or
    compute source text that names the base product; SoC strings not spelled like the real
    stack's (``Ascend...``, which ATC compares case-sensitively).
    """
    warnings: list[tuple[str, str]] = []
    compute_raw = card_raw.get("compute", {}) if isinstance(card_raw.get("compute"), Mapping) \
        else {}
    if base is not None:
        changed = [k for k in ("ai_cores", "vector_cores", "clock_mhz")
                   if k in compute_raw and getattr(product.compute, k) != getattr(base.compute, k)]
        inherited = [t for t in PEAK_TABLES if t not in compute_raw]
        if changed and inherited:
            ratio = product.compute.ai_cores / base.compute.ai_cores
            warnings.append((f"compute.{inherited[0]}", f"compute.{', '.join(changed)} differ "
                             f"from {base.name} but {' and '.join(inherited)} are inherited: "
                             "simulated time comes from these whole-chip peaks, so the change "
                             f"alone changes nothing; restate them (x{ratio:.3g} of "
                             f"{base.name}'s for {product.compute.ai_cores} AI Cores)"))
        product_raw = card_raw.get("product", {})
        if "description" not in product_raw and product.description:
            warnings.append(("product.description", f"inherited from {base.name} "
                             f"({product.description[:60]!r}); describe this card"))
        if "source" not in compute_raw and product.compute.source:
            warnings.append(("compute.source", f"inherited from {base.name} "
                             f"({product.compute.source[:60]!r}); cite this card's figures"))
    for other in others:
        if other.name == product.name:
            continue
        for soc in product.soc_versions:
            clash = [s for s in other.soc_versions if s.casefold() == soc.casefold()]
            if clash and clash[0] != soc:
                warnings.append(("product.soc_versions", f"{soc!r} differs only in case from "
                                 f"{clash[0]!r} of {other.name}: lookups ignore case, so "
                                 "the SoC is ambiguous; choose another string"))
    for index, soc in enumerate(product.soc_versions):
        if not soc.startswith("Ascend"):
            warnings.append((f"product.soc_versions[{index}]", f"{soc!r} is not spelled like "
                             "the real stack's SoC strings ('Ascend' + model, e.g. "
                             "'Ascend910B3'); ATC compares --soc_version case-sensitively"))
    return warnings
