"""Small text helpers shared by the option readers, the rules and the rank-table reader."""

from __future__ import annotations

from typing import Any

__all__ = ["digits", "short"]


def digits(text: str) -> bool:
    """ASCII decimal digits only (``str.isdigit`` also accepts superscripts ``int()`` rejects)."""
    return text.isascii() and text.isdigit()


def short(value: Any, limit: int = 200) -> Any:
    """``value`` shortened for reports: huge strings must not flood a terminal or a JSON report."""
    if isinstance(value, str) and len(value) > limit:
        return value[:limit] + "..."
    if isinstance(value, bytes) and len(value) > limit:
        return value[:limit] + b"..."
    return value
