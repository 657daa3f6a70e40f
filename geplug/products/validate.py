"""Check raw TOML values against the type hints of attrs records, collecting every error.

The generic half of declaration validation (:mod:`geplug.products.load` is the
``capabilities.toml``-specific half): each error is ``(dotted key path, message)`` with the
message saying what was expected, in TOML words ("a list of strings"), and what was found.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Any

import attrs

__all__ = ["Errors", "close_key", "convert", "describe_type", "validate_record"]

Errors = list[tuple[str, str]]
"""(dotted key path, message) pairs, in the order found."""

def validate_record(cls: type, table: Mapping[str, Any], where: str, errors: Errors) -> Any:
    """Validate ``table`` against the attrs record ``cls``; None (and errors) when invalid.

    Unknown keys, missing required keys, values of the wrong type (recursively, naming list
    indices and table keys) and attrs validator failures each add one error.
    """
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in attrs.fields(cls)}
    before = len(errors)
    kwargs: dict[str, Any] = {}
    for key, value in table.items():
        if key not in fields:
            errors.append((f"{where}.{key}", f"expected a key in {sorted(fields)}, got "
                           f"unknown key {key!r}{close_key(key, fields)}"))
            continue
        kwargs[key] = convert(value, hints[key], f"{where}.{key}", errors)
    for name, field in fields.items():
        if name not in table and field.default is attrs.NOTHING:
            errors.append((f"{where}.{name}",
                           f"required key is missing (expected {describe_type(hints[name])})"))
    if len(errors) > before:
        return None
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        errors.append(_validator_error(exc, where))
        return None


def _validator_error(exc: Exception, where: str) -> tuple[str, str]:
    """(key path, message) for an attrs validator failure (``in_`` carries the options)."""
    args = exc.args
    if len(args) == 4 and isinstance(args[1], attrs.Attribute):
        attribute, options, value = args[1], args[2], args[3]
        hint = close_key(value, [str(o) for o in options]) if isinstance(value, str) else ""
        return (f"{where}.{attribute.name}",
                f"expected one of {list(options)}, got {value!r}{hint}")
    return (where, str(exc))


def close_key(key: str, choices: Any) -> str:
    """``" (did you mean 'ai_cores'?)"`` for the closest of ``choices``, or ""."""
    import difflib

    close = difflib.get_close_matches(key, sorted(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


_PLAIN = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}


def describe_type(hint: Any) -> str:
    """A TOML-speaking name of a type hint: ``a list of strings``, ``a table of integers``."""
    if hint in _PLAIN:
        return _PLAIN[hint]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, getattr(types, "UnionType", None)):
        return " or ".join("nothing" if a is type(None) else describe_type(a) for a in args)
    if origin is tuple:
        return "a list of " + _plural(args[0])
    if origin is Mapping or origin is dict:
        return "a table of " + _plural(args[1])
    if isinstance(hint, type) and attrs.has(hint):
        return f"a {hint.__name__} table (keys {', '.join(f.name for f in attrs.fields(hint))})"
    return str(hint).replace("typing.", "").replace("collections.abc.", "")


def _plural(hint: Any) -> str:
    text = describe_type(hint)
    for article in ("a list of ", "a table of "):
        if text.startswith(article):
            return text.replace("a ", "", 1).replace("list of", "lists of").replace(
                "table of", "tables of")
    if text.startswith(("a ", "an ")) and " " not in text.split(" ", 1)[1]:
        return text.split(" ", 1)[1] + "s"
    if text.startswith(("a ", "an ")):
        return "tables like " + text
    return text


def convert(value: Any, hint: Any, where: str, errors: Errors) -> Any:
    """Check ``value`` against the type ``hint``; append an error and return None if it fails."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any:
        return value
    if origin in (typing.Union, getattr(types, "UnionType", None)):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return convert(value, inner[0], where, errors)
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
            return tuple(convert(v, args[0], f"{where}[{i}]", errors) for i, v in enumerate(value))
    elif origin is Mapping or origin is dict:
        if isinstance(value, Mapping):
            return {
                str(k): convert(v, args[1], f"{where}.{k}", errors) for k, v in value.items()
            }
    elif isinstance(hint, type) and attrs.has(hint):
        if isinstance(value, Mapping):
            return validate_record(hint, value, where, errors)
    errors.append((where, f"expected {describe_type(hint)}, got {value!r}"))
    return None
