"""Per-task database rows as templates: one template per distinct step, one short row per step.

A compiled model's task table is static per input shape and a run is many steps of it, so the
rows of the msprof database's per-task tables (TASK, COMPUTE_TASK_INFO, the launches in
CANN_API, TASK_PMU_INFO) of one step equal those of the next up to a time shift and a
globalTaskId shift. :class:`TemplateRows` cuts the task stream into *segments* (the rows of
one step; a segment never spans steps), expresses each relative to its first start and first
globalTaskId, and gives the database each distinct relative block once
(:meth:`~geplug.profiling.msprof_db.MsprofDb.add_template`) and per segment only (first id,
template, base time) (:meth:`~geplug.profiling.msprof_db.MsprofDb.add_segments`); SQLite
expands them. Nothing is approximated: a step whose timing differs in any column is a
template of its own, and templates are matched on their exact bytes.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from geplug.profiling.msprof_db import MsprofDb

__all__ = ["CACHE_BYTES", "TemplateRows"]

CACHE_BYTES = 16 << 20
"""Bytes of template keys remembered for matching; beyond, the memory is cleared and later
steps start new templates (still exact; bounds memory when every step differs)."""
_SEGMENTS_PER_WRITE = 4096


class TemplateRows:
    """Collects the per-task rows of the export pass for :class:`MsprofDb` (module doc)."""

    def __init__(self, db: MsprofDb) -> None:
        self.db = db
        self._ids: dict[bytes, int] = {}
        self._key_bytes = 0
        self._next = 0
        self._pending: Any = None
        """Rows of the last step seen (it may continue in the next block)."""
        self._segments: list[tuple[int, int, int]] = []
        self.templates = 0
        """Templates written (for tests and the benchmark)."""

    def add(self, gid: Any, sig: Any, start: Any, end: Any, launch_start: Any,
            launch_end: Any, pmu_key: Any, step: Any) -> None:
        """One block of task rows (int64 arrays of equal length, globalTaskId ascending and
        contiguous)."""
        block = np.column_stack((gid, sig, start, end, launch_start, launch_end, pmu_key, step))
        if self._pending is not None:
            block = np.concatenate((self._pending, block))
        steps = block[:, 7]
        cuts = np.flatnonzero(steps[1:] != steps[:-1]) + 1
        tail = int(cuts[-1]) if len(cuts) else 0
        self._pending = block[tail:]
        if not tail:
            return
        done = block[:tail]
        bounds = np.array([0, *cuts.tolist()], dtype=np.int64)
        first = np.repeat(bounds[:-1], np.diff(bounds))  # each row's segment's first row
        rel = done[:, :7].copy()  # every complete segment made relative at once
        rel[:, 0] -= done[first, 0]
        rel[:, 2:6] -= done[first, 2][:, None]
        gid0s, bases = done[bounds[:-1], 0].tolist(), done[bounds[:-1], 2].tolist()
        for j, (lo, hi) in enumerate(itertools.pairwise(bounds.tolist())):
            self._add_segment(rel[lo:hi], gid0s[j], bases[j])

    def _segment(self, rows: Any) -> None:
        gid0 = int(rows[0, 0])
        base = int(rows[0, 2])
        rel = rows[:, :7].copy()
        rel[:, 0] -= gid0
        rel[:, 2:6] -= base
        self._add_segment(rel, gid0, base)

    def _add_segment(self, rel: Any, gid0: int, base: int) -> None:
        """One segment's rows relative to its first id and start: its template (reused when
        equal bytes were seen) and its (first id, template, base) row."""
        key = rel.tobytes()
        tid = self._ids.get(key)
        if tid is None:
            tid = self._next
            self._next += 1
            self.templates += 1
            self.db.add_template(tid, map(tuple, rel.tolist()))
            if self._key_bytes + len(key) > CACHE_BYTES:
                self._ids.clear()
                self._key_bytes = 0
            self._ids[key] = tid
            self._key_bytes += len(key)
        self._segments.append((gid0, tid, base))
        if len(self._segments) >= _SEGMENTS_PER_WRITE:
            self.db.add_segments(self._segments)
            self._segments = []

    def finish(self) -> None:
        """Write the last step and every pending segment."""
        if self._pending is not None and len(self._pending):
            self._segment(self._pending)
        self._pending = None
        self.db.add_segments(self._segments)
        self._segments = []
