"""Names in op_precision_mode and modify_mixlist files that no compiled model had.

The real stack ignores such lines silently (options.md §9.3, §5.5); a misspelt op type (the
ONNX ``Softmax`` instead of the Ascend ``SoftmaxV2``) then quietly changes nothing. At
shutdown the core (``System.shutdown``, whatever the backend) warns once, naming the file,
the names and the closest op types or nodes it compiled.
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Iterable
from typing import Any

from geplug.errors import GeplugWarning

__all__ = ["UnmatchedNameWarning", "warn_unmatched"]


class UnmatchedNameWarning(GeplugWarning):
    """A name in op_precision_mode or modify_mixlist matched no op of any compiled model."""


def _closest(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _unmatched(names: Iterable[str], known: set[str]) -> list[str]:
    return [f"{n!r}{_closest(n, known)}" for n in sorted(set(names) - known)]


def warn_unmatched(config: Any, product: Any, op_types: set[str], nodes: set[str]) -> None:
    """Warn about user-file names that matched none of ``op_types`` / ``nodes`` (compiled),
    from the resolved configuration ``config`` (its parsed files; nothing is re-read)."""
    if not (op_types or nodes):
        return
    options = config.config
    if options.op_precision_mode:  # resolve() parsed the ini into impl_by_op_type / _node
        for section, names, known in (("[ByOpType]", config.impl_by_op_type, op_types),
                                      ("[ByNodeName]", config.impl_by_node, nodes)):
            missing = _unmatched(names, known)
            if missing:
                warnings.warn(UnmatchedNameWarning(
                    f"op_precision_mode {options.op_precision_mode!r} {section} names "
                    f"that matched no op of the compiled models: {', '.join(missing)}; "
                    "op types are the Ascend ones (geplug compile shows them)"),
                    stacklevel=2)
    if options.modify_mixlist:  # resolve() parsed the file into mixlist_overrides
        missing = _unmatched(config.mixlist_overrides, op_types)
        if missing:
            warnings.warn(UnmatchedNameWarning(
                f"modify_mixlist {options.modify_mixlist!r} names op types that no compiled "
                f"model has: {', '.join(missing)}; use the Ascend op types (geplug compile "
                "shows them)"), stacklevel=2)
