"""Small text helpers shared by the option readers, the rules and the rank-table reader."""

from __future__ import annotations

import datetime
import json
from typing import Any

from geplug.limits import escape_controls

__all__ = ["describe", "digits", "literal", "short", "signed_digits"]


def digits(text: str) -> bool:
    """ASCII decimal digits only (``str.isdigit`` also accepts superscripts ``int()`` rejects)."""
    return text.isascii() and text.isdigit()


def signed_digits(text: str, *, max_digits: int = 18) -> bool:
    """A decimal integer as text: at most one leading ``-``, then 1..``max_digits`` ASCII
    digits (``--8`` and 5,000-digit strings are not integers a reader converts)."""
    number = text[1:] if text.startswith("-") else text
    return digits(number) and len(number) <= max_digits


def short(value: Any, limit: int = 200) -> Any:
    """``value`` shortened for reports: huge strings must not flood a terminal or a JSON report."""
    if isinstance(value, str) and len(value) > limit:
        return value[:limit] + "..."
    if isinstance(value, bytes) and len(value) > limit:
        return value[:limit] + b"..."
    return value


def literal(value: Any, _depth: int = 0) -> str:
    """``value`` as the user wrote it in TOML/JSON (``true``, ``"on"``, ``2024-01-01``, ``null``),
    never a Python repr such as ``datetime.date(2024, 1, 1)`` or ``None``.

    Bounded whatever the input: at most 8 items per array or table, nested arrays and tables
    shown two levels deep (``[[...]]``), strings cut at 60 characters, control characters in
    keys escaped (docs/limits.md).
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (datetime.date, datetime.time)):  # datetime is a date too
        return value.isoformat()
    if isinstance(value, (int, float)):
        return repr(value) if not isinstance(value, int) or value.bit_length() < 200 \
            else f"{'-' if value < 0 else ''}<{value.bit_length()}-bit integer>"
    if isinstance(value, str):
        return json.dumps(short(value, 60), ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        if _depth >= 2:
            return "[...]" if value else "[]"
        return "[" + ", ".join(literal(v, _depth + 1) for v in value[:8]) + (
            ", ...]" if len(value) > 8 else "]")
    if isinstance(value, dict):
        if _depth >= 2:
            return "{...}" if value else "{}"
        return "{" + ", ".join(f"{escape_controls(short(str(k), 60))} = {literal(v, _depth + 1)}"
                               for k, v in list(value.items())[:8]) + (
            ", ...}" if len(value) > 8 else "}")
    if isinstance(value, bytes):
        return "binary data"
    return escape_controls(short(str(value), 60))


def describe(value: Any) -> str:
    """What kind of value ``value`` is, in TOML/JSON words: ``the number 1``, ``the string
    "1"``, ``the boolean true``, ``the TOML date 2024-01-01``, ``null`` (no Python type names)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {literal(value)}"
    if isinstance(value, (int, float)):
        return f"the number {literal(value)}"
    if isinstance(value, str):
        return f"the string {literal(value)}" if value else "an empty string"
    if isinstance(value, datetime.datetime):
        return f"the TOML date-time {literal(value)}"
    if isinstance(value, datetime.date):
        return f"the TOML date {literal(value)}"
    if isinstance(value, datetime.time):
        return f"the TOML time {literal(value)}"
    if isinstance(value, (list, tuple)):
        return f"an array {literal(value)}"
    if isinstance(value, dict):
        return f"a table {literal(value)}"
    if isinstance(value, bytes):
        return "binary data"
    return f"an unsupported value {literal(value)}"
