"""Readers of the lower layers' forms: a GE option map (``ge.exec.*`` keys, string values),
ATC arguments and a torch_npu ``set_option`` dict (options.md §2, §2.4)."""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping
from typing import Any

from geplug.config.model import SessionConfig
from geplug.config.options import (
    ATC_IGNORED_FLAGS,
    GE_KEY_TO_OPTION,
    GE_LEVELS,
    OPTIONS,
    TORCH_CARRIED_KEYS,
    TORCH_KEY_TO_OPTION,
)
from geplug.config.parse_common import (
    Parsed,
    check_str,
    choice_hint,
    parse_profiling_options,
    type_problem,
    unknown,
)
from geplug.config.problems import Problem
from geplug.config.text import short, signed_digits
from geplug.errors import ConfigError
from geplug.limits import MAX_CONFIG_BYTES, check_depth, decode_utf8, depth_error, read_bytes

__all__ = ["GE_IGNORED", "parse_atc_args", "parse_ge_file", "parse_ge_options",
           "parse_torch_options"]

GE_IGNORED = frozenset({
    "ge.exec.deviceId", "ge.exec.rankTableFile", "ge.exec.rankId", "ge.exec.podName",
    "ge.exec.jobId", "ge.exec.hcclFlag", "ge.optionNameMap", "ge.exec.isUseHcom",
    "ge.exec.isTailingOptimization", "ge.exec.variable_acc", "ge.exportCompileStat",
    "ge.exec.allow_hf32",
})


# -- GE option map ------------------------------------------------------------------------


def parse_ge_options(options: Any, *, level: str | None = None) -> Parsed:
    """Read a GE option map: every value a string; bools "1"/"0"; ints decimal text.

    ``level`` (``global``, ``session`` or ``graph``): the level the map is passed at; a key
    that level does not accept is an error (GE only warns, policy §12). ``None``: any level.
    """
    problems: list[Problem] = []
    if not isinstance(options, Mapping):
        problems.append(type_problem("<ge options>", options, "a mapping of GE keys to strings"))
        return SessionConfig(front_end="ge"), problems
    if level is not None and level not in GE_LEVELS:
        problems.append(Problem(option="<ge level>", value=short(level), severity="error",
                                message=f"unknown GE option level {level!r}",
                                hint=choice_hint(level, GE_LEVELS)))
        level = None
    values: dict[str, Any] = {}
    seen: dict[str, tuple[str, str]] = {}
    for key, raw in options.items():
        name = GE_KEY_TO_OPTION.get(key) if isinstance(key, str) else None
        if name is None:
            if key in GE_IGNORED:
                continue
            problems.append(unknown(str(key), raw, GE_KEY_TO_OPTION, "GE option keys"))
            continue
        if level is not None and level not in OPTIONS[name].ge_levels:
            problems.append(Problem(
                option=key, value=short(raw), severity="error",
                message=f"[Check][Options] unsupported option({key}) by {level} level: GE "
                        f"accepts it at the {' and '.join(OPTIONS[name].ge_levels)} level only "
                        "and would ignore it here",
                hint=f"pass {key} in the {OPTIONS[name].ge_levels[0]} options instead"))
            continue
        if not isinstance(raw, str):
            problems.append(type_problem(key, raw, "a string (GE takes every value as text)",
                                          hint=f'write "{_ge_text(raw, OPTIONS[name].kind)}"'))
            continue
        if name in seen:
            first_key, first_raw = seen[name]
            if first_raw != raw:
                problems.append(Problem(
                    option=key, value=raw, severity="error",
                    message=f"{first_key!r} = {first_raw!r} and {key!r} = {raw!r} both set "
                            f"{name}, to different values; GE would silently keep one",
                    hint=f"keep only one of {first_key!r} and {key!r}"))
                values.pop(name, None)
                continue
            problems.append(Problem(option=key, value=raw, severity="warning",
                                    message=f"{name} is given twice ({first_key!r} and "
                                            f"{key!r}) with the same value"))
        seen[name] = (str(key), raw)
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
            if not (signed_digits(text) and len(text) < 12):
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
        elif raw != "" and check_str(key, raw, problems):
            values[name] = raw
    return SessionConfig(front_end="ge", **values), problems


