"""The "Overlap Analysis" timeline process: Computing / Communication / Not Overlapped / Free.

msprof writes one process ``Overlap Analysis`` with four threads whose events cluster readers
sum (msprof-analyze's ``cluster_step_trace_time.csv`` from the text timeline; formats.md
§6.6). The intervals follow the same arithmetic as msprof-analyze's database path: compute
task intervals merged where they touch or overlap (Computing), communication task intervals
merged (Communication), communication not covered by computing (Communication(Not
Overlapped)), and every gap between consecutive busy intervals of the whole run (Free) - so
the text timeline and ``msprof_{ts14}.db`` give the same per-rank totals.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from geplug.profiling.timeline import TimelineWriter

__all__ = ["THREADS", "merge", "overlap_totals", "subtract", "write_track"]

THREADS = ("Computing", "Communication", "Communication(Not Overlapped)", "Free")
PROCESS = "Overlap Analysis"


def merge(intervals: np.ndarray) -> np.ndarray:
    """(n, 2) int64 intervals -> sorted, merged where they touch or overlap."""
    if not len(intervals):
        return intervals.reshape(0, 2)
    starts, ends = intervals[:, 0], intervals[:, 1]
    if bool(np.all(starts[1:] > ends[:-1])):
        return intervals  # already sorted and disjoint (a stream's tasks): no copy
    iv = intervals if bool(np.all(starts[1:] >= starts[:-1])) else \
        intervals[np.argsort(starts, kind="stable")]
    ends = np.maximum.accumulate(iv[:, 1])
    new = np.ones(len(iv), dtype=bool)
    new[1:] = iv[1:, 0] > ends[:-1]
    starts = iv[new, 0]
    idx = np.flatnonzero(new)
    last = np.append(idx[1:] - 1, len(iv) - 1)
    return np.stack([starts, ends[last]], axis=1)


def subtract(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Merged intervals ``a`` minus merged intervals ``b``."""
    out: list[tuple[int, int]] = []
    j = 0
    nb = len(b)
    for s, e in a.tolist():
        cur = s
        while j < nb and b[j, 1] <= cur:
            j += 1
        k = j
        while k < nb and b[k, 0] < e:
            bs, be = int(b[k, 0]), int(b[k, 1])
            if bs > cur:
                out.append((cur, bs))
            cur = max(cur, be)
            if cur >= e:
                break
            k += 1
        if cur < e:
            out.append((cur, e))
    return np.array(out, dtype=np.int64).reshape(-1, 2)


def _gaps(busy: np.ndarray) -> np.ndarray:
    if len(busy) < 2:
        return np.zeros((0, 2), dtype=np.int64)
    keep = busy[1:, 0] > busy[:-1, 1]
    return np.stack([busy[:-1, 1][keep], busy[1:, 0][keep]], axis=1)


def intervals(compute: Sequence[int], comm: Sequence[tuple[int, int]]) -> dict[str, np.ndarray]:
    """The four interval sets (ns) from flattened compute intervals and comm intervals
    (without copying the compute intervals when the run has no communication: a 1M-task
    run's are 16 MB)."""
    comp = merge(np.asarray(compute, dtype=np.int64).reshape(-1, 2))
    com = merge(np.asarray(comm, dtype=np.int64).reshape(-1, 2))
    busy = comp if not len(com) else com if not len(comp) else merge(
        np.concatenate([comp, com]))
    return {THREADS[0]: comp, THREADS[1]: com, THREADS[2]: subtract(com, comp),
            THREADS[3]: _gaps(busy)}


def overlap_totals(compute: Sequence[int],
                   comm: Sequence[tuple[int, int]]) -> dict[str, int]:
    """Total ns per thread name (what readers sum from the track)."""
    return {k: int((v[:, 1] - v[:, 0]).sum()) for k, v in intervals(compute, comm).items()}


def write_track(timeline: TimelineWriter, compute: Sequence[int],
                comm: Sequence[tuple[int, int]]) -> None:
    """Write the ``Overlap Analysis`` process (nothing when no task ran)."""
    sets = intervals(compute, comm)
    if not any(len(v) for v in sets.values()):
        return
    for tid, name in enumerate(THREADS):
        iv = sets[name]
        if len(iv):
            timeline.spans(PROCESS, tid, name, name, iv[:, 0], iv[:, 1])


def _covered(iv: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Covered length of sorted disjoint intervals ``iv`` on (-inf, x] for each x."""
    if not len(iv):
        return np.zeros(len(x), dtype=np.int64)
    starts, ends = iv[:, 0], iv[:, 1]
    cum = np.concatenate(([0], np.cumsum(ends - starts)))
    k = np.searchsorted(starts, x, side="right") - 1
    kk = np.maximum(k, 0)
    part = np.minimum(x, ends[kk]) - starts[kk]
    return np.where(k >= 0, cum[kk] + part, 0)


def per_step(compute: Sequence[int], comm: Sequence[tuple[int, int]],
             steps: Sequence[int]) -> list[tuple[int, dict[str, int]]]:
    """Per step ``(iteration id, {thread: ns})`` for the flattened (id, begin, end) steps:
    each interval set clipped to the step's span (what ``StepTraceTime`` holds per step)."""
    sets = intervals(compute, comm)
    st = np.asarray(steps, dtype=np.int64).reshape(-1, 3)
    if not len(st):
        return []
    out: list[tuple[int, dict[str, int]]] = []
    covered = {k: _covered(v, st[:, 2]) - _covered(v, st[:, 1]) for k, v in sets.items()}
    for i, step in enumerate(st[:, 0].tolist()):
        out.append((int(step), {k: int(v[i]) for k, v in covered.items()}))
    return out
