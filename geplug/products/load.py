"""Read ``capabilities.toml`` files and validate them into :class:`~geplug.products.schema.Product`.

A declaration is read in two steps so that a card can ``extends`` a family declared by another
plugin: :func:`read_declaration` parses the file (syntax, schema version, identity), and
:func:`build_product` merges it over its base and validates every key against the schema
records, reporting the file, the dotted key path and what was expected.
"""

from __future__ import annotations

import re
import sys
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from geplug.errors import CapabilityError
from geplug.limits import (
    MAX_DECLARATION_BYTES,
    check_depth,
    decode_utf8,
    depth_error,
    escape_controls,
    read_bytes,
)
from geplug.products import schema
from geplug.products.coherence import coherence_errors
from geplug.products.domains import DEBUG_LEVELS
from geplug.products.schema import SCHEMA_VERSION, OpSupport, Product
from geplug.products.validate import close_key, convert, describe_type, validate_record

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = [
    "DEBUG_LEVELS",
    "Declaration",
    "build_product",
    "deep_merge",
    "merge_over_base",
    "read_declaration",
]


_SECTIONS: dict[str, type] = {
    "runtime": schema.RuntimeCaps,
    "precision": schema.PrecisionCaps,
    "implmode": schema.ImplModeCaps,
    "dump": schema.DumpCaps,
    "profiling": schema.ProfilingCaps,
    "debug": schema.DebugCaps,
    "compute": schema.ComputeModel,
    "graph": schema.GraphCaps,
    "memory": schema.MemoryCaps,
}
_DEFAULTED_SECTIONS = frozenset({"graph", "memory"})
"""Sections a declaration may omit (their records' documented defaults apply)."""
_OPTIONAL_SECTIONS: dict[str, type] = {"topology": schema.TopologyCaps}
"""Sections a declaration may omit (the record is then ``None``)."""
_IDENTITY = ("name", "display_name", "family_id", "soc_versions", "extends", "description")
_NAME_RE = re.compile(r"[a-z][a-z0-9_]*")
_NOT_INHERITED = ("name", "extends", "display_name", "soc_versions")
"""Identity keys a card that ``extends`` a family must state itself (its own name and SoCs)."""


@attrs.frozen(kw_only=True)
class Declaration:
    """A parsed but not yet validated ``capabilities.toml``."""

    name: str
    extends: str
    path: str
    raw: Mapping[str, Any]


