"""Streams and the step's makespan: a list schedule of the tasks over their streams.

Compute tasks (AI Core, AI Vector, mixed) share the compute stream, AI CPU tasks have their
own, host<->device copies theirs; a task starts when its stream is free and every task
producing its inputs has finished, so AI CPU work and copies overlap compute where the
dependencies allow (GE's multi-stream assignment). Times are integer nanoseconds.
The schedule is computed over arrays (:func:`schedule_arrays`), not task by task.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs
import numpy as np

__all__ = ["STREAMS", "Schedule", "ScheduledTask", "schedule", "schedule_arrays"]

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
    topological order (a dependency on a later or unknown name is ignored)."""
    index: dict[str, int] = {}
    dep_item: list[int] = []
    dep_on: list[int] = []
    for i, (name, _, _, _, deps) in enumerate(items):
        for d in deps:
            j = index.get(d)
            if j is not None:
                dep_item.append(i)
                dep_on.append(j)
        index[name] = i
    streams = np.fromiter((STREAMS[it[2]] for it in items), np.int64, len(items))
    durations = np.fromiter((it[3] for it in items), np.float64, len(items))
    start, dur = schedule_arrays(streams, durations, np.asarray(dep_item, np.int64),
                                 np.asarray(dep_on, np.int64))
    return Schedule(
        tasks=tuple(ScheduledTask(name=it[0], kind=it[1], stream_id=sid, start_ns=st,
                                  duration_ns=du)
                    for it, sid, st, du in zip(items, streams.tolist(), start.tolist(),
                                               dur.tolist(), strict=True)),
        makespan_ns=int((start + dur).max()) if len(items) else 0)


_MAX_SWEEPS = 8
"""Array sweeps before :func:`schedule_arrays` finishes with one exact pass in order (a
graph whose critical path switches streams more often than this)."""


def schedule_arrays(
    streams: np.ndarray, durations_us: np.ndarray, dep_item: np.ndarray, dep_on: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Start and duration (integer ns) of every item of a list schedule, over arrays.

    Item ``i`` runs on stream ``streams[i]`` for ``durations_us[i]`` µs (rounded to ns);
    ``dep_item[k]`` waits for ``dep_on[k]`` (``dep_on[k] < dep_item[k]``, the items being
    in a topological order). An item starts when the previous item of its stream and every
    item it depends on have ended: ``end[i] = dur[i] + max(end[prev on stream], end[deps])``.

    Along one stream this recurrence has the closed form ``end = D + max(0,
    cummax(ready - (D - dur)))`` with ``D`` the stream's cumulative durations and ``ready``
    the latest end among the item's dependencies, so one sweep is a handful of numpy
    operations per stream. A sweep takes ``ready`` from the previous sweep's ends; starting
    from zero the ends only grow and reach the schedule once every dependency chain is
    covered, i.e. after as many sweeps as the critical path switches streams (host copies
    -> compute -> copies back: 3, plus one to confirm). A graph switching more often gets
    one exact pass in order after :data:`_MAX_SWEEPS` sweeps.
    """
    n = len(streams)
    dur = np.maximum(np.rint(np.asarray(durations_us, np.float64) * 1000.0), 0).astype(np.int64)
    if n == 0:
        return np.zeros(0, np.int64), dur
    # the streams in ascending order (not np.unique: its first call imports numpy.ma,
    # ~17 ms of a process's first compile)
    lanes = [(idx, np.cumsum(dur[idx])) for idx in (
        np.flatnonzero(streams == s) for s in sorted(set(np.asarray(streams).tolist())))]
    end = np.zeros(n, np.int64)
    for _ in range(_MAX_SWEEPS):
        ready = np.zeros(n, np.int64)
        if len(dep_item):
            np.maximum.at(ready, dep_item, end[dep_on])
        new = np.empty(n, np.int64)
        for idx, cum in lanes:
            prev = cum - dur[idx]
            new[idx] = cum + np.maximum(np.maximum.accumulate(ready[idx] - prev), 0)
        if np.array_equal(new, end):
            return end - dur, dur
        end = new
    return _exact(streams, dur, dep_item, dep_on), dur


def _exact(streams: np.ndarray, dur: np.ndarray, dep_item: np.ndarray, dep_on: np.ndarray
           ) -> np.ndarray:
    """Starts of the list schedule in one pass in order (the reference the sweeps equal)."""
    deps: list[list[int]] = [[] for _ in range(len(streams))]
    for i, j in zip(dep_item.tolist(), dep_on.tolist(), strict=True):
        deps[i].append(j)
    free: dict[int, int] = {}
    end: list[int] = []
    starts: list[int] = []
    for sid, d, ds in zip(streams.tolist(), dur.tolist(), deps, strict=True):
        st = max(free.get(sid, 0), max((end[j] for j in ds), default=0))
        free[sid] = st + d
        end.append(st + d)
        starts.append(st)
    return np.asarray(starts, np.int64)
