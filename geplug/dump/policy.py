"""Which steps and ops are dumped: the dump_step grammar and the backend's per-step question.

The simulator calls :func:`wants_tensors` before each step; the config checker may reuse
:func:`parse_dump_step` (grammar of options.md §4.3, GE's rules as policy §12 says).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from geplug.errors import GeplugError

if TYPE_CHECKING:
    from geplug.config.resolved import ResolvedConfig

__all__ = [
    "MAX_DUMP_STEP_ITEMS",
    "DumpStepError",
    "dump_layer_names",
    "parse_dump_step",
    "step_selected",
    "wants_data_dump",
    "wants_tensors",
]

MAX_DUMP_STEP_ITEMS = 100
"""At most 100 ``|``-separated items (options.md §4.3)."""
_INT32_MAX = 2**31 - 1
_EXAMPLE = "'0|5|10|50-100'"


class DumpStepError(GeplugError, ValueError):
    """A dump_step string breaks the grammar of options.md §4.3; ``value`` is the string.

    ``reason`` is GE's E10001 reason text, so a checker can quote the real stack.
    """

    def __init__(self, value: str, reason: str) -> None:
        self.value = value
        self.reason = reason
        super().__init__(f"dump_step {value!r} is invalid: {reason}")


@functools.lru_cache(maxsize=256)
def parse_dump_step(text: str) -> tuple[range, ...]:
    """Parse a dump_step string (``0|3-5|10``) into step ranges (``range(3, 6)`` for ``3-5``).

    Grammar (options.md §4.3, GE's rules): items joined by ``|``, each ``N`` or ``N-M`` with
    decimal digits only, N < M strictly, every number a non-negative int32, at most 100 items.
    An empty string means every step and parses to ``()``. Raises :class:`DumpStepError`
    carrying GE's reason text.
    """
    if text == "":
        return ()
    items = text.split("|")
    if len(items) > MAX_DUMP_STEP_ITEMS:
        raise DumpStepError(text, "The number of collection ranges cannot exceed 100.")
    ranges: list[range] = []
    for item in items:
        parts = item.split("-")
        if len(parts) > 2 or not all(p.isascii() and p.isdigit() for p in parts):
            raise DumpStepError(text, f"Incorrect parameter format. Valid format: {_EXAMPLE}.")
        numbers = [int(p) for p in parts]
        if any(n > _INT32_MAX for n in numbers):
            raise DumpStepError(
                text, f"step {item!r} does not fit a non-negative int32. Valid format: {_EXAMPLE}."
            )
        if len(numbers) == 2:
            first, second = numbers
            if first >= second:
                raise DumpStepError(
                    text,
                    "In range steps, the first step must be less than the second step "
                    f"(got {item!r}). Valid format: '0|5|10-20'.",
                )
            ranges.append(range(first, second + 1))
        else:
            ranges.append(range(numbers[0], numbers[0] + 1))
    return tuple(ranges)


def step_selected(dump_step: str | None, step: int) -> bool:
    """Whether ``step`` is selected by ``dump_step`` (``None``/empty = every step)."""
    if not dump_step:
        return True
    return any(step in r for r in parse_dump_step(dump_step))


def wants_data_dump(resolved: ResolvedConfig, step: int) -> bool:
    """Whether ``enable_dump`` writes data dumps on ``step`` (options.md §4.1, §4.3)."""
    cfg = resolved.config
    return bool(cfg.enable_dump) and step_selected(cfg.dump_step, step)


def wants_tensors(resolved: ResolvedConfig, step: int) -> bool:
    """Whether the backend must produce every op's tensors for ``step``.

    True when ``enable_dump`` is on and ``dump_step`` selects the step (every step when it is
    unset), or when ``enable_dump_debug`` is on (overflow detection looks at every step,
    options.md §4.5). Exception dumps need no tensors up front: the backend emits the faulting
    op's event when it raises.
    """
    if resolved.config.enable_dump_debug:
        return True
    return wants_data_dump(resolved, step)


def dump_layer_names(dump_layer: str | None) -> frozenset[str] | None:
    """The op names of ``dump_layer`` (space separated, options.md §4.7); ``None`` = all ops."""
    if not dump_layer or not dump_layer.strip():
        return None
    return frozenset(dump_layer.split())