def read_declaration(path: str | Path) -> Declaration:
    """Parse ``path``; raise :class:`CapabilityError` naming the file on any syntax problem."""
    path = Path(path)

    def fail(message: str) -> CapabilityError:
        return CapabilityError(message, path=str(path))

    data = read_bytes(str(path), limit=MAX_DECLARATION_BYTES, what="capabilities file",
                      fail=fail)
    text = decode_utf8(data, path=str(path), what="capabilities file", fail=fail)
    try:
        raw = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError) as exc:
        raise CapabilityError(
            f"{str(path)!r} is not valid TOML: {escape_controls(str(exc))}; fix the syntax at "
            "the position shown",
            path=str(path),
        ) from None
    except RecursionError:
        raise fail(depth_error(str(path), "<document>")) from None
    deep = check_depth(raw)
    if deep is not None:
        raise CapabilityError(depth_error(str(path), deep), path=str(path), key=deep)
    version = raw.get("schema_version")
    if type(version) is not int or version != SCHEMA_VERSION:
        raise CapabilityError(
            f"{str(path)!r}: schema_version: expected {SCHEMA_VERSION}, got {version!r}; "
            f"this geplug reads schema version {SCHEMA_VERSION} declarations",
            path=str(path),
            key="schema_version",
        )
    product = raw.get("product")
    if not isinstance(product, dict) or not isinstance(product.get("name"), str):
        raise CapabilityError(
            f"{str(path)!r}: product.name: expected a string naming the product, "
            f"got {None if not isinstance(product, dict) else product.get('name')!r}",
            path=str(path),
            key="product.name",
        )
    extends = product.get("extends", "")
    if not isinstance(extends, str):
        raise CapabilityError(
            f"{str(path)!r}: product.extends: expected a product name string, got {extends!r}",
            path=str(path),
            key="product.extends",
        )
    return Declaration(name=product["name"], extends=extends, path=str(path), raw=raw)


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` over ``base``: tables merge key by key, every other value replaces."""
    merged: dict[str, Any] = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def merge_over_base(decl: Declaration, base: Declaration) -> dict[str, Any]:
    """The raw tables of ``decl`` merged over those of ``base`` (which may itself be merged).

    Tables merge key by key (so ``[ops.MatMulV2] aicore_dtypes = [...]`` overrides one key of
    one op), every other value replaces. The card's own ``name``, ``display_name`` and
    ``soc_versions`` are never inherited: a variant card states who it is.
    """
    base_raw = dict(base.raw)
    base_raw["product"] = {
        k: v for k, v in base_raw.get("product", {}).items() if k not in _NOT_INHERITED
    }
    return deep_merge(base_raw, decl.raw)


def build_product(decl: Declaration, base: Declaration | None = None) -> Product:
    """Validate ``decl`` (merged over ``base`` when it extends one) into a :class:`Product`.

    Raises :class:`CapabilityError` listing every invalid key with its dotted path.
    """
    raw: Mapping[str, Any] = decl.raw
    if decl.extends:
        if base is None or base.name != decl.extends:
            raise CapabilityError(
                f"{decl.path!r}: product.extends: base product {decl.extends!r} is not "
                "installed; install the plugin that declares it",
                path=decl.path,
                key="product.extends",
            )
        raw = merge_over_base(decl, base)
    errors: list[tuple[str, str]] = []
    allowed_top = {"schema_version", "product", "ops", *_SECTIONS, *_OPTIONAL_SECTIONS}
    for key in raw:
        if key not in allowed_top:
            errors.append((key, f"expected a section in {sorted(allowed_top)}, got unknown "
                           f"section {key!r}{close_key(key, allowed_top)}"))
    ident = raw.get("product", {})
    values: dict[str, Any] = {}
    product_hints = typing.get_type_hints(Product)
    for key in ident:
        if key not in _IDENTITY:
            errors.append((f"product.{key}", f"expected a key in {list(_IDENTITY)}, got "
                           f"unknown key {key!r}{close_key(key, _IDENTITY)}"))
    for key in ("name", "display_name", "family_id", "soc_versions"):
        if key not in ident:
            errors.append((f"product.{key}", f"required key is missing (expected "
                           f"{describe_type(product_hints[key])})"))
    name = ident.get("name")
    if isinstance(name, str) and not _NAME_RE.fullmatch(name):
        errors.append(("product.name", f"expected lower-case letters, digits and '_' starting "
                       f"with a letter (e.g. 'atlas_a2'), got {name!r}"))
    for key in _IDENTITY:
        if key in ident:
            values[key] = convert(ident[key], product_hints[key], f"product.{key}", errors)
    for section, cls in _SECTIONS.items():
        table = raw.get(section)
        if table is None and section in _DEFAULTED_SECTIONS:
            table = {}
        if not isinstance(table, Mapping):
            got = "nothing" if table is None else repr(table)
            errors.append((section, f"expected a [{section}] table, got {got}"))
            continue
        values[section] = validate_record(cls, table, section, errors)
    for section, cls in _OPTIONAL_SECTIONS.items():
        table = raw.get(section)
        if table is None:
            continue
        if not isinstance(table, Mapping):
            errors.append((section, f"expected a [{section}] table, got {table!r}"))
            continue
        values[section] = validate_record(cls, table, section, errors)
    ops_raw = raw.get("ops")
    ops: dict[str, OpSupport] = {}
    if not isinstance(ops_raw, Mapping) or "default" not in ops_raw:
        errors.append(("ops.default", "expected an [ops.default] table (the entry for op "
                       "types the table does not list), got nothing"))
    else:
        for op_type, table in ops_raw.items():
            if not isinstance(table, Mapping):
                errors.append((f"ops.{op_type}", f"expected a table, got {table!r}"))
                continue
            record = validate_record(OpSupport, {"op_type": op_type, **table},
                                     f"ops.{op_type}", errors)
            if record is not None:
                ops[op_type] = record
        for op_type, support in ops.items():
            for engine in ("aicore_dtypes", "aicpu_dtypes"):
                for i, dtype in enumerate(getattr(support, engine)):
                    if dtype not in schema.DTYPES:
                        errors.append((f"ops.{op_type}.{engine}[{i}]", f"expected a dtype in "
                                       f"{list(schema.DTYPES)}, got {dtype!r}"))
    if not errors:
        _check_consistency(values, errors)
    if errors:
        _raise(decl, errors)
    default_op = ops.pop("default")
    product = Product(**values, ops=ops, default_op=default_op, source_path=decl.path)
    errors = coherence_errors(product)
    if errors:
        _raise(decl, errors)
    return product


def _raise(decl: Declaration, errors: list[tuple[str, str]]) -> None:
    """One CapabilityError listing every error once, each as ``key: message``."""
    unique = list(dict.fromkeys(errors))
    detail = "; ".join(f"{key}: {msg}" for key, msg in unique)
    raise CapabilityError(f"{decl.path!r} is not a valid declaration: {detail}",
                          path=decl.path, key=unique[0][0], errors=unique)


def _check_consistency(values: Mapping[str, Any], errors: list[tuple[str, str]]) -> None:
    """Cross-key rules without which a declaration means nothing (the rest: conformance).

    The identity must name at least one SoC, each once; each frequency range must satisfy
    min <= default <= max (item maxima >= min); the aic_metrics default must be a declared
    group; every kernel_meta level key must be an op_debug_level "0".."4" (options.md §7.1).
    """
    socs = values.get("soc_versions") or ()
    if not socs:
        errors.append(("product.soc_versions", "expected at least one SoC version string, got []"))
    dup = sorted({s for s in socs if list(socs).count(s) > 1})
    if dup:
        errors.append(("product.soc_versions", f"expected each SoC once, got {dup!r} twice"))
    prof = values.get("profiling")
    if prof is not None:
        for option, rng in prof.frequencies.items():
            where = f"profiling.frequencies.{option}"
            if rng.min > rng.max:
                errors.append((where, f"expected min <= max, got min={rng.min}, max={rng.max}"))
            if rng.default is not None and not rng.min <= rng.default <= rng.max:
                errors.append((f"{where}.default", f"expected a value in [{rng.min}, "
                               f"{rng.max}], got {rng.default!r}"))
            for item, item_max in rng.item_max.items():
                if item_max < rng.min:
                    errors.append((f"{where}.item_max.{item}",
                                   f"expected a maximum >= min {rng.min}, got {item_max!r}"))
        if prof.aic_metrics_default not in prof.aic_metrics:
            errors.append(("profiling.aic_metrics_default",
                           f"expected one of aic_metrics {list(prof.aic_metrics)}, "
                           f"got {prof.aic_metrics_default!r}"))
    compute = values.get("compute")
    if compute is not None:
        _check_compute(compute, errors)
    topology = values.get("topology")
    if topology is not None:
        _check_topology(topology, errors)
    graph = values.get("graph")
    if graph is not None:
        _check_formats(graph, errors)
    debug = values.get("debug")
    if debug is not None:
        for level in debug.kernel_meta:
            if level not in DEBUG_LEVELS:
                errors.append((f"debug.kernel_meta.{level}",
                               f"expected an op_debug_level key in {list(DEBUG_LEVELS)}, "
                               f"got {level!r}"))


def _check_formats(graph: Any, errors: list[tuple[str, str]]) -> None:
    """An op type has one format rule (``geplug.device.formats``): it may be named in only one
    of ``five_hd_op_types``, ``nd_op_types`` and ``channel_aligned_op_types``."""
    keys = ("five_hd_op_types", "nd_op_types", "channel_aligned_op_types")
    seen: dict[str, str] = {}
    for key in keys:
        for op in getattr(graph, key, ()):
            if op in seen and seen[op] != key:
                errors.append((f"graph.{key}", f"op type {op!r} is also in graph.{seen[op]}: "
                               "an op has one format rule; keep it in one list"))
            seen.setdefault(op, key)


TOPOLOGY_LINKS = ("HCCS", "PCIE", "RDMA", "SIO", "SDMA")
"""Link names of msprof's communication files (formats.md §6.7)."""
TOPOLOGY_LAYOUTS = ("full_mesh", "groups", "switch", "shared")


def _check_topology(top: Any, errors: list[tuple[str, str]]) -> None:
    """Links the HCCL model can route over: known names and layouts, positive rates."""
    for key in ("intra_link", "cross_group_link", "die_link", "nic_link"):
        if getattr(top, key) not in TOPOLOGY_LINKS:
            errors.append((f"topology.{key}", f"expected one of {list(TOPOLOGY_LINKS)}, got "
                           f"{getattr(top, key)!r}"))
    if top.intra_layout not in TOPOLOGY_LAYOUTS:
        errors.append(("topology.intra_layout", f"expected one of {list(TOPOLOGY_LAYOUTS)}, "
                       f"got {top.intra_layout!r}"))
    if top.devices_per_server < 1:
        errors.append(("topology.devices_per_server",
                       f"expected a whole number >= 1, got {top.devices_per_server!r}"))
    for key in ("intra_gbps", "nic_gbps"):
        if not getattr(top, key) > 0:
            errors.append((f"topology.{key}", f"expected a number > 0, got "
                           f"{getattr(top, key)!r}"))
    if not 0 < top.collective_efficiency <= 1:
        errors.append(("topology.collective_efficiency",
                       f"expected a number in (0, 1], got {top.collective_efficiency!r}"))
    if top.intra_layout == "groups" and not (
            top.intra_group_size >= 1 and top.cross_group_gbps > 0):
        errors.append(("topology.intra_group_size", "intra_layout = \"groups\" needs "
                       "intra_group_size >= 1 and cross_group_gbps > 0"))
    if top.dies_per_package > 1 and not top.die_gbps > 0:
        errors.append(("topology.die_gbps", f"dies_per_package = {top.dies_per_package} "
                       f"needs die_gbps > 0, got {top.die_gbps!r}"))
    if top.supernode_devices and not top.supernode_gbps > 0:
        errors.append(("topology.supernode_gbps", "supernode_devices needs supernode_gbps "
                       f"> 0, got {top.supernode_gbps!r}"))


def _check_compute(compute: Any, errors: list[tuple[str, str]]) -> None:
    """The compute model drives simulated time: counts and rates must be positive numbers and
    throughput tables keyed by known dtypes (a typo would silently fall back to another rate)."""
    for key in ("ai_cores", "vector_cores", "clock_mhz"):
        value = getattr(compute, key)
        if value < 1:
            errors.append((f"compute.{key}", f"expected a whole number >= 1, got {value!r}"))
    for key in ("memory_bandwidth_gbps", "aicpu_gflops", "host_link_gbps"):
        value = getattr(compute, key)
        if not value > 0:
            errors.append((f"compute.{key}", f"expected a number > 0, got {value!r}"))
    for key in ("launch_overhead_us", "host_copy_overhead_us"):
        value = getattr(compute, key)
        if value < 0:
            errors.append((f"compute.{key}", f"expected a number >= 0, got {value!r}"))
    for key, length in (("cube_tile", 3), ("cube_block", 2)):
        value = getattr(compute, key)
        if len(value) != length or any(v < 1 for v in value):
            errors.append((f"compute.{key}", f"expected {length} whole numbers >= 1, got "
                           f"{list(value)!r}"))
    for key in ("vector_bandwidth_fraction", "matrix_bandwidth_fraction",
                "vector_efficiency"):
        value = getattr(compute, key)
        if not 0 < value <= 1:
            errors.append((f"compute.{key}", f"expected a share in (0, 1], got {value!r}"))
    for key in ("l2_cache_mib", "l2_bandwidth_gbps"):
        value = getattr(compute, key)
        if not value >= 0:
            errors.append((f"compute.{key}", f"expected a number >= 0, got {value!r}"))
    for key in ("small_channel_needs_aipp", "fused_attention"):
        if not isinstance(getattr(compute, key), bool):
            errors.append((f"compute.{key}",
                           f"expected true or false, got {getattr(compute, key)!r}"))
    if compute.l2_cache_mib > 0 and not compute.l2_bandwidth_gbps > 0:
        errors.append(("compute.l2_bandwidth_gbps", "l2_cache_mib = "
                       f"{compute.l2_cache_mib!r} needs the achieved L2 bandwidth: expected a "
                       f"number > 0, got {compute.l2_bandwidth_gbps!r}"))
    for dtype, share in compute.cube_efficiency.items():
        if not 0 < share <= 1:
            errors.append((f"compute.cube_efficiency.{dtype}",
                           f"expected a share in (0, 1], got {share!r}"))
    for mode, cost in compute.task_overhead_us.items():
        if mode not in ("graph", "single_op") or cost < 0:
            errors.append((f"compute.task_overhead_us.{mode}", "expected an issue mode "
                           f"'graph' or 'single_op' with a cost >= 0 us, got {mode!r} = "
                           f"{cost!r}"))
    for table in ("cube_tflops", "vector_tflops"):
        for dtype, rate in getattr(compute, table).items():
            if dtype not in schema.DTYPES:
                errors.append((f"compute.{table}.{dtype}", f"expected a dtype in "
                               f"{list(schema.DTYPES)}, got {dtype!r}"))
            elif not rate > 0:
                errors.append((f"compute.{table}.{dtype}",
                               f"expected a throughput > 0 TFLOP/s, got {rate!r}"))
