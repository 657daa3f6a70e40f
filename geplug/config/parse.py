"""Readers for every option form; each returns ``(config, problems)`` and never raises.

The named constructors of :class:`~geplug.config.model.SessionConfig` call these and raise
:class:`~geplug.errors.ConfigError` when a problem is an error; ``geplug check`` calls them
directly so that parsing problems are reported together with the rule problems. This module
reads TOML, mappings and "any source"; the TF forms are in :mod:`geplug.config.parse_tf`, the
GE / ATC / torch_npu forms in :mod:`geplug.config.parse_layers` (all re-exported here).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from geplug.config.model import SessionConfig
from geplug.config.options import FRONT_ENDS, OPTION_ORDER, OPTIONS
from geplug.config.parse_common import (
    MAX_PROFILING_JSON_CHARS,
    MAX_TOML_BYTES,
    MAX_VALUE_CHARS,
    Parsed,
    choice_hint,
    convert,
    ensure,
    parse_profiling_options,
    type_problem,
    unknown,
)
from geplug.config.parse_layers import (
    parse_atc_args,
    parse_ge_file,
    parse_ge_options,
    parse_torch_options,
)
from geplug.config.parse_tf import parse_tf_parameter_map, parse_tf_snippet
from geplug.config.problems import Problem
from geplug.config.text import short
from geplug.limits import MAX_DEPTH, check_depth, escape_controls

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "MAX_PROFILING_JSON_CHARS",
    "MAX_VALUE_CHARS",
    "Parsed",
    "ensure",
    "parse_atc_args",
    "parse_ge_file",
    "parse_ge_options",
    "parse_mapping",
    "parse_profiling_options",
    "parse_source",
    "parse_tf_parameter_map",
    "parse_tf_snippet",
    "parse_toml_file",
    "parse_toml_text",
    "parse_torch_options",
]


def parse_mapping(data: Any, *, front_end: str = "tf") -> Parsed:
    """Read a mapping of option names (the seeds' names, as in TOML) to Python values.

    An optional ``front_end`` key (tf, ge, atc, python) overrides the argument.
    """
    problems: list[Problem] = []
    if not isinstance(data, Mapping):
        problems.append(type_problem("<config>", data, "a mapping of option names to values"))
        return SessionConfig(front_end=front_end if front_end in FRONT_ENDS else "tf"), problems
    values: dict[str, Any] = {}
    fe = data.get("front_end", front_end)
    if fe not in FRONT_ENDS:
        problems.append(Problem(option="front_end", value=short(fe), severity="error",
                                message=f"unknown front end {fe!r}",
                                hint=choice_hint(fe, FRONT_ENDS)))
        fe = "tf"
    for key, value in data.items():
        if key == "front_end":
            continue
        if not isinstance(key, str) or key not in OPTIONS:
            problems.append(unknown(str(key), value, OPTION_ORDER, "options"))
            continue
        if value is None:
            continue
        converted = convert(key, value, OPTIONS[key].kind, problems)
        if converted is not None:
            values[key] = converted
    return SessionConfig(front_end=fe, **values), problems


def parse_toml_text(text: str, *, source: str = "<toml>") -> Parsed:
    """Read TOML text whose keys are option names (``profiling_options`` a table or JSON)."""
    if len(text) > MAX_TOML_BYTES:
        return SessionConfig(), [Problem(
            option=source, value=source, severity="error",
            message=f"the configuration is {len(text)} characters; at most {MAX_TOML_BYTES}",
            hint="this does not look like a session configuration")]
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError, ValueError) as exc:
        return SessionConfig(), [Problem(
            option=source, value=source, severity="error",
            message=f"malformed TOML: {escape_controls(str(exc))}",
            hint="fix the TOML syntax (strings need quotes, tables [name])")]
    deep = check_depth(data)
    if deep is not None:
        return SessionConfig(), [Problem(
            option=source, value=source, severity="error",
            message=f"{deep} nests tables/arrays deeper than {MAX_DEPTH} levels (the limit, "
                    "docs/limits.md)",
            hint="a session configuration nests at most a table or two; flatten it")]
    return parse_mapping(data)


def parse_toml_file(path: Any) -> Parsed:
    """Read a TOML file; an unreadable file or a directory is a problem naming the path."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as fh:
            raw = fh.read(MAX_TOML_BYTES + 1)
    except IsADirectoryError:
        return SessionConfig(), [Problem(option=name, value=name, severity="error",
                                         message="is a directory, not a TOML file",
                                         hint="give the path of the .toml file")]
    except OSError as exc:
        return SessionConfig(), [Problem(option=name, value=name, severity="error",
                                         message=f"cannot read: {exc.strerror or exc}",
                                         hint="check the path and its permissions")]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return SessionConfig(), [Problem(option=name, value=name, severity="error",
                                         message=f"not UTF-8 text: {exc}",
                                         hint="save the file as UTF-8")]
    return parse_toml_text(text, source=name)


# -- any source ---------------------------------------------------------------------------


def parse_source(obj: Any) -> Parsed:
    """Read ``None`` / a SessionConfig / a mapping / a TOML path (``.json`` = GE option map)."""
    if obj is None:
        return SessionConfig(), []
    if isinstance(obj, SessionConfig):
        return obj, []
    if isinstance(obj, Mapping):
        return parse_mapping(obj)
    if isinstance(obj, (str, os.PathLike)):
        name = os.fspath(obj)
        if name.endswith(".json"):
            return parse_ge_file(name)
        return parse_toml_file(name)
    return SessionConfig(), [type_problem(
        "<config>", obj, "a SessionConfig, a mapping, a path to a TOML file or nothing")]
