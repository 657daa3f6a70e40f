"""Readers of the TF1 adapter forms: a ``parameter_map``-style mapping (options.md §2.1) and
the ``custom_op.parameter_map[...]`` lines ``geplug export --to tf`` writes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from geplug.config.model import SessionConfig
from geplug.config.options import OPTION_ORDER, OPTIONS, TF_ALIASES
from geplug.config.parse_common import (
    Parsed,
    check_str,
    convert,
    parse_profiling_options,
    type_problem,
    unknown,
)
from geplug.config.problems import Problem
from geplug.config.text import short

__all__ = ["TF_IGNORED", "parse_tf_parameter_map", "parse_tf_snippet"]

TF_IGNORED = frozenset({
    "mix_compile_mode", "jit_compile", "iterations_per_loop",
    "variable_format_optimize", "hcom_parallel", "enable_data_pre_proc", "session_device_id",
    "local_rank_id", "local_device_list", "customize_dtypes", "keep_dtype", "input_shape",
    "dynamic_input", "dynamic_graph_execute_mode", "graph_memory_max_size",
    "variable_memory_max_size",
    "allow_hf32", "fusion_switch_file", "hcom_multi_mode",
})
"""TF ``parameter_map`` options that exist but are not modelled: a warning, not an error."""


# -- TF parameter_map ---------------------------------------------------------------------


def _accessor_value(value: Any, accessor: str) -> Any:
    if hasattr(value, accessor) and not isinstance(value, (str, bytes, int, Mapping)):
        return getattr(value, accessor)
    return value


def parse_tf_parameter_map(parameter_map: Any) -> Parsed:
    """Read a TF1 ``parameter_map``: name -> what the ``.b``/``.s``/``.i`` accessor carries."""
    problems: list[Problem] = []
    if not isinstance(parameter_map, Mapping):
        problems.append(type_problem("parameter_map", parameter_map, "a mapping"))
        return SessionConfig(front_end="tf"), problems
    values: dict[str, Any] = {}
    for raw_key, raw in parameter_map.items():
        key = TF_ALIASES.get(raw_key, raw_key) if isinstance(raw_key, str) else raw_key
        if not isinstance(key, str) or key not in OPTIONS:
            if isinstance(key, str) and key in TF_IGNORED:
                problems.append(Problem(option=key, value=short(raw), severity="warning",
                                        message="not modelled by geplug; left unchecked"))
                continue
            problems.append(unknown(str(raw_key), raw, [*OPTION_ORDER, "soc_config"],
                                     "options"))
            continue
        spec = OPTIONS[key]
        value = _accessor_value(raw, spec.tf_accessor)
        path = f'parameter_map["{raw_key}"].{spec.tf_accessor}'
        if spec.tf_accessor == "s":
            if isinstance(value, bytes):
                try:
                    value = value.decode("utf-8")
                except UnicodeDecodeError:
                    problems.append(type_problem(path, value, "UTF-8 bytes"))
                    continue
            if not isinstance(value, str):
                problems.append(type_problem(
                    path, value, "str or bytes (the .s accessor)",
                    hint=f'set parameter_map["{raw_key}"].s = tf.compat.as_bytes(...)'))
                continue
            if spec.kind == "profiling":
                opts, sub = parse_profiling_options(value, option=key)
                problems.extend(sub)
                if opts is not None:
                    values[key] = opts
                continue
            if value == "":
                continue
            if spec.kind == "int":  # aicore_num: GE takes it as decimal text (.s)
                text = value.strip()
                if not (text.isdigit() and len(text) < 12):
                    problems.append(type_problem(path, value, "decimal integer text",
                                                 hint=f'e.g. parameter_map["{raw_key}"].s = '
                                                      'tf.compat.as_bytes("8")'))
                    continue
                values[key] = int(text)
                continue
            if check_str(key, value, problems):
                values[key] = value
        elif spec.tf_accessor == "b":
            if not isinstance(value, bool):
                problems.append(type_problem(
                    path, value, "a bool (the .b accessor)",
                    hint=f'set parameter_map["{raw_key}"].b = True or False'))
                continue
            values[key] = value
        else:
            if isinstance(value, bool) or not isinstance(value, int):
                problems.append(type_problem(
                    path, value, "an int (the .i accessor)",
                    hint=f'set parameter_map["{raw_key}"].i = <int>'))
                continue
            values[key] = convert(key, value, "int", problems)
    return SessionConfig(front_end="tf", **{k: v for k, v in values.items() if v is not None}), \
        problems


def parse_tf_snippet(text: str) -> Parsed:
    """Read ``custom_op.parameter_map["x"].b/.s/.i = ...`` lines (what ``export tf`` writes).

    The right-hand side is read by :func:`geplug.pyliteral.literal`, never compiled: text
    such as ``"C:\\dir"`` (an invalid escape) is a problem naming the line, not a Python
    warning on the user's terminal.
    """
    import re

    from geplug.pyliteral import LiteralError, literal

    line_re = re.compile(
        r'parameter_map\[\s*(["\'])(?P<key>[^"\']+)\1\s*\]\.(?P<acc>[bsi])\s*=\s*(?P<rhs>.+)$')
    pmap: dict[str, Any] = {}
    problems: list[Problem] = []
    for number, line in enumerate(text.splitlines(), 1):
        match = line_re.search(line.strip())
        if not match:
            continue
        rhs = match["rhs"].strip()
        wrapped = re.fullmatch(r"tf\.compat\.as_bytes\((.*)\)", rhs)
        if wrapped:
            rhs = wrapped.group(1)
        try:
            value = literal(rhs)
        except LiteralError as exc:
            problems.append(Problem(option=f"line {number}", value=short(line), severity="error",
                                    message=f"the right-hand side is not a literal: {exc}",
                                    hint="use a literal string, number, True or False"))
            continue
        pmap[match["key"]] = value
    config, more = parse_tf_parameter_map(pmap)
    return config, problems + more
