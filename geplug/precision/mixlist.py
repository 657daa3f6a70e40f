"""Mixed-precision list membership: white, black or grey, after ``modify_mixlist`` edits.

options.md §5.5: an op's built-in policy is its ``precision_reduce`` flag (``true`` white =
may be lowered, ``false`` black = kept, absent grey = follows the previous op); the
``modify_mixlist`` JSON file moves op types between the lists (to-remove -> grey, to-add ->
black or white). The built-in flags are product data (``OpSupport.precision_reduce``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from geplug.errors import CompileError

__all__ = ["BLACK", "GREY", "WHITE", "list_state", "load_modify_mixlist", "normalize_overrides"]

WHITE, BLACK, GREY = "white", "black", "grey"


def _builtin_state(precision_reduce: bool | None) -> str:
    if precision_reduce is True:
        return WHITE
    if precision_reduce is False:
        return BLACK
    return GREY


def normalize_overrides(overrides: Any) -> dict[str, Any]:
    """Accept the two shapes an override can take and return ``{kind: ...}``.

    - final states: ``{"MatMulV2": "black", "Exp": "grey"}`` (``white``/``black``/``grey``,
      or ``True``/``False``/``None`` as ``precision_reduce`` spells them);
    - the modify_mixlist JSON object: ``{"black-list": {"to-add": [...], "to-remove": [...]},
      "white-list": {...}}``.
    """
    if not overrides:
        return {}
    data = dict(overrides)
    if "black-list" in data or "white-list" in data:
        return {"edits": data}
    states: dict[str, str] = {}
    for op_type, value in data.items():
        if isinstance(value, str) and value in (WHITE, BLACK, GREY):
            states[op_type] = value
        elif value is None or isinstance(value, bool):
            states[op_type] = _builtin_state(value)
        else:
            raise CompileError(
                f"mixlist override for op type {op_type!r} is {value!r}; expected 'white', "
                "'black' or 'grey'",
                node=op_type,
            )
    return {"states": states}


def list_state(op_type: str, precision_reduce: bool | None, overrides: Any = None) -> str:
    """The list (``white``/``black``/``grey``) ``op_type`` is on after the overrides.

    ``overrides`` is either shape :func:`normalize_overrides` accepts, or its result.
    """
    state = _builtin_state(precision_reduce)
    norm = overrides if _is_normalized(overrides) else normalize_overrides(overrides)
    if "states" in norm:
        return str(norm["states"].get(op_type, state))
    edits: Mapping[str, Any] = norm.get("edits", {})
    black = edits.get("black-list", {}) or {}
    white = edits.get("white-list", {}) or {}
    # options.md §5.5: to-remove from a list -> grey; to-add -> that list.
    if state == BLACK and op_type in (black.get("to-remove") or ()):
        state = GREY
    if state == WHITE and op_type in (white.get("to-remove") or ()):
        state = GREY
    if op_type in (black.get("to-add") or ()):
        state = BLACK
    if op_type in (white.get("to-add") or ()):
        state = WHITE
    return state


def _is_normalized(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and set(value) <= {"edits", "states"}


def load_modify_mixlist(path: str) -> dict[str, Any]:
    """Read a modify_mixlist JSON file (options.md §5.5) into the ``edits`` override shape."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise CompileError(
            f"modify_mixlist file {path!r} cannot be read ({exc.strerror}); give an existing "
            "JSON file", node="modify_mixlist",
        ) from None
    except json.JSONDecodeError as exc:
        raise CompileError(
            f"modify_mixlist file {path!r} is not valid JSON (line {exc.lineno}: {exc.msg}); "
            'expected {"black-list": {"to-add": [...], "to-remove": [...]}, "white-list": ...}',
            node="modify_mixlist",
        ) from None
    if not isinstance(data, dict):
        raise CompileError(
            f"modify_mixlist file {path!r} holds {type(data).__name__}, expected a JSON object "
            "with black-list / white-list", node="modify_mixlist",
        )
    return {"edits": data}
