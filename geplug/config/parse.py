"""Readers for every option form; each returns ``(config, problems)`` and never raises.

The named constructors of :class:`~geplug.config.model.SessionConfig` call these and raise
:class:`~geplug.errors.ConfigError` when a problem is an error; ``geplug check`` calls them
directly so that parsing problems are reported together with the rule problems.
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from geplug.config.model import PROFILING_KEYS, ProfilingOptions, SessionConfig
from geplug.config.options import (
    ATC_IGNORED_FLAGS,
    FRONT_ENDS,
    GE_KEY_TO_OPTION,
    OPTION_ORDER,
    OPTIONS,
    TF_ALIASES,
    TORCH_KEY_TO_OPTION,
)
from geplug.config.problems import Problem
from geplug.errors import ConfigError

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


def _digits(text: str) -> bool:
    """ASCII decimal digits only (``str.isdigit`` also accepts superscripts int() rejects)."""
    return text.isascii() and text.isdigit()

Parsed = tuple[SessionConfig, list[Problem]]

MAX_VALUE_CHARS = 4096
"""Longest string value accepted (PATH_MAX); longer input is a problem, never a crash."""
MAX_PROFILING_JSON_CHARS = 2047
"""GE keeps only the first 2047 characters of profiling_options (options.md §3.2)."""
MAX_TOML_BYTES = 1 << 20

TF_IGNORED = frozenset({
    "mix_compile_mode", "enable_small_channel", "jit_compile", "iterations_per_loop",
    "variable_format_optimize", "hcom_parallel", "enable_data_pre_proc", "session_device_id",
    "local_rank_id", "local_device_list", "customize_dtypes", "keep_dtype", "input_shape",
    "dynamic_input", "dynamic_graph_execute_mode", "graph_memory_max_size",
    "variable_memory_max_size", "op_compiler_cache_mode", "op_compiler_cache_dir",
    "allow_hf32", "fusion_switch_file", "buffer_optimize", "hcom_multi_mode",
})
"""TF ``parameter_map`` options that exist but are not modelled: a warning, not an error."""

GE_IGNORED = frozenset({
    "ge.exec.deviceId", "ge.exec.rankTableFile", "ge.exec.rankId", "ge.exec.podName",
    "ge.exec.jobId", "ge.exec.hcclFlag", "ge.optionNameMap", "ge.exec.isUseHcom",
    "ge.exec.isTailingOptimization", "ge.exec.variable_acc", "ge.exportCompileStat",
    "ge.exec.allow_hf32", "ge.enableSmallChannel", "ge.exec.enable_small_channel",
})


def ensure(parsed: Parsed, source: str = "") -> SessionConfig:
    """The config of ``parsed``, or :class:`ConfigError` carrying every problem if any error."""
    config, problems = parsed
    if any(p.severity == "error" for p in problems):
        raise ConfigError(problems, source=source)
    return config


def _suggest(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    if close:
        return "did you mean " + " or ".join(repr(c) for c in close) + "?"
    return ""


def _unknown(option: str, value: Any, known: Iterable[str], what: str) -> Problem:
    known = list(known)
    hint = _suggest(option.rsplit(".", 1)[-1], known) or (
        "known " + what + ": " + ", ".join(sorted(known)))
    return Problem(option=option, value=_short(value), severity="error",
                   message=f"unknown {what[:-1] if what.endswith('s') else what} {option!r}",
                   hint=hint)


def _short(value: Any) -> Any:
    """A value shortened for reports (huge strings must not flood the terminal)."""
    if isinstance(value, str) and len(value) > 200:
        return value[:200] + "..."
    if isinstance(value, bytes) and len(value) > 200:
        return value[:200] + b"..."
    return value


def _type_problem(option: str, value: Any, expected: str, hint: str = "",
                  code: str = "") -> Problem:
    return Problem(option=option, value=_short(value), severity="error",
                   message=f"expected {expected}, got {type(value).__name__} {_short(value)!r}",
                   hint=hint, code=code)


def _check_str(option: str, value: str, problems: list[Problem]) -> bool:
    if len(value) > MAX_VALUE_CHARS:
        problems.append(Problem(
            option=option, value=_short(value), severity="error",
            message=f"value is {len(value)} characters long; at most {MAX_VALUE_CHARS} allowed",
            hint="shorten it (paths are limited to 4096 characters)"))
        return False
    if "\x00" in value:
        problems.append(Problem(option=option, value=_short(value), severity="error",
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
            return None, [_type_problem(option, value, "UTF-8 JSON text")]
    if isinstance(value, str):
        if value.strip() == "":
            return None, problems
        if len(value) > MAX_PROFILING_JSON_CHARS:
            return None, [Problem(
                option=option, value=_short(value), severity="error",
                message=f"the JSON text is {len(value)} characters; GE keeps only the first "
                        f"{MAX_PROFILING_JSON_CHARS} and the cut text no longer parses",
                hint="remove keys you do not need or shorten output",
                code="E10001")]
        try:
            data = json.loads(value)
        except (ValueError, RecursionError) as exc:
            return None, [Problem(
                option=option, value=_short(value), severity="error",
                message=f"not valid JSON: {exc}",
                hint='write a JSON object, e.g. {"output": "/tmp/prof", "task_trace": "on"}',
                code="E10001")]
        if not isinstance(data, dict):
            return None, [Problem(
                option=option, value=_short(value), severity="error",
                message=f"must be a JSON object, got a JSON {type(data).__name__}",
                hint='write a JSON object, e.g. {"task_trace": "on"}', code="E10001")]
    elif isinstance(value, Mapping):
        data = dict(value)
    else:
        return None, [_type_problem(option, value, "a table (mapping) or a JSON object string")]
    fields: dict[str, str] = {}
    for key, item in data.items():
        path = f"{option}.{key}"
        if not isinstance(key, str) or key not in PROFILING_KEYS:
            problems.append(_unknown(path, item, PROFILING_KEYS, "profiling_options keys"))
            continue
        if isinstance(item, bool) or not isinstance(item, str):
            hint = ""
            if isinstance(item, (int, float)) and not isinstance(item, bool):
                hint = f'write it as a string: "{key}": "{item}" (the collector reads strings)'
            elif isinstance(item, bool):
                hint = f'write "{"on" if item else "off"}"'
            problems.append(_type_problem(path, item, "a string", hint,
                                          code="Error: parsing failed"))
            continue
        if not _check_str(path, item, problems):
            continue
        fields[key] = item
    return ProfilingOptions(**fields), problems


# -- mapping / TOML -----------------------------------------------------------------------


def _convert(option: str, value: Any, kind: str, problems: list[Problem]) -> Any:
    """Convert a Python/TOML value of ``kind``; append a problem and return None if wrong."""
    if kind == "bool":
        if isinstance(value, bool):
            return value
        problems.append(_type_problem(option, value, "true or false"))
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
            _digits(value.strip().lstrip("-")) else ""
        problems.append(_type_problem(option, value, "an integer", hint))
        return None
    if kind == "str":
        if isinstance(value, str):
            return value if _check_str(option, value, problems) else None
        hint = f'write it in quotes: "{value}"' if isinstance(value, (int, float)) else ""
        problems.append(_type_problem(option, value, "a string", hint))
        return None
    opts, sub = parse_profiling_options(value, option=option)
    problems.extend(sub)
    return opts


def parse_mapping(data: Any, *, front_end: str = "tf") -> Parsed:
    """Read a mapping of option names (the seeds' names, as in TOML) to Python values.

    An optional ``front_end`` key (tf, ge, atc, python) overrides the argument.
    """
    problems: list[Problem] = []
    if not isinstance(data, Mapping):
        problems.append(_type_problem("<config>", data, "a mapping of option names to values"))
        return SessionConfig(front_end=front_end if front_end in FRONT_ENDS else "tf"), problems
    values: dict[str, Any] = {}
    fe = data.get("front_end", front_end)
    if fe not in FRONT_ENDS:
        problems.append(Problem(option="front_end", value=_short(fe), severity="error",
                                message=f"unknown front end {fe!r}",
                                hint="use one of " + ", ".join(FRONT_ENDS)))
        fe = "tf"
    for key, value in data.items():
        if key == "front_end":
            continue
        if not isinstance(key, str) or key not in OPTIONS:
            problems.append(_unknown(str(key), value, OPTION_ORDER, "options"))
            continue
        if value is None:
            continue
        converted = _convert(key, value, OPTIONS[key].kind, problems)
        if converted is not None:
            values[key] = converted
    return SessionConfig(front_end=fe, **values), problems


def parse_toml_text(text: str, *, source: str = "<toml>") -> Parsed:
    """Read TOML text whose keys are option names (``profiling_options`` a table or JSON)."""
    if len(text) > MAX_TOML_BYTES:
        return SessionConfig(), [Problem(
            option=source, value=_short(text), severity="error",
            message=f"the configuration is {len(text)} characters; at most {MAX_TOML_BYTES}",
            hint="this does not look like a session configuration")]
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError, ValueError) as exc:
        return SessionConfig(), [Problem(
            option=source, value=None, severity="error", message=f"malformed TOML: {exc}",
            hint="fix the TOML syntax (strings need quotes, tables [name])")]
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


# -- TF parameter_map ---------------------------------------------------------------------


def _accessor_value(value: Any, accessor: str) -> Any:
    if hasattr(value, accessor) and not isinstance(value, (str, bytes, int, Mapping)):
        return getattr(value, accessor)
    return value


def parse_tf_parameter_map(parameter_map: Any) -> Parsed:
    """Read a TF1 ``parameter_map``: name -> what the ``.b``/``.s``/``.i`` accessor carries."""
    problems: list[Problem] = []
    if not isinstance(parameter_map, Mapping):
        problems.append(_type_problem("parameter_map", parameter_map, "a mapping"))
        return SessionConfig(front_end="tf"), problems
    values: dict[str, Any] = {}
    for raw_key, raw in parameter_map.items():
        key = TF_ALIASES.get(raw_key, raw_key) if isinstance(raw_key, str) else raw_key
        if not isinstance(key, str) or key not in OPTIONS:
            if isinstance(key, str) and key in TF_IGNORED:
                problems.append(Problem(option=key, value=_short(raw), severity="warning",
                                        message="not modelled by geplug; left unchecked"))
                continue
            problems.append(_unknown(str(raw_key), raw, [*OPTION_ORDER, "soc_config"],
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
                    problems.append(_type_problem(path, value, "UTF-8 bytes"))
                    continue
            if not isinstance(value, str):
                problems.append(_type_problem(
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
            if _check_str(key, value, problems):
                values[key] = value
        elif spec.tf_accessor == "b":
            if not isinstance(value, bool):
                problems.append(_type_problem(
                    path, value, "a bool (the .b accessor)",
                    hint=f'set parameter_map["{raw_key}"].b = True or False'))
                continue
            values[key] = value
        else:
            if isinstance(value, bool) or not isinstance(value, int):
                problems.append(_type_problem(
                    path, value, "an int (the .i accessor)",
                    hint=f'set parameter_map["{raw_key}"].i = <int>'))
                continue
            values[key] = _convert(key, value, "int", problems)
    return SessionConfig(front_end="tf", **{k: v for k, v in values.items() if v is not None}), \
        problems


def parse_tf_snippet(text: str) -> Parsed:
    """Read ``custom_op.parameter_map["x"].b/.s/.i = ...`` lines (what ``export tf`` writes)."""
    import ast
    import re

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
            value = ast.literal_eval(rhs)
        except (ValueError, SyntaxError):
            problems.append(Problem(option=f"line {number}", value=_short(line), severity="error",
                                    message="the right-hand side is not a literal",
                                    hint="use a literal string, number, True or False"))
            continue
        pmap[match["key"]] = value
    config, more = parse_tf_parameter_map(pmap)
    return config, problems + more


# -- GE option map ------------------------------------------------------------------------


def parse_ge_options(options: Any) -> Parsed:
    """Read a GE option map: every value a string; bools "1"/"0"; ints decimal text."""
    problems: list[Problem] = []
    if not isinstance(options, Mapping):
        problems.append(_type_problem("<ge options>", options, "a mapping of GE keys to strings"))
        return SessionConfig(front_end="ge"), problems
    values: dict[str, Any] = {}
    for key, raw in options.items():
        name = GE_KEY_TO_OPTION.get(key) if isinstance(key, str) else None
        if name is None:
            if key in GE_IGNORED:
                continue
            problems.append(_unknown(str(key), raw, GE_KEY_TO_OPTION, "GE option keys"))
            continue
        if not isinstance(raw, str):
            problems.append(_type_problem(key, raw, "a string (GE takes every value as text)",
                                          hint=f'write "{raw}"'))
            continue
        if name in values:
            problems.append(Problem(option=key, value=raw, severity="warning",
                                    message=f"{name} is given twice (GE key and plain name); "
                                            "the last one is used"))
        kind = OPTIONS[name].kind
        if kind == "bool":
            if raw not in ("1", "0"):
                problems.append(Problem(option=key, value=raw, severity="error",
                                        message="The value must be either 1 or 0.",
                                        hint='use "1" or "0"', code="E10006"))
                continue
            values[name] = raw == "1"
        elif kind == "int":
            text = raw.strip()
            if not (_digits(text.lstrip("-")) and len(text) < 12):
                problems.append(Problem(option=key, value=raw, severity="error",
                                        message="expected an integer as decimal text",
                                        hint='e.g. "0"', code="E10001"))
                continue
            values[name] = int(text)
        elif kind == "profiling":
            opts, sub = parse_profiling_options(raw, option=key)
            problems.extend(sub)
            if opts is not None:
                values[name] = opts
        elif raw != "" and _check_str(key, raw, problems):
            values[name] = raw
    return SessionConfig(front_end="ge", **values), problems


# -- ATC ----------------------------------------------------------------------------------


def parse_atc_args(args: Any) -> Parsed:
    """Read ATC arguments: ``--flag=value`` or ``--flag value``; a leading ``atc`` is skipped.

    Flags ATC has but geplug does not model (``--model``, ``--framework``...) are warnings.
    """
    problems: list[Problem] = []
    if isinstance(args, str):
        try:
            args = shlex.split(args)
        except ValueError as exc:
            return SessionConfig(front_end="atc"), [Problem(
                option="<atc>", value=_short(args), severity="error",
                message=f"cannot split the command line: {exc}", hint="close the quotes",
                code="E10054")]
    if not isinstance(args, (list, tuple)) or not all(isinstance(a, str) for a in args):
        return SessionConfig(front_end="atc"), [_type_problem("<atc>", args,
                                                              "a list of strings")]
    args = list(args)
    if args and os.path.basename(args[0]) == "atc":
        args = args[1:]
    flag_to_option = {s.atc_flag: s.name for s in OPTIONS.values() if s.atc_flag}
    values: dict[str, Any] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if not arg.startswith("--"):
            problems.append(Problem(option="<atc>", value=_short(arg), severity="error",
                                    message=f"unexpected argument {arg!r}",
                                    hint="ATC flags look like --name=value"))
            continue
        flag, eq, value = arg[2:].partition("=")
        if not eq:
            if i < len(args) and not args[i].startswith("--"):
                value = args[i]
                i += 1
        if flag not in flag_to_option:
            if flag in ATC_IGNORED_FLAGS:
                problems.append(Problem(option=f"--{flag}", value=_short(value),
                                        severity="warning",
                                        message="not a session option; left unchecked"))
                continue
            problems.append(_unknown(f"--{flag}", value,
                                     sorted(flag_to_option) + sorted(ATC_IGNORED_FLAGS),
                                     "ATC flags"))
            continue
        name = flag_to_option[flag]
        if value == "":
            code, msg = ("E10054", f"The required parameter --{flag} for ATC is empty.") \
                if name == "soc_version" else ("E10004", f"Value for --{flag} is empty.")
            problems.append(Problem(option=f"--{flag}", value=value, severity="error",
                                    message=msg, hint=f"give a value: --{flag}=...", code=code))
            continue
        if OPTIONS[name].kind == "int":
            if not (_digits(value.lstrip("-")) and len(value) < 12):
                problems.append(Problem(
                    option=f"--{flag}", value=_short(value), severity="error",
                    message=f"Value {value} for parameter --{flag} is invalid. Reason: The "
                            "value type must be [int32].",
                    hint="use an integer, e.g. --op_debug_level=0", code="E10003"))
                continue
            values[name] = int(value)
        elif _check_str(f"--{flag}", value, problems):
            values[name] = value
    return SessionConfig(front_end="atc", **values), problems


# -- torch_npu ----------------------------------------------------------------------------


def parse_torch_options(options: Any) -> Parsed:
    """Read a ``torch_npu.npu.set_option`` dict (string values, ``ACL_*`` keys)."""
    problems: list[Problem] = []
    if not isinstance(options, Mapping):
        return SessionConfig(front_end="torch"), [
            Problem(option="<torch>", value=_short(options), severity="error",
                    message="npu option must be a dict.", hint="pass a dict of ACL_* keys")]
    values: dict[str, Any] = {}
    for key, raw in options.items():
        name = TORCH_KEY_TO_OPTION.get(key) if isinstance(key, str) else None
        if name is None:
            problems.append(_unknown(str(key), raw, TORCH_KEY_TO_OPTION, "torch_npu option keys"))
            continue
        if not isinstance(raw, str):
            problems.append(_type_problem(key, raw, "a string", hint=f'write "{raw}"'))
            continue
        if OPTIONS[name].kind == "int":
            if raw not in ("0", "1", "2", "3", "4"):
                problems.append(Problem(
                    option=key, value=raw, severity="error",
                    message=f"value of {key} should be in ['0', '1', '2', '3', '4'] but got "
                            f"{_short(raw)}", hint='use "0".."4"'))
                continue
            values[name] = int(raw)
        elif _check_str(key, raw, problems):
            values[name] = raw
    return SessionConfig(front_end="torch", **values), problems


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
            try:
                with open(name, encoding="utf-8") as fh:
                    data = json.load(fh)
            except (OSError, ValueError) as exc:
                return SessionConfig(front_end="ge"), [Problem(
                    option=name, value=name, severity="error",
                    message=f"cannot read the GE option map: {exc}",
                    hint="give a JSON object of GE keys to string values")]
            return parse_ge_options(data)
        return parse_toml_file(name)
    return SessionConfig(), [_type_problem(
        "<config>", obj, "None, a SessionConfig, a mapping or a path to a TOML file")]
