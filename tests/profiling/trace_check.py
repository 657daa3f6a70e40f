"""An independent check of a Chrome-trace timeline as Perfetto's trace processor imports it.

The PyPI ``perfetto`` wheel does not ship the trace processor binary (it downloads it on first
use), so the tests cannot run it offline. This module re-implements the two rules that matter
for geplug's timelines, from Perfetto's JSON importer:

- times: a string ``ts`` / ``dur`` is parsed exactly (integer µs and up to three decimals give
  integer ns); a JSON number is ``llround(value * 1000)``;
- complete (``X``) events on one thread must nest: a slice that starts inside an open slice
  and ends after it is dropped (``slice_drop_overlapping_complete_event``); a slice starting
  exactly where the open one ends is its sibling;
- a flow (``s`` / ``f`` with equal ``cat``, ``name`` and ``id``) binds its start to the slice
  open at its ``ts`` on its thread and (``bp: "e"``) its end to the slice enclosing its ``ts``;
  a flow end with no slice there, or a start that never ends, is not drawn (``unbound_flows``);
- duration events: ``B`` opens a slice on its thread and ``E`` closes the innermost open one;
  an ``E`` with no open ``B`` is dropped (``misplaced_end_event``), and a ``B`` never closed
  stays unterminated (``unterminated``: Perfetto shows it without an end);
- events are sorted by ``ts``; for equal ``ts`` the file order decides (stricter than Perfetto,
  which may also sort equal starts by duration).
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from typing import Any

__all__ = ["Slice", "TraceCheck", "check", "to_ns"]


def to_ns(value: Any) -> int:
    """A JSON ``ts`` / ``dur`` in µs as Perfetto reads it, in integer ns."""
    if isinstance(value, str):
        return int(Decimal(value) * 1000)
    if isinstance(value, bool):
        raise TypeError(value)
    if isinstance(value, int):
        return value * 1000
    return round(float(value) * 1000)


class Slice:
    """One kept slice."""

    __slots__ = ("args", "depth", "end", "name", "start", "track")

    def __init__(self, track: tuple[Any, Any], name: str, start: int, end: int, depth: int,
                 args: dict[str, Any]) -> None:
        self.track, self.name, self.start, self.end = track, name, start, end
        self.depth, self.args = depth, args


class TraceCheck:
    """The result of :func:`check`."""

    def __init__(self) -> None:
        self.slices: list[Slice] = []
        self.dropped: list[dict[str, Any]] = []
        self.flows: list[tuple[Slice, Slice]] = []
        self.unbound_flows: list[Any] = []
        self.unterminated: list[Slice] = []
        """``B`` slices without their ``E``."""
        self.process_names: dict[Any, str] = {}
        self.thread_names: dict[tuple[Any, Any], str] = {}

    def tracks_of(self, process: str) -> dict[Any, list[Slice]]:
        """tid -> slices of the process named ``process``."""
        pids = {p for p, n in self.process_names.items() if n == process}
        out: dict[Any, list[Slice]] = defaultdict(list)
        for s in self.slices:
            if s.track[0] in pids:
                out[s.track[1]].append(s)
        return out


def check(events: list[dict[str, Any]]) -> TraceCheck:
    """Import ``events`` like Perfetto (see the module docstring)."""
    result = TraceCheck()
    timed = []
    for order, ev in enumerate(events):
        ph = ev.get("ph")
        if ph == "M":
            if ev.get("name") == "process_name":
                result.process_names[ev["pid"]] = ev["args"]["name"]
            elif ev.get("name") == "thread_name":
                result.thread_names[(ev["pid"], ev["tid"])] = ev["args"]["name"]
            continue
        timed.append((to_ns(ev["ts"]), order, ev))
    timed.sort(key=lambda item: (item[0], item[1]))  # stable by ts, file order for ties
    stacks: dict[tuple[Any, Any], list[Slice]] = defaultdict(list)
    starts: dict[tuple[Any, Any, Any], Slice] = {}

    open_b: set[int] = set()
    """ids of the slices opened by ``B`` and not closed yet (their end is unknown)."""

    def close(track: tuple[Any, Any], ts: int) -> list[Slice]:
        stack = stacks[track]
        while stack and id(stack[-1]) not in open_b and stack[-1].end <= ts:
            stack.pop()
        return stack

    for ts, _, ev in timed:
        track = (ev.get("pid"), ev.get("tid"))
        ph = ev.get("ph")
        if ph == "B":
            stack = close(track, ts)
            s = Slice(track, ev.get("name", ""), ts, ts, len(stack), ev.get("args", {}))
            open_b.add(id(s))
            stack.append(s)
            result.slices.append(s)
        elif ph == "E":
            stack = close(track, ts)
            if not stack or id(stack[-1]) not in open_b:
                result.dropped.append(ev)  # misplaced_end_event
                continue
            top = stack.pop()
            open_b.discard(id(top))
            top.end = ts
        elif ph == "X":
            end = ts + to_ns(ev.get("dur", 0))
            stack = close(track, ts)
            if stack and id(stack[-1]) not in open_b and end > stack[-1].end:
                result.dropped.append(ev)
                continue
            s = Slice(track, ev.get("name", ""), ts, end, len(stack), ev.get("args", {}))
            stack.append(s)
            result.slices.append(s)
        elif ph in ("s", "f"):
            key = (ev.get("cat"), ev.get("name"), ev.get("id"))
            stack = close(track, ts) if ph == "s" else stacks[track]
            if ph == "f":
                enclosing = [s for s in stack if s.start <= ts <= s.end]
                if ev.get("bp") != "e":
                    enclosing = [s for s in enclosing if s.start == ts] or enclosing
                bound = enclosing[-1] if enclosing else None
                begin = starts.pop(key, None)
                if bound is None or begin is None:
                    result.unbound_flows.append(ev)
                else:
                    result.flows.append((begin, bound))
            else:
                if stack and stack[-1].start <= ts <= stack[-1].end:
                    starts[key] = stack[-1]
                else:
                    result.unbound_flows.append(ev)
    result.unbound_flows.extend(starts.values())
    result.unterminated = [s for s in result.slices if id(s) in open_b]
    return result