def _ge_text(raw: Any, kind: str) -> str:
    """The GE text for a non-string JSON value: GE bools and ints are decimal text, so a JSON
    ``true`` becomes ``1`` (GE refuses "True", E10006)."""
    if kind in ("bool", "int") and isinstance(raw, bool):
        return "1" if raw else "0"
    if kind == "int" and isinstance(raw, float) and raw.is_integer():
        return str(int(raw))
    return str(raw)


def parse_ge_file(path: Any, *, level: str | None = None) -> Parsed:
    """Read a JSON file holding a GE option map; an unreadable file or bad JSON is a problem."""
    name = os.fspath(path)

    def fail(message: str) -> ConfigError:
        return ConfigError([Problem(option=name, value=name, severity="error",
                                    message=message,
                                    hint="give a JSON object of GE keys to string values")])

    try:
        raw = read_bytes(name, limit=MAX_CONFIG_BYTES, what="GE option map", fail=fail)
        text = decode_utf8(raw, path=name, what="GE option map", fail=fail)
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise fail(f"cannot read the GE option map: {exc}") from None
        deep = check_depth(data)
        if deep is not None:
            raise fail(depth_error(name, deep))
    except ConfigError as exc:
        return SessionConfig(front_end="ge"), list(exc.problems)
    return parse_ge_options(data, level=level)


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
                option="<atc>", value=short(args), severity="error",
                message=f"cannot split the command line: {exc}", hint="close the quotes",
                code="E10054")]
    if not isinstance(args, (list, tuple)) or not all(isinstance(a, str) for a in args):
        return SessionConfig(front_end="atc"), [type_problem("<atc>", args,
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
            problems.append(Problem(option="<atc>", value=short(arg), severity="error",
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
                problems.append(Problem(option=f"--{flag}", value=short(value),
                                        severity="warning",
                                        message="not a session option; left unchecked"))
                continue
            problems.append(unknown(f"--{flag}", value,
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
            if not (signed_digits(value) and len(value) < 12):
                problems.append(Problem(
                    option=f"--{flag}", value=short(value), severity="error",
                    message=f"Value {value} for parameter --{flag} is invalid. Reason: The "
                            "value type must be [int32].",
                    hint="use an integer, e.g. --op_debug_level=0", code="E10003"))
                continue
            values[name] = int(value)
        elif check_str(f"--{flag}", value, problems):
            values[name] = value
    return SessionConfig(front_end="atc", **values), problems


# -- torch_npu ----------------------------------------------------------------------------


def parse_torch_options(options: Any) -> Parsed:
    """Read a ``torch_npu.npu.set_option`` dict (string values, ``ACL_*`` keys)."""
    problems: list[Problem] = []
    if not isinstance(options, Mapping):
        return SessionConfig(front_end="torch"), [
            Problem(option="<torch>", value=short(options), severity="error",
                    message="npu option must be a dict.", hint="pass a dict of ACL_* keys")]
    values: dict[str, Any] = {}
    for key, raw in options.items():
        name = TORCH_KEY_TO_OPTION.get(key) if isinstance(key, str) else None
        if name is None and key in TORCH_CARRIED_KEYS:
            problems.append(Problem(
                option=str(key), value=short(raw), severity="warning",
                message="a torch_npu option geplug does not model; accepted and left aside",
                hint="keep it for torch_npu; it changes nothing in geplug's checks"))
            continue
        if name is None:
            problems.append(unknown(str(key), raw, TORCH_KEY_TO_OPTION, "torch_npu option keys"))
            continue
        if not isinstance(raw, str):
            problems.append(type_problem(key, raw, "a string", hint=f'write "{raw}"'))
            continue
        if OPTIONS[name].kind == "int" and name != "op_debug_level":
            if not (raw.strip().isdigit() and len(raw.strip()) < 12):
                problems.append(Problem(
                    option=key, value=short(raw), severity="error",
                    message=f"value of {key} should be a positive integer as text but got "
                            f"{short(raw)}", hint=f'e.g. {{"{key}": "8"}}'))
                continue
            values[name] = int(raw.strip())
        elif OPTIONS[name].kind == "int":
            if raw not in ("0", "1", "2", "3", "4"):  # vocab: not op_debug_level, GE's int
                problems.append(Problem(
                    option=key, value=raw, severity="error",
                    message=f"value of {key} should be in ['0', '1', '2', '3', '4'] but got "
                            f"{short(raw)}", hint='use "0".."4"'))
                continue
            values[name] = int(raw)
        elif check_str(key, raw, problems):
            values[name] = raw
    return SessionConfig(front_end="torch", **values), problems
