"""Parsers of the files options point at: op_debug_config .cfg, op_precision_mode .ini,
modify_mixlist .json (options.md §7.2, §9.3, §5.5). Each returns ``(data, problems)``."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence

import attrs

from geplug import vocab
from geplug.config.problems import Problem

__all__ = [
    "DEBUG_CONFIG_ITEMS",
    "DebugConfig",
    "ImplIni",
    "MixlistEdits",
    "mixlist_names",
    "mixlist_state",
    "read_debug_config",
    "read_mixlist",
    "read_precision_ini",
]

DEBUG_CONFIG_ITEMS = vocab.DEBUG_CONFIG_ITEMS
"""The documented op_debug_config items (options.md §7.2; policy §12: validate against them)."""

MAX_FILE_BYTES = 1 << 20
_NO_FILE = "The file does not exist or its access permission is denied"


@attrs.frozen(kw_only=True)
class DebugConfig:
    """An op_debug_config file: the items and the ops they apply to (() = every op)."""

    items: tuple[str, ...] = ()
    op_list: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class ImplIni:
    """An op_precision_mode ini: ``[ByOpType]`` and ``[ByNodeName]`` maps."""

    by_op_type: Mapping[str, str] = attrs.field(factory=dict)
    by_node: Mapping[str, str] = attrs.field(factory=dict)


def _read(option: str, path: str) -> tuple[str | None, list[Problem]]:
    """The text of ``path`` or a problem naming the option and the file."""
    try:
        if os.path.isdir(path):
            return None, [Problem(option=option, value=path, severity="error",
                                  message=f"{path!r} is a directory, not a file",
                                  hint="give the path of the file itself", code="E10001")]
        with open(path, "rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        return None, [Problem(
            option=option, value=path, severity="error",
            message=f"cannot read {path!r}: {exc.strerror or exc}; Reason: {_NO_FILE}",
            hint="create the file or fix the path", code="E10001")]
    if len(raw) > MAX_FILE_BYTES:
        return None, [Problem(option=option, value=path, severity="error",
                              message=f"{path!r} is larger than {MAX_FILE_BYTES} bytes",
                              hint="this does not look like a configuration file")]
    try:
        return raw.decode("utf-8"), []
    except UnicodeDecodeError as exc:
        return None, [Problem(option=option, value=path, severity="error",
                              message=f"{path!r} is not UTF-8 text: {exc}",
                              hint="save it as UTF-8 text")]


def read_debug_config(path: str, *, option: str = "op_debug_config"
                      ) -> tuple[DebugConfig | None, list[Problem]]:
    """Parse an op_debug_config .cfg file (options.md §7.2).

    ``key = value`` lines; ``#`` comments and blanks skipped; a line is classified by
    containing ``op_debug_list`` or ``op_debug_config``. Unlike FE, a malformed line or an
    undocumented item is an error (policy §12).
    """
    text, problems = _read(option, path)
    if text is None:
        return None, problems
    items: list[str] = []
    op_list: list[str] = []
    for number, raw_line in enumerate(text.splitlines(), 1):
        line = raw_line.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{path}:{number}"
        if "=" not in line:
            problems.append(Problem(option=option, value=line, severity="error",
                                    message=f'{where}: Line:"{line}" not contain "=".',
                                    hint="write `op_debug_config = oom,dump_cce`"))
            continue
        key, _, value = (part.strip() for part in line.partition("="))
        if not value:
            problems.append(Problem(option=option, value=line, severity="error",
                                    message=f'{where}: Line:"{line}" value is empty.',
                                    hint="give a comma list after ="))
            continue
        entries = [e.strip() for e in value.split(",") if e.strip()]
        if "op_debug_list" in key:
            op_list.extend(entries)
        elif "op_debug_config" in key:
            for item in entries:
                if item not in DEBUG_CONFIG_ITEMS:
                    problems.append(Problem(
                        option=option, value=item, severity="error",
                        message=f"{where}: unknown op_debug_config item {item!r}",
                        hint="items: " + ", ".join(DEBUG_CONFIG_ITEMS)))
                elif item not in items:
                    items.append(item)
        else:
            problems.append(Problem(option=option, value=line, severity="error",
                                    message=f"{where}: unknown key {key!r}",
                                    hint="keys: op_debug_config, op_debug_list"))
    if not items and not problems:
        problems.append(Problem(option=option, value=path, severity="error",
                                message=f"{path!r} has no op_debug_config line",
                                hint="add `op_debug_config = oom` (or other items)"))
    return DebugConfig(items=tuple(items), op_list=tuple(op_list)), problems


def read_precision_ini(path: str, allowed: Iterable[str], *, option: str = "op_precision_mode"
                       ) -> tuple[ImplIni | None, list[Problem]]:
    """Parse an op_precision_mode ini (options.md §9.3): ``[ByOpType]`` (default) and
    ``[ByNodeName]`` sections of ``key=value``; values must be in ``allowed`` (the product's
    ``implmode.ini_values``). Bad lines are errors naming the line (policy §12)."""
    text, problems = _read(option, path)
    if text is None:
        return None, problems
    allowed = tuple(allowed)
    maps: dict[str, dict[str, str]] = {"ByOpType": {}, "ByNodeName": {}}
    section = "ByOpType"
    for number, raw_line in enumerate(text.splitlines(), 1):
        line = raw_line.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{path}:{number}"
        if line.startswith("[") and line.endswith("]"):
            name = line[1:-1].strip()
            if name not in maps:
                problems.append(Problem(option=option, value=line, severity="error",
                                        message=f"{where}: unknown section {line!r}",
                                        hint="sections: [ByOpType], [ByNodeName]"))
                section = ""
            else:
                section = name
            continue
        if "=" not in line:
            problems.append(Problem(option=option, value=line, severity="error",
                                    message=f"{where}: line without '=' (FE would skip it "
                                            "silently)", hint="write OpType=mode"))
            continue
        key, _, value = (part.strip() for part in line.partition("="))
        if not key or not value:
            problems.append(Problem(option=option, value=line, severity="error",
                                    message=f"{where}: empty key or value",
                                    hint="write OpType=mode"))
            continue
        if value not in allowed:
            problems.append(Problem(option=option, value=value, severity="error",
                                    message=f"{where}: mode {value!r} for {key!r} is not "
                                            "supported on this product",
                                    hint="modes: " + ", ".join(allowed)))
            continue
        if section:
            maps[section][key] = value
    return ImplIni(by_op_type=maps["ByOpType"], by_node=maps["ByNodeName"]), problems


MixlistEdits = dict[str, dict[str, list[str]]]
"""A validated modify_mixlist file: ``{"black-list": {"to-add": [...], "to-remove": [...]},
"white-list": {...}}`` (only the lists and actions the file has)."""


def read_mixlist(path: str, *, option: str = "modify_mixlist"
                 ) -> tuple[MixlistEdits | None, list[Problem]]:
    """Parse a modify_mixlist JSON (options.md §5.5) into its validated edits (the only
    reader of this file: the checker, ``resolve()`` and ``load_modify_mixlist`` use it).
    :func:`mixlist_state` applies the edits to an op's built-in list."""
    text, problems = _read(option, path)
    if text is None:
        return None, problems
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return None, [Problem(option=option, value=path, severity="error",
                              message=f"{path!r} is not valid JSON: {exc}",
                              hint='write {"black-list": {"to-add": [...]}}', code="E10001")]
    if not isinstance(data, dict):
        return None, [Problem(option=option, value=path, severity="error",
                              message=f"{path!r} must hold a JSON object",
                              hint='write {"white-list": {"to-add": ["Conv2D"]}}')]
    edits: MixlistEdits = {}
    for key, value in data.items():
        if key not in ("black-list", "white-list"):
            problems.append(Problem(option=option, value=key, severity="error",
                                    message=f"{path!r}: unknown key {key!r}",
                                    hint="keys: black-list, white-list"))
            continue
        if not isinstance(value, dict):
            problems.append(Problem(option=option, value=key, severity="error",
                                    message=f"{path!r}: {key} must be an object",
                                    hint='write {"to-add": [...], "to-remove": [...]}'))
            continue
        for action, ops in value.items():
            where = f"{key}.{action}"
            if action not in ("to-add", "to-remove"):
                problems.append(Problem(option=option, value=action, severity="error",
                                        message=f"{path!r}: unknown key {where!r}",
                                        hint="keys: to-add, to-remove"))
                continue
            if not isinstance(ops, list) or not all(isinstance(o, str) and o for o in ops):
                problems.append(Problem(option=option, value=str(ops)[:200], severity="error",
                                        message=f"{path!r}: {where} must be a list of op types",
                                        hint='e.g. ["Conv2D", "MatMulV2"]'))
                continue
            edits.setdefault(key, {})[action] = list(ops)
    return edits, problems


def mixlist_names(edits: Mapping[str, Mapping[str, Sequence[str]]]) -> tuple[str, ...]:
    """Every op type a modify_mixlist file names, in file order, once."""
    names = [op for lists in edits.values() for ops in lists.values() for op in ops]
    return tuple(dict.fromkeys(names))


def mixlist_state(builtin: str, op_type: str,
                  edits: Mapping[str, Mapping[str, Sequence[str]]]) -> str:
    """The list (``white``/``black``/``grey``) ``op_type`` is on after ``edits``, from its
    built-in list ``builtin`` (options.md §5.5): removing it from the list it is on makes it
    grey (removing it from the other list changes nothing), adding it puts it on that list.
    The one implementation of these rules (precision decisions and ``resolve()`` use it)."""
    state = builtin
    black = edits.get("black-list", {}) or {}
    white = edits.get("white-list", {}) or {}
    if state == "black" and op_type in (black.get("to-remove") or ()):
        state = "grey"
    if state == "white" and op_type in (white.get("to-remove") or ()):
        state = "grey"
    if op_type in (black.get("to-add") or ()):
        state = "black"
    if op_type in (white.get("to-add") or ()):
        state = "white"
    return state
