"""Readable text for a product declaration (``geplug describe PRODUCT``), grouped by section.

Keys are printed with their ``capabilities.toml`` names so the output doubles as a pointer into
the file (``docs/capabilities.md`` explains each). What a product lacks is spelled out too -
the aic_metrics groups and kernel_meta file kinds of :mod:`geplug.products.domains` (plus any
other installed product declares) that it does not have - so "no MemoryAccess" and "no .cce
files" are visible whichever products are installed.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from geplug.products.domains import AIC_METRICS_GROUPS, KERNEL_META_SUFFIXES
from geplug.products.schema import FrequencyRange, OpSupport, Product

__all__ = ["DTYPE_SHORT", "describe_diff", "describe_product", "product_diff"]

WIDTH = 100
KEY_WIDTH = 26

DTYPE_SHORT = {
    "float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
    "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "bool", "hifloat8": "hif8",
}
"""Short dtype names used in the operator table (a legend is printed under it)."""

_SECTIONS: tuple[tuple[str, str, str], ...] = (
    ("runtime", "Runtime", "CANN docs: initialize_system, graph_run_mode, rank table"),
    ("precision", "Precision", "CANN docs: precision_mode, precision_mode_v2"),
    ("implmode", "Implementation modes", "CANN docs: op_select_implmode, op_precision_mode"),
    ("dump", "Dump", "CANN docs: enable_dump, enable_dump_debug, dump data"),
    ("profiling", "Profiling", "CANN docs: profiling_options, msprof output"),
    ("debug", "Operator compile debug files", "CANN docs: op_debug_level, op_debug_config"),
    ("compute", "Compute model for simulated timing", "approximate public figures"),
)


def describe_product(product: Product, others: Iterable[Product] = ()) -> str:
    """Every capability of ``product`` as aligned text; ``others`` are the other installed
    products, used only to name what this one does not have."""
    others = [o for o in others if o.name != product.name]
    out: list[str] = [f"{product.name} — {product.display_name}"]
    out += _kv("family_id", product.family_id)
    out += _kv("soc_versions", ", ".join(product.soc_versions))
    out += _kv("extends", product.extends or "— (a family)")
    out += _kv("distribution", product.distribution or "—")
    out += _kv("declared in", product.source_path or "—")
    if product.description:
        out += _kv("description", product.description)
    for attr, title, ref in _SECTIONS:
        out += ["", f"{title} [{attr}]  ({ref})"]
        out += _record_lines(attr, getattr(product, attr))
        if attr == "profiling":
            out += _missing_metrics(product, others)
        if attr == "debug":
            out += _missing_files(product, others)
    out += ["", f"Operators [ops]  ({len(product.ops)} listed; any other op type uses the "
                 "default entry)"]
    out += _ops_table(product)
    return "\n".join(out) + "\n"


def _kv(key: str, value: str, indent: int = 2) -> list[str]:
    head = " " * indent + key.ljust(max(KEY_WIDTH - indent, len(key) + 1)) + " "
    lines = textwrap.wrap(value, WIDTH - len(head)) or [""]
    return [head + lines[0]] + [" " * len(head) + line for line in lines[1:]]


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "—"
    if isinstance(value, FrequencyRange):
        text = f"[{value.min}, {value.max}] Hz"
        if value.default is not None:
            text += f", default {value.default}"
        if value.item_max:
            text += "; item maxima " + ", ".join(f"{k} {v}" for k, v in value.item_max.items())
        return text
    if isinstance(value, (tuple, list)):
        return ", ".join(str(v) for v in value) if value else "(none)"
    if isinstance(value, Mapping):
        return "; ".join(f"{k}={_fmt(v)}" for k, v in value.items()) if value else "(none)"
    if value == "":
        return '""'
    return str(value)


def _record_lines(section: str, record: Any) -> list[str]:
    lines: list[str] = []
    for field in attrs.fields(type(record)):
        value = getattr(record, field.name)
        if isinstance(value, Mapping) and value and all(
            isinstance(v, (tuple, list, Mapping, FrequencyRange)) for v in value.values()
        ):
            lines += _kv(field.name, f"({len(value)})")
            for key, item in value.items():
                label = f"level {key}" if (section, field.name) == ("debug", "kernel_meta") else key
                lines += _kv(label, _fmt(item), indent=4)
        else:
            lines += _kv(field.name, _fmt(value))
    return lines


def _missing_metrics(product: Product, others: list[Product]) -> list[str]:
    known = _union(AIC_METRICS_GROUPS, (m for o in others for m in o.profiling.aic_metrics))
    missing = [m for m in known if m not in product.profiling.aic_metrics]
    if not missing:
        return []
    return _kv("not in aic_metrics", ", ".join(missing))


def _missing_files(product: Product, others: list[Product]) -> list[str]:
    mine = {s for files in product.debug.kernel_meta.values() for s in files}
    known = _union(KERNEL_META_SUFFIXES, (s for o in others
                                          for files in o.debug.kernel_meta.values()
                                          for s in files))
    missing = [s for s in known if s not in mine]
    if not missing:
        return []
    return _kv("kernel_meta never has", ", ".join(missing) + " (at any op_debug_level)")


def _union(first: Iterable[str], more: Iterable[str]) -> list[str]:
    """``first`` in its order, then the values of ``more`` it lacks, sorted."""
    ordered = list(first)
    return ordered + sorted(set(more) - set(ordered))


def _ops_table(product: Product) -> list[str]:
    header = ("op type", "class", "AI Core dtypes", "AI CPU dtypes", "impl modes", "mix list")
    rows = [header] + [_op_row(op) for op in (*product.ops.values(), product.default_op)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
             for r in rows]
    used = sorted({d for op in (*product.ops.values(), product.default_op)
                   for d in (*op.aicore_dtypes, *op.aicpu_dtypes)})
    legend = ", ".join(f"{DTYPE_SHORT.get(d, d)}={d}" for d in used)
    lines += _kv("dtypes", legend)
    lines += _kv("mix list", "white = may be lowered, black = kept, grey = follows the "
                 "previous op (CANN docs: mixed precision); * = fp16 in / fp32 out on the cube")
    return lines


def _op_row(op: OpSupport) -> tuple[str, ...]:
    mix = {True: "white", False: "black", None: "grey"}[op.precision_reduce]
    return (
        op.op_type + ("*" if op.cube_fp16in_fp32out else ""),
        op.op_class,
        " ".join(DTYPE_SHORT.get(d, d) for d in op.aicore_dtypes) or "—",
        " ".join(DTYPE_SHORT.get(d, d) for d in op.aicpu_dtypes) or "—",
        _impl_cell(op),
        mix,
    )


def _impl_cell(op: OpSupport) -> str:
    """``high_precision high_performance (fp32 bf16: high_precision)``: modes, then the
    dtypes that have fewer (the modes are told apart by the op's dtype)."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for dtype, modes in op.impl_modes_by_dtype.items():
        groups.setdefault(tuple(modes), []).append(DTYPE_SHORT.get(dtype, dtype))
    narrowed = "; ".join(f"{' '.join(d)}: {' '.join(m)}" for m, d in groups.items())
    return " ".join(op.impl_modes) + (f" ({narrowed})" if narrowed else "") or "—"


_IDENTITY_ONLY = ("name", "source_path", "distribution", "extends")
"""Fields every card has of its own, never shown as an override."""


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for key, inner in value.items():
            _flatten(inner, f"{prefix}.{key}" if prefix else str(key), out)
    else:
        out[prefix] = value


def product_diff(card: Product, base: Product) -> list[tuple[str, Any, Any]]:
    """``(capabilities.toml key path, base value, card value)`` for every key that differs.

    Keys use the file's spelling: ``ops.Gelu.aicore_dtypes``, ``compute.ai_cores``,
    ``product.display_name``; a key only one side has shows ``None`` on the other.
    """
    from geplug.products.jsonable import to_jsonable

    def flat(product: Product) -> dict[str, Any]:
        data = to_jsonable(product)
        out: dict[str, Any] = {}
        for key in ("display_name", "family_id", "soc_versions", "description"):
            out[f"product.{key}"] = data.pop(key)
        for key in _IDENTITY_ONLY:
            data.pop(key, None)
        ops = data.pop("ops")
        ops["default"] = data.pop("default_op")
        for op in ops.values():
            op.pop("op_type", None)
        _flatten({**data, "ops": ops}, "", out)
        return out

    mine, theirs = flat(card), flat(base)
    return [(key, theirs.get(key), mine.get(key)) for key in sorted(set(mine) | set(theirs))
            if mine.get(key) != theirs.get(key)]


def describe_diff(card: Product, base: Product) -> str:
    """``geplug describe CARD --diff``: what ``card`` overrides of ``base``, one key a line."""
    rows = product_diff(card, base)
    out = [f"{card.name} extends {base.name}: {len(rows)} key(s) differ"]
    for key, old, new in rows:
        out.append(f"  {key}")
        out.append(f"      {base.name}: {_short(old)}")
        out.append(f"      {card.name}: {_short(new)}")
    return "\n".join(out) + "\n"


def _short(value: Any) -> str:
    import json

    text = "(not declared)" if value is None else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= WIDTH - 10 else text[:WIDTH - 13] + "..."
