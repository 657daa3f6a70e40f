"""Mixed-precision list membership: white, black or grey, after ``modify_mixlist`` edits.

options.md §5.5: an op's built-in policy is its ``precision_reduce`` flag (``true`` white =
may be lowered, ``false`` black = kept, absent grey = follows the previous op); the
``modify_mixlist`` JSON file moves op types between the lists (to-remove -> grey, to-add ->
black or white). The built-in flags are product data (``OpSupport.precision_reduce``).
"""

from __future__ import annotations

from collections.abc import Mapping
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
    from geplug.config.files import mixlist_state

    edits: Mapping[str, Any] = norm.get("edits", {})
    return mixlist_state(state, op_type, edits)  # options.md §5.5, one implementation


def _is_normalized(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and set(value) <= {"edits", "states"}


def load_modify_mixlist(path: str) -> dict[str, Any]:
    """Read a modify_mixlist JSON file (options.md §5.5) into the ``edits`` override shape,
    through the one reader of that file (:func:`geplug.config.files.read_mixlist`); its
    first error is a :class:`CompileError`."""
    from geplug.config.files import read_mixlist

    edits, problems = read_mixlist(path)
    errors = [p for p in problems if p.severity == "error"]
    if edits is None or errors:
        first = errors[0] if errors else None
        why = f"{first.message}; {first.hint}" if first is not None else "cannot be read"
        raise CompileError(f"modify_mixlist file {path!r}: {why}", node="modify_mixlist")
    return {"edits": edits}
