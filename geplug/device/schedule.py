"""Streams and the step's makespan: a list schedule of the tasks over their streams.

Compute tasks (AI Core, AI Vector, mixed) share the compute stream, AI CPU tasks have their
own, host<->device copies theirs; a task starts when its stream is free and every task
producing its inputs has finished, so AI CPU work and copies overlap compute where the
dependencies allow (GE's multi-stream assignment). Times are integer nanoseconds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

__all__ = ["STREAMS", "Schedule", "ScheduledTask", "schedule"]

STREAMS: Mapping[str, int] = {"compute": 0, "aicpu": 1, "copy": 2, "communication": 3}
"""Stream kind -> stream id (the profiling timeline shows one row per stream)."""


@attrs.frozen(kw_only=True)
class ScheduledTask:
    """A task on the timeline (what profiling consumes)."""

    name: str
    kind: str
    """``task`` (a compute or AI CPU task), ``h2d`` or ``d2h`` (a copy)."""
    stream_id: int
    start_ns: int
    duration_ns: int

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.duration_ns


@attrs.frozen(kw_only=True)
class Schedule:
    """Every task's stream, start and duration; the makespan of one step."""

    tasks: tuple[ScheduledTask, ...]
    makespan_ns: int

    @property
    def makespan_us(self) -> float:
        return self.makespan_ns / 1000.0

    def by_name(self) -> dict[str, ScheduledTask]:
        """Name -> scheduled task."""
        return {t.name: t for t in self.tasks}


def schedule(
    items: Sequence[tuple[str, str, str, float, Sequence[str]]],
) -> Schedule:
    """Schedule ``items`` = (name, kind, stream kind, duration µs, names it depends on), in a
    topological order."""
    free: dict[int, int] = {}
    end: dict[str, int] = {}
    out: list[ScheduledTask] = []
    for name, kind, stream, duration_us, deps in items:
        sid = STREAMS[stream]
        ready = max((end[d] for d in deps if d in end), default=0)
        start = max(free.get(sid, 0), ready)
        dur = max(round(duration_us * 1000.0), 0)
        free[sid] = start + dur
        end[name] = start + dur
        out.append(ScheduledTask(name=name, kind=kind, stream_id=sid, start_ns=start,
                                 duration_ns=dur))
    return Schedule(tasks=tuple(out), makespan_ns=max(end.values(), default=0))
