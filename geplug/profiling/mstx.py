"""``geplug.mstx``: user markers for the profiling timeline (the mstx API of options.md §3.3).

``mark(message)`` records an instant; ``range_start(message)`` returns an id that
``range_end(id)`` closes; ``with geplug.mstx.range(message):`` does both. Markers go to the
current system (:func:`geplug.current_system`) as :class:`~geplug.events.MarkerEvent` s and
appear in the timeline (process ``MsTx``) and in ``msprof_tx_{ts14}.csv``. Every call is a
cheap no-op when no system is initialised, profiling is off, or ``msproftx`` is not ``on``.
Ranges still open when their system shuts down are dropped then (:func:`forget_system`), with
one :class:`MstxWarning` per system.
"""

from __future__ import annotations

import itertools
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from geplug.errors import GeplugWarning

__all__ = ["MstxWarning", "forget_system", "mark", "range", "range_end", "range_start"]

_ids = itertools.count(1)
_open: dict[int, dict[int, tuple[Any, str, float, str]]] = {}
"""system.id -> {range id -> (system, message, start, domain)}: the ranges not yet ended."""
_owner: dict[int, int] = {}
"""range id -> the system.id it was opened on."""
_lock = threading.Lock()


class MstxWarning(GeplugWarning):
    """mstx ranges were started but never ended before their system shut down."""


def _target() -> Any:
    """The current system when it collects msproftx markers, else ``None``."""
    from geplug.errors import NotInitializedError
    from geplug.runtime.api import current_system

    try:
        system = current_system()
    except NotInitializedError:
        return None
    if not system.profiling_enabled:
        return None
    eff = system.config.profiling  # the resolved typed values (geplug.config.resolve)
    if eff is None or not eff.msproftx:
        return None
    return system


def _now_us() -> float:
    return time.time_ns() / 1000.0


def mark(message: str, domain: str = "default") -> None:
    """Record an instant marker ``message`` now."""
    system = _target()
    if system is None:
        return
    from geplug.events import MarkerEvent

    system.emit_profile(MarkerEvent(system=system, message=str(message), start_us=_now_us(),
                                    domain=domain))


def range_start(message: str, domain: str = "default") -> int:
    """Open a range named ``message``; returns its id for :func:`range_end` (0 when off)."""
    system = _target()
    if system is None:
        return 0
    range_id = next(_ids)
    with _lock:
        _open.setdefault(system.id, {})[range_id] = (system, str(message), _now_us(), domain)
        _owner[range_id] = system.id
    return range_id


def range_end(range_id: int) -> None:
    """Close the range ``range_id`` (an unknown or 0 id is ignored)."""
    with _lock:
        owner = _owner.pop(range_id, None)
        ranges = _open.get(owner) if owner is not None else None
        entry = ranges.pop(range_id, None) if ranges is not None else None
        if ranges is not None and not ranges:
            del _open[owner]  # type: ignore[arg-type]
    if entry is None:
        return
    system, message, start, domain = entry
    if system.closed:
        return
    from geplug.events import MarkerEvent

    system.emit_profile(MarkerEvent(system=system, message=message, start_us=start,
                                    end_us=_now_us(), domain=domain, range_id=range_id))


@contextmanager
def range(message: str, domain: str = "default") -> Iterator[int]:
    """``with geplug.mstx.range("step"):`` - a range around the block; yields its id."""
    range_id = range_start(message, domain)
    try:
        yield range_id
    finally:
        range_end(range_id)


def forget_system(system: Any) -> int:
    """Drop the ranges of ``system`` that were never ended (called at its shutdown).

    Returns how many there were and warns once when there were any, so a forgotten
    ``range_end`` is visible instead of keeping the system alive.
    """
    with _lock:
        ranges = _open.pop(system.id, {})
        for range_id in ranges:
            _owner.pop(range_id, None)
    if ranges:
        names = ", ".join(sorted({repr(m) for _, m, _, _ in ranges.values()})[:5])
        warnings.warn(
            MstxWarning(
                f"system {system.id}: {len(ranges)} geplug.mstx range(s) were started but never "
                f"ended ({names}); they are not in the profile; call range_end() with the id "
                "range_start() returned, or use 'with geplug.mstx.range(...)'"
            ),
            stacklevel=2,
        )
    return len(ranges)
