"""The msprof timeline: a Chrome-trace JSON **array** written event by event (formats.md §6.6).

Loads as-is in Perfetto and chrome://tracing: every event has ``ph``/``name``/``pid``/``tid``
and a ``ts`` (a string with three decimals, as msprof writes it); ``X`` events have a numeric
``dur``; each process gets ``process_name`` and ``process_sort_index`` metadata the first time
it is used. Process names are the ones readers key on: ``Ascend Hardware`` (device kernels,
tid = stream), ``Communication`` (HCCL tasks), ``CANN`` (API calls), ``MsTx`` (user markers),
and one counter process per sampled item.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any

from geplug.config.rank import WORLD_GROUP
from geplug.profiling.layout import fmt_ns, us_to_ns
from geplug.profiling.textfill import BlockFormatter, write_pieces

if TYPE_CHECKING:
    from geplug.profiling.task_collector import TaskRow

__all__ = ["PIDS", "TimelineWriter"]

PIDS = {"Ascend Hardware": 1, "Communication": 2, "CANN": 3, "MsTx": 4,
        "Overlap Analysis": 5, "Step Trace": 6}
"""Fixed process ids; counter processes are numbered from 100."""


class TimelineWriter:
    """Streams events into an open text handle as one JSON array."""

    def __init__(self, handle: IO[str], *, clock_mhz: float = 0.0) -> None:
        self.fh = handle
        self.clock_mhz = clock_mhz
        self.fh.write("[")
        self._first = True
        self._pids: dict[str, int] = {}
        self._tids: set[tuple[int, int]] = set()
        self._dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
        self.count = 0

    def _emit(self, event: dict[str, Any]) -> None:
        self.raw(self._dumps(event))

    def raw(self, encoded: str) -> None:
        """Append one already-encoded event (the export's fast path)."""
        self.fh.write(("\n" if self._first else ",\n") + encoded)
        self._first = False
        self.count += 1

    def raw_block(self, text: str, count: int) -> None:
        """Append ``count`` already-encoded events, each starting with ``,\\n``."""
        if not text:
            return
        if self._first:
            text = "\n" + text[2:]
            self._first = False
        self.fh.write(text)
        self.count += count

    def raw_pieces(self, pieces: Iterable[Any], count: int) -> None:
        """Append ``count`` already-encoded events given as UTF-8 pieces (bytes or buffers,
        :mod:`~geplug.profiling.textfill`), each event starting with ``,\\n``."""
        write_pieces(self.fh, self._lead(pieces))
        self.count += count

    def _lead(self, pieces: Iterable[Any]) -> Iterator[Any]:
        """``pieces``, the first event of the file without its leading comma."""
        for piece in pieces:
            if self._first and len(piece):
                piece = b"\n" + bytes(piece[2:])
                self._first = False
            yield piece

    def spans(self, process: str, tid: int, thread: str, name: str, starts: Any,
              ends: Any, block: int = 65536) -> None:
        """Complete events ``name`` from integer-ns ``starts`` / ``ends`` arrays (numpy),
        formatted a block at a time by numpy (:mod:`~geplug.profiling.textfill`)."""
        import numpy as np

        pid = self._pid(process)
        self._tid(pid, tid, thread)
        one = (',\n{"ph":"X","name":' + self._dumps(name).replace("%", "%%") + ',"pid":' +
               str(pid) + ',"tid":' + str(tid) + ',"ts":"%d.%03d","dur":%d.%03d}')
        fmt = BlockFormatter([one])
        for lo in range(0, len(starts), block):
            s = np.asarray(starts[lo:lo + block], dtype=np.int64)
            d = np.asarray(ends[lo:lo + block], dtype=np.int64) - s
            vals = np.column_stack((s // 1000, s % 1000, d // 1000, d % 1000))
            self.raw_pieces(fmt.pieces(np.zeros(len(s), dtype=np.int64), vals), len(s))

    def ensure_stream(self, pid: int, tid: int, comm: bool) -> None:
        """The process and thread metadata of a kernel track (one track per stream)."""
        name = "Communication" if comm else "Ascend Hardware"
        self._pid(name)
        self._tid(pid, tid, f"Group {WORLD_GROUP} Communication" if comm else f"Stream {tid}")

    def thread(self, process: str, tid: int, label: str) -> int:
        """The pid of ``process``, writing its and the thread's metadata on first use (for
        callers that append pre-formatted events with :meth:`raw_block`)."""
        pid = self._pid(process)
        self._tid(pid, tid, label)
        return pid

    def ensure_launch_thread(self, tid: int) -> None:
        """The CANN thread that holds the per-op launches (``Node`` level)."""
        self._tid(self._pid("CANN"), tid, "node")

    def span(self, process: str, tid: int, thread: str, name: str, start_ns: int,
             end_ns: int, args: dict[str, Any] | None = None) -> None:
        """A complete event from integer ns (``ts`` exact as a string, ``dur`` in µs)."""
        pid = self._pid(process)
        self._tid(pid, tid, thread)
        event: dict[str, Any] = {"ph": "X", "name": name, "pid": pid, "tid": tid,
                                 "ts": fmt_ns(start_ns), "dur": (end_ns - start_ns) / 1000}
        if args:
            event["args"] = args
        self._emit(event)

    def _pid(self, name: str) -> int:
        pid = self._pids.get(name)
        if pid is None:
            pid = PIDS.get(name, 100 + len([p for p in self._pids if p not in PIDS]))
            self._pids[name] = pid
            self._emit({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                        "args": {"name": name}})
            self._emit({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                        "args": {"sort_index": pid}})
        return pid

    def _tid(self, pid: int, tid: int, label: str) -> int:
        if (pid, tid) not in self._tids:
            self._tids.add((pid, tid))
            self._emit({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                        "args": {"name": label}})
        return tid

    def kernel(self, t: TaskRow, device_id: int, level: str) -> None:
        """A device kernel on ``Ascend Hardware``, tid = stream."""
        op = t.op
        pid = self._pid("Ascend Hardware")
        tid = self._tid(pid, op.stream_id, f"Stream {op.stream_id}")
        self._emit({
            "ph": "X", "name": op.name, "pid": pid, "tid": tid, "ts": fmt_ns(t.start_ns),
            "dur": t.duration_ns / 1000, "cat": "kernel",
            "args": {
                "Model Id": op.model_id, "Task Type": op.task_type if level == "l1" else "N/A",
                "Physic Stream Id": op.stream_id, "Task Id": op.task_id, "Batch Id": 0,
                "Subtask Id": 4294967295, "connection_id": op.task_id, "Device Id": device_id,
                "Aicore Time(ms)": round(t.duration_us / 1000, 6),
                "Total Cycle": int(t.duration_us * self.clock_mhz * op.block_dim)
                if level == "l1" else "N/A",
                "Op Type": op.op_type if level == "l1" else "N/A", "Step": t.step,
            },
        })

    def comm_task(self, t: TaskRow, device_id: int) -> None:
        """An HCCL task on ``Communication``."""
        op = t.op
        pid = self._pid("Communication")
        tid = self._tid(pid, 0, f"Group {WORLD_GROUP} Communication")
        self._emit({
            "ph": "X", "name": op.name, "pid": pid, "tid": tid, "ts": fmt_ns(t.start_ns),
            "dur": t.duration_ns / 1000, "cat": "hccl",
            "args": {"notify id": 0, "duration estimated(us)": t.duration_ns / 1000,
                     "stream id": op.stream_id, "task id": op.task_id, "task type": op.op_type,
                     "size(Byte)": int(op.bytes_moved), "data type": op.dtype,
                     "Device Id": device_id},
        })

    def api(self, level: str, name: str, start_ns: int, dur_ns: int) -> None:
        """A host API call on ``CANN`` (one thread per level), from integer ns."""
        pid = self._pid("CANN")
        tid = self._tid(pid, {"acl": 1, "runtime": 2, "ge": 3, "node": 4, "model": 5}.get(
            level, 9), level)
        self._emit({"ph": "X", "name": name, "pid": pid, "tid": tid, "ts": fmt_ns(start_ns),
                    "dur": dur_ns / 1000, "cat": level, "args": {"level": level}})

    def marker(self, m: dict[str, Any]) -> None:
        """A user mark (instant) or range (complete event) on ``MsTx``."""
        pid = self._pid("MsTx")
        tid = self._tid(pid, int(m["tid"]), f"Thread {m['tid']}")
        start = us_to_ns(m["start"])
        event: dict[str, Any] = {"name": m["message"], "pid": pid, "tid": tid,
                                 "ts": fmt_ns(start), "cat": "MsTx",
                                 "args": {"domain": m["domain"], "id": m["id"]}}
        if m["end"] is None:
            event.update(ph="i", s="t")
        else:
            event.update(ph="X", dur=(us_to_ns(m["end"]) - start) / 1000)
        self._emit(event)

    def counter(self, process: str, ts: float, values: dict[str, float]) -> None:
        """A counter sample (``ph: C``) on its own process."""
        pid = self._pid(process)
        self._emit({"ph": "C", "name": process, "pid": pid, "tid": 0, "ts": f"{ts:.3f}",
                    "args": {k: round(v, 3) for k, v in values.items()}})

    def close(self) -> None:
        """Close the array (the handle is closed by its owner)."""
        self.fh.write("\n]\n")
