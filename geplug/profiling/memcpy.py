"""Host<->device copies as device tasks: ``MEMCPY_ASYNC`` on the copy stream.

A backend models each host<->device copy of a step (the input batch before it, the results
read back after it) as a host runtime call whose :class:`~geplug.events.ApiCall` carries
``copy = (direction, bytes)`` (or a 5-field entry of a whole-step record's ``calls``). The
device runs the copy as one ``MEMCPY_ASYNC`` task on the copy stream
(:data:`geplug.device.schedule.STREAMS` ``copy``) lasting the device model's copy cost
(:func:`geplug.device.copy_us`: ``compute.host_copy_overhead_us`` plus bytes over
``compute.host_link_gbps``) and ending with the call, which waits for it (a call longer than
the copy spent the rest issuing it; the ONNX simulator's calls last exactly the copy).

The export writes each copy as (msprof's DB schema, ``profile_data_file_references_db.md``):

- a ``TASK`` row (``taskType`` = the string ``MEMCPY_ASYNC``, ``streamId`` the copy stream,
  ``connectionId`` = ``globalTaskId``), which msprof-analyze's ``cluster_time_summary`` reads
  as memory time (``prof_exports/cluster_time_summary_export.py``);
- its ``MEMCPY_INFO`` row: ``globalTaskId`` (the link to ``TASK``), ``size`` (bytes) and
  ``memcpyOperation`` (an ``ENUM_MEMCPY_OPERATION`` id: 1 host to device, 2 device to host);
- one ``MEMCPY_ASYNC`` event on the timeline's ``Ascend Hardware`` track of the copy stream.

Copies take globalTaskIds after every compute and communication task of the session, so the
one-process export and the forked database worker number them alike.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from geplug.device.schedule import STREAMS
from geplug.profiling.msprof_db import MEMCPY_OPERATIONS

if TYPE_CHECKING:
    from geplug.profiling.msprof_db import MsprofDb
    from geplug.profiling.timeline import TimelineWriter

__all__ = ["BLOCK", "COPY_STREAM", "DIRECTIONS", "MEMCPY_TASK_TYPE", "CopyLog", "write_copies"]

MEMCPY_TASK_TYPE = "MEMCPY_ASYNC"
"""The task type msprof gives a memory-copy task (the value readers select on)."""
COPY_STREAM = STREAMS["copy"]
"""The stream every host<->device copy runs on (the device model's copy stream)."""
DIRECTIONS = {"H2D": "host to device", "D2H": "device to host"}
"""A copy's direction as backends name it -> its ``ENUM_MEMCPY_OPERATION`` name."""
_OPERATION = {k: MEMCPY_OPERATIONS[v] for k, v in DIRECTIONS.items()}
_NAME = {v: k for k, v in _OPERATION.items()}
_WIDTH = 5
_J = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class CopyLog:
    """The copies of a session, flattened as integers (step, memcpyOperation id, bytes,
    start ns since the epoch, duration ns): a few per step, so kept in memory."""

    def __init__(self) -> None:
        self._rows = array("q")

    def add(self, step: int, direction: str, nbytes: int, start_ns: int, dur_ns: int) -> None:
        """Record one copy (``direction``: a key of :data:`DIRECTIONS`)."""
        self._rows.extend((step, self.operation(direction), nbytes, start_ns, dur_ns))

    @staticmethod
    def operation(direction: str) -> int:
        """The ``ENUM_MEMCPY_OPERATION`` id of ``direction`` (a key of :data:`DIRECTIONS`)."""
        op = _OPERATION.get(direction)
        if op is None:
            raise ValueError(f"copy direction {direction!r}: expected one of "
                             f"{sorted(DIRECTIONS)} (host to device, device to host)")
        return op

    def extend_rows(self, rows: Any) -> None:
        """Record many copies at once: an int64 array whose last axis is (step, operation
        id from :meth:`operation`, bytes, start ns, duration ns), in record order."""
        data = np.ascontiguousarray(rows, dtype=np.int64)
        if data.shape[-1] != _WIDTH:
            raise ValueError(f"copy rows: last axis has {data.shape[-1]} values, expected "
                             f"{_WIDTH} (step, operation, bytes, start ns, duration ns)")
        self._rows.frombytes(data.tobytes())

    def __len__(self) -> int:
        return len(self._rows) // _WIDTH

    def buffer(self) -> memoryview:
        """The flattened rows (int64, :data:`_WIDTH` per copy), without a copy."""
        return memoryview(self._rows)

    def rows(self) -> Iterator[tuple[int, str, int, int, int]]:
        """(step, direction key, bytes, start ns, duration ns) per copy, in record order."""
        r = self._rows
        for i in range(0, len(r), _WIDTH):
            yield r[i], _NAME[r[i + 1]], r[i + 2], r[i + 3], r[i + 4]

    def span(self) -> tuple[int, int] | None:
        """(first start, last end) in ns, or None without copies."""
        if not self._rows:
            return None
        starts = self._rows[3::_WIDTH]
        ends = [s + d for s, d in zip(starts, self._rows[4::_WIDTH], strict=True)]
        return min(starts), max(ends)


BLOCK = 65536
"""Copies formatted and inserted per block (bounded memory for long runs)."""


def write_copies(log: CopyLog, *, first_gid: int, device_id: int, pid: int,
                 db: MsprofDb | None, timeline: TimelineWriter | None) -> None:
    """Every copy of ``log`` as TASK + MEMCPY_INFO rows (``db``) and timeline events
    (``timeline``), globalTaskIds from ``first_gid`` (either target may be None); vectorised
    a block of copies at a time."""
    n = len(log)
    if not n:
        return
    rows = np.frombuffer(log.buffer(), dtype=np.int64).reshape(n, _WIDTH)
    ttype = db.sid(MEMCPY_TASK_TYPE) if db is not None else 0
    event = ""
    if timeline is not None:
        pid_hw = timeline.thread("Ascend Hardware", COPY_STREAM, f"Stream {COPY_STREAM}")
        names = {op: _J(DIRECTIONS[key]) for key, op in _OPERATION.items()}
        event = (',\n{"ph":"X","name":"' + MEMCPY_TASK_TYPE + '","pid":' + str(pid_hw) +
                 ',"tid":' + str(COPY_STREAM) + ',"ts":"%d.%03d","dur":%d.%03d,"args":{'
                 '"Task Type":"' + MEMCPY_TASK_TYPE + '","Physic Stream Id":' +
                 str(COPY_STREAM) + ',"Task Id":%d,"connection_id":%d,"Device Id":' +
                 str(device_id) + ',"size(Byte)":%d,"Memcpy Direction":%s,"Step":%d}}')
    for lo in range(0, n, BLOCK):
        r = rows[lo:lo + BLOCK]
        step, op, size, start, dur = (r[:, i] for i in range(_WIDTH))
        gid = np.arange(first_gid + lo, first_gid + lo + len(r), dtype=np.int64)
        end = start + dur
        if db is not None:
            m = len(r)
            tasks = np.column_stack((start, end, np.full(m, device_id), gid, gid,
                                     np.full(m, pid), np.full(m, ttype), np.zeros(m, np.int64),
                                     np.full(m, COPY_STREAM), gid, np.full(m, 4294967295)))
            db.add_tasks(map(tuple, tasks.tolist()))
            db.add_memcpy(map(tuple, np.column_stack((gid, size, op)).tolist()))
        if timeline is not None:
            vals = np.column_stack((start // 1000, start % 1000, dur // 1000, dur % 1000, gid,
                                    gid, size)).tolist()
            text = "".join(event % (*v, names[o], s)
                           for v, o, s in zip(vals, op.tolist(), step.tolist(), strict=True))
            timeline.raw_block(text, len(r))
