"""``geplug.mstx``: user markers for the profiling timeline (the mstx API of options.md §3.3).

``mark(message)`` records an instant; ``range_start(message)`` returns an id that
``range_end(id)`` closes; ``with geplug.mstx.range(message):`` does both. Markers go to the
current system (:func:`geplug.current_system`) as :class:`~geplug.events.MarkerEvent` s and
appear in the timeline (process ``MsTx``) and in ``msprof_tx_{ts14}.csv``. Every call is a
cheap no-op when no system is initialised, profiling is off, or ``msproftx`` is not ``on``.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["mark", "range", "range_end", "range_start"]

_ids = itertools.count(1)
_open: dict[int, tuple[Any, str, float, str]] = {}
_lock = threading.Lock()


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
    opts = system.config.config.profiling_options
    if opts is None or opts.msproftx != "on":
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
        _open[range_id] = (system, str(message), _now_us(), domain)
    return range_id


def range_end(range_id: int) -> None:
    """Close the range ``range_id`` (an unknown or 0 id is ignored)."""
    with _lock:
        entry = _open.pop(range_id, None)
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
