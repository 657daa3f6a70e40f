"""Read ``capabilities.toml`` files and validate them into :class:`~geplug.products.schema.Product`.

A declaration is read in two steps so that a card can ``extends`` a family declared by another
plugin: :func:`read_declaration` parses the file (syntax, schema version, identity), and
:func:`build_product` merges it over its base and validates every key against the schema
records, reporting the file, the dotted key path and what was expected.
"""

from __future__ import annotations

import sys
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from geplug.errors import CapabilityError
from geplug.products import schema
from geplug.products.schema import SCHEMA_VERSION, OpSupport, Product

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = ["Declaration", "build_product", "deep_merge", "read_declaration"]

_SECTIONS: dict[str, type] = {
    "runtime": schema.RuntimeCaps,
    "precision": schema.PrecisionCaps,
    "implmode": schema.ImplModeCaps,
    "dump": schema.DumpCaps,
    "profiling": schema.ProfilingCaps,
    "debug": schema.DebugCaps,
    "compute": schema.ComputeModel,
}
_IDENTITY = ("name", "display_name", "family_id", "soc_versions", "extends", "description")
_RECORDS: dict[str, type] = {
    "FrequencyRange": schema.FrequencyRange,
    "OpSupport": schema.OpSupport,
}


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
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CapabilityError(
            f"cannot read capabilities file {str(path)!r}: {exc.strerror or exc}", path=str(path)
        ) from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CapabilityError(
            f"{str(path)!r} is not valid TOML: {exc}; fix the syntax at the position shown",
            path=str(path),
        ) from None
    version = raw.get("schema_version")
    if version != SCHEMA_VERSION:
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
        base_raw = dict(base.raw)
        base_raw["product"] = {
            k: v for k, v in base_raw.get("product", {}).items() if k not in ("name", "extends")
        }
        raw = deep_merge(base_raw, decl.raw)
    errors: list[tuple[str, str]] = []
    allowed_top = {"schema_version", "product", "ops", *_SECTIONS}
    for key in raw:
        if key not in allowed_top:
            errors.append((key, f"unknown section; expected one of {sorted(allowed_top)}"))
    ident = raw.get("product", {})
    values: dict[str, Any] = {}
    for key in ident:
        if key not in _IDENTITY:
            errors.append((f"product.{key}", f"unknown key; expected one of {list(_IDENTITY)}"))
    for key in ("name", "display_name", "family_id", "soc_versions"):
        if key not in ident:
            errors.append((f"product.{key}", "required key is missing"))
    product_hints = typing.get_type_hints(Product)
    for key in _IDENTITY:
        if key in ident:
            values[key] = _convert(ident[key], product_hints[key], f"product.{key}", errors)
    for section, cls in _SECTIONS.items():
        table = raw.get(section)
        if not isinstance(table, Mapping):
            errors.append((section, "required table is missing"))
            continue
        values[section] = _record(cls, table, section, errors)
    ops_raw = raw.get("ops")
    ops: dict[str, OpSupport] = {}
    if not isinstance(ops_raw, Mapping) or "default" not in ops_raw:
        errors.append(("ops.default", "required table is missing (the entry for unlisted ops)"))
    else:
        for op_type, table in ops_raw.items():
            if not isinstance(table, Mapping):
                errors.append((f"ops.{op_type}", f"expected a table, got {table!r}"))
                continue
            record = _record(OpSupport, {"op_type": op_type, **table}, f"ops.{op_type}", errors)
            if record is not None:
                ops[op_type] = record
        for op_type, support in ops.items():
            for dtype in (*support.aicore_dtypes, *support.aicpu_dtypes):
                if dtype not in schema.DTYPES:
                    errors.append(
                        (f"ops.{op_type}", f"unknown dtype {dtype!r}; expected one of "
                         f"{list(schema.DTYPES)}")
                    )
    if errors:
        first_key = errors[0][0]
        detail = "; ".join(f"{key}: {msg}" for key, msg in errors)
        raise CapabilityError(f"{decl.path!r} is not a valid declaration: {detail}",
                              path=decl.path, key=first_key)
    default_op = ops.pop("default")
    return Product(**values, ops=ops, default_op=default_op, source_path=decl.path)


def _record(cls: type, table: Mapping[str, Any], where: str, errors: list[tuple[str, str]]) -> Any:
    """Validate ``table`` against the attrs record ``cls``; None (and errors) when invalid."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in attrs.fields(cls)}
    before = len(errors)
    kwargs: dict[str, Any] = {}
    for key, value in table.items():
        if key not in fields:
            errors.append((f"{where}.{key}", f"unknown key; expected one of {sorted(fields)}"))
            continue
        kwargs[key] = _convert(value, hints[key], f"{where}.{key}", errors)
    for name, field in fields.items():
        if name not in table and field.default is attrs.NOTHING:
            errors.append((f"{where}.{name}", f"required key is missing ({_describe(hints[name])})"))
    if len(errors) > before:
        return None
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        errors.append((where, str(exc)))
        return None


def _describe(hint: Any) -> str:
    return str(hint).replace("typing.", "").replace("collections.abc.", "")


def _convert(value: Any, hint: Any, where: str, errors: list[tuple[str, str]]) -> Any:
    """Check ``value`` against the type ``hint``; append an error and return None if it fails."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any:
        return value
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _convert(value, inner[0], where, errors)
    if hint is bool:
        if isinstance(value, bool):
            return value
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif hint is str:
        if isinstance(value, str):
            return value
    elif origin is tuple:
        if isinstance(value, list):
            return tuple(_convert(v, args[0], f"{where}[{i}]", errors) for i, v in enumerate(value))
    elif origin is Mapping or origin is dict:
        if isinstance(value, Mapping):
            return {
                str(k): _convert(v, args[1], f"{where}.{k}", errors) for k, v in value.items()
            }
    elif isinstance(hint, type) and attrs.has(hint):
        if isinstance(value, Mapping):
            return _record(hint, value, where, errors)
    errors.append((where, f"expected {_describe(hint)}, got {value!r}"))
    return None
