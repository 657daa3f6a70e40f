"""What every option reader shares: the result type, the problem builders, the value
conversion and the ``profiling_options`` reader (options.md §3.2)."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from geplug.config.model import PROFILING_KEYS, ProfilingOptions, SessionConfig
from geplug.config.problems import Problem
from geplug.config.text import describe, short, signed_digits
from geplug.errors import ConfigError
from geplug.limits import finite

__all__ = [
    "MAX_PROFILING_JSON_CHARS",
    "MAX_TOML_BYTES",
    "MAX_VALUE_CHARS",
    "Parsed",
    "check_str",
    "choice_hint",
    "convert",
    "ensure",
    "parse_profiling_options",
    "suggest",
    "type_problem",
    "unknown",
]

Parsed = tuple[SessionConfig, list[Problem]]

MAX_VALUE_CHARS = 4096
"""Longest string value accepted (PATH_MAX); longer input is a problem, never a crash."""
MAX_PROFILING_JSON_CHARS = 2047
"""GE keeps only the first 2047 characters of profiling_options (options.md §3.2)."""
MAX_TOML_BYTES = 1 << 20


def ensure(parsed: Parsed, source: str = "") -> SessionConfig:
    """The config of ``parsed``, or :class:`ConfigError` carrying every problem if any error."""
    config, problems = parsed
    if any(p.severity == "error" for p in problems):
        raise ConfigError(problems, source=source)
    return config


def suggest(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    if close:
        return "did you mean " + " or ".join(repr(c) for c in close) + "?"
    return ""


def choice_hint(value: Any, allowed: Iterable[str], lead: str = "use one of", *,
                listed: bool = False) -> str:
    """The hint for a value outside a value set: ``did you mean 'output'? (use one of input,
    output, all)``, or just the listing when nothing is close. ``listed``: the message already
    lists the values, so the hint does not repeat them (each message lists things once)."""
    allowed = [str(a) for a in allowed]
    listing = "use a value of the list" if listed else f"{lead} {', '.join(allowed)}"
    near = difflib.get_close_matches(value, allowed, n=1, cutoff=0.6) \
        if isinstance(value, str) else []
    close = f"did you mean {near[0]!r}?" if near else ""
    if not close and isinstance(value, str):  # case slips: 'Pipeutilization', 'ON'
        folded = {a.casefold(): a for a in allowed}
        if value.casefold() in folded:
            close = f"did you mean {folded[value.casefold()]!r}?"
    if close and listed:
        return close
    return f"{close} ({listing})" if close else listing


def unknown(option: str, value: Any, known: Iterable[str], what: str) -> Problem:
    known = list(known)
    listing = "known " + what + ": " + ", ".join(sorted(known))
    suggestion = suggest(option.rsplit(".", 1)[-1], known)
    hint = f"{suggestion} ({listing})" if suggestion else listing
    return Problem(option=option, value=short(value), severity="error",
                   message=f"unknown {what[:-1] if what.endswith('s') else what} {option!r}",
                   hint=hint)




def type_problem(option: str, value: Any, expected: str, hint: str = "",
                  code: str = "") -> Problem:
    return Problem(option=option, value=short(value), severity="error",
                   message=f"expected {expected}, got {describe(value)}",
                   hint=hint, code=code)


def check_str(option: str, value: str, problems: list[Problem]) -> bool:
    if len(value) > MAX_VALUE_CHARS:
        problems.append(Problem(
            option=option, value=short(value), severity="error",
            message=f"value is {len(value)} characters long; at most {MAX_VALUE_CHARS} allowed",
            hint="shorten it (paths are limited to 4096 characters)"))
        return False
    if "\x00" in value:
        problems.append(Problem(option=option, value=short(value), severity="error",
                                message="value contains a NUL character",
                                hint="remove the NUL character"))
        return False
    return True


# -- profiling_options --------------------------------------------------------------------


def parse_profiling_options(
    value: Any, *, option: str = "profiling_options"
) -> tuple[ProfilingOptions | None, list[Problem]]:
    """Read profiling_options: a JSON object text (as the real stack takes) or a mapping.

    Every value must be a string (options.md §3.2: JSON numbers break the collector's read,
    policy §12). "" means unset. Unknown keys are problems with a did-you-mean.
    """
    problems: list[Problem] = []
    if value is None:
        return None, problems
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            return None, [type_problem(option, value, "UTF-8 JSON text")]
    if isinstance(value, str):
        if value.strip() == "":
            return None, problems
        if len(value) > MAX_PROFILING_JSON_CHARS:
            return None, [Problem(
                option=option, value=short(value), severity="error",
                message=f"the JSON text is {len(value)} characters; GE keeps only the first "
                        f"{MAX_PROFILING_JSON_CHARS} and the cut text no longer parses",
                hint="remove keys you do not need or shorten output",
                code="E10001")]
        try:
            data = json.loads(value)
        except (ValueError, RecursionError) as exc:
            return None, [Problem(
                option=option, value=short(value), severity="error",
                message=f"not valid JSON: {exc}",
                hint='write a JSON object, e.g. {"output": "/tmp/prof", "task_trace": "on"}',
                code="E10001")]
        if not isinstance(data, dict):
            return None, [Problem(
                option=option, value=short(value), severity="error",
                message=f"must be a JSON object, got {describe(data)}",
                hint='write a JSON object, e.g. {"task_trace": "on"}', code="E10001")]
    elif isinstance(value, Mapping):
        data = dict(value)
    else:
        return None, [type_problem(option, value, "a table (mapping) or a JSON object string")]
    fields: dict[str, str] = {}
    for key, item in data.items():
        path = f"{option}.{key}"
        if not isinstance(key, str) or key not in PROFILING_KEYS:
            problems.append(unknown(path, item, PROFILING_KEYS, "profiling_options keys"))
            continue
        if isinstance(item, bool) or not isinstance(item, str):
            hint = _string_hint(key, item)
            problems.append(type_problem(path, item, "a string", hint,
                                          code="Error: parsing failed"))
            continue
        if not check_str(path, item, problems):
            continue
        fields[key] = item
    return ProfilingOptions(**fields), problems


def _string_hint(key: str, item: Any) -> str:
    """How to write a non-string profiling_options value as a string the key's rule accepts
    (never a suggestion the rule then rejects, e.g. ``"500"`` for storage_limit)."""
    from geplug.config.rules.profiling import FREQ_KEYS, LEVELS, SWITCHES

    reads = " (the collector reads strings)"
    if key in LEVELS or key in SWITCHES or key == "training_trace":
        allowed = LEVELS.get(key, ("on", "off"))
        if isinstance(item, bool) and ("on" if item else "off") in allowed:
            return f'write "{"on" if item else "off"}"{reads}'
        return "write one of " + ", ".join(f'"{a}"' for a in allowed) + reads
    if isinstance(item, float) and not finite(item):  # inf, nan: no number to suggest
        return "write a string" + reads + "; inf and nan are not values of any key"
    number = finite(item) and abs(item) < 1e15
    if key == "storage_limit" and number:
        size = max(int(item), 200) if item == int(item) else 200
        return f'write it as a string with the unit: "{key}": "{size}MB" (200MB at least)'
    if key in FREQ_KEYS and number and item == int(item) and item >= 0:
        return f'write it as a string: "{key}": "{int(item)}"{reads}'
    if number and key not in ("storage_limit", *FREQ_KEYS):
        return f'write it as a string: "{key}": "{item}"{reads}'
    return "write a string" + reads


def convert(option: str, value: Any, kind: str, problems: list[Problem]) -> Any:
    """Convert a Python/TOML value of ``kind``; append a problem and return None if wrong."""
    if kind == "bool":
        if isinstance(value, bool):
            return value
        hint = ""
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            hint = f"write {value.strip().lower()} without quotes"
        elif isinstance(value, int) and value in (0, 1):
            hint = f"write {'true' if value else 'false'}"
        problems.append(type_problem(option, value, "true or false", hint))
        return None
    if kind == "int":
        if isinstance(value, int) and not isinstance(value, bool):
            if abs(value) > 2**31:
                problems.append(Problem(option=option, value=value, severity="error",
                                        message="value is outside the int32 range",
                                        hint="use a small integer"))
                return None
            return value
        hint = f"write {value} without quotes" if isinstance(value, str) and \
            signed_digits(value.strip()) else ""
        problems.append(type_problem(option, value, "an integer", hint))
        return None
    if kind == "str":
        if isinstance(value, str):
            return value if check_str(option, value, problems) else None
        hint = f'write it in quotes: "{value}"' if isinstance(value, (int, float)) else ""
        problems.append(type_problem(option, value, "a string", hint))
        return None
    opts, sub = parse_profiling_options(value, option=option)
    problems.extend(sub)
    return opts
