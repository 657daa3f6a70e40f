"""Plain JSON-ready views of product records (``geplug describe --json``, tests, exports)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from geplug.products.schema import Product

__all__ = ["product_summary", "to_jsonable"]


def to_jsonable(value: Any) -> Any:
    """``value`` with attrs records and mappings as dicts, tuples and sets as lists.

    Mappings keep their declaration order; sets are sorted so the output is stable.
    """
    if attrs.has(type(value)):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in attrs.fields(type(value))}
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return [to_jsonable(v) for v in sorted(value, key=str)]
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return value


def product_summary(product: Product) -> dict[str, Any]:
    """The identity line of ``product`` as ``geplug products --json`` prints it."""
    return {
        "name": product.name,
        "display_name": product.display_name,
        "family_id": product.family_id,
        "soc_versions": list(product.soc_versions),
        "initialize_system": product.runtime.initialize_system,
        "extends": product.extends,
        "distribution": product.distribution,
    }
