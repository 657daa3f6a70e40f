"""task_time / task_trace: device tasks streamed to raw files (options.md §3.3, formats.md §6.4).

Each task is one binary int64 record (``sig, step, start, duration, wait``, times in integer
nanoseconds, the start relative to the session's time base; :mod:`.records`) appended at once;
what does not change between executions of an op (name, type, shapes, work, ...) is written
once per distinct *signature* to a small op-info text stream, so memory grows with the graph,
not the run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import attrs

from geplug.profiling.rawlog import RawLog
from geplug.profiling.records import RecordLog

if TYPE_CHECKING:
    from geplug.events import TaskEvent

__all__ = ["COMM_TASK_TYPES", "OpSig", "TaskCollector", "TaskRow"]

COMM_TASK_TYPES = frozenset({"COMMUNICATION", "HCCL"})


def _strs(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value)


def _shapes(value: Any) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(int(d) for d in s) for s in value)


@attrs.frozen(kw_only=True)
class OpSig:
    """The static facts of one op execution signature."""

    sig: int
    model_id: int
    name: str
    op_type: str
    task_type: str
    task_id: int
    stream_id: int
    block_dim: int
    dtype: str
    engine: str
    comm: bool
    flops: float
    bytes_moved: float
    cube_fraction: float
    input_shapes: tuple[tuple[int, ...], ...] = attrs.field(converter=_shapes)
    input_dtypes: tuple[str, ...] = attrs.field(converter=_strs)
    input_formats: tuple[str, ...] = attrs.field(converter=_strs)
    output_shapes: tuple[tuple[int, ...], ...] = attrs.field(converter=_shapes)
    output_dtypes: tuple[str, ...] = attrs.field(converter=_strs)
    output_formats: tuple[str, ...] = attrs.field(converter=_strs)

    def to_json(self) -> str:
        """One JSON line."""
        return json.dumps(attrs.asdict(self)) + "\n"


@attrs.frozen
class TaskRow:
    """One task execution joined with its signature (the export pass yields these).

    Times are exact integer nanoseconds (``start_ns`` absolute since the epoch); format them
    with :func:`~geplug.profiling.layout.fmt_ns`. The ``*_us`` floats are for arithmetic only
    (an absolute float µs is only exact to 0.25 µs).
    """

    op: OpSig
    step: int
    start_ns: int
    duration_ns: int
    wait_ns: int

    @property
    def stop_ns(self) -> int:
        """End of the task (``start_ns + duration_ns``, exact)."""
        return self.start_ns + self.duration_ns

    @property
    def start_us(self) -> float:
        """Start in µs since the epoch (a float: do not print it, use ``fmt_ns(start_ns)``)."""
        return self.start_ns / 1000

    @property
    def duration_us(self) -> float:
        """Duration in µs."""
        return self.duration_ns / 1000

    @property
    def wait_us(self) -> float:
        """Wait time in µs."""
        return self.wait_ns / 1000


class TaskCollector:
    """Interns op signatures and appends one line per task."""

    def __init__(self, tasks: RecordLog, ops: RawLog) -> None:
        self.tasks = tasks
        self.ops = ops
        self._sigs: dict[Any, int] = {}
        self.comm_sigs: set[int] = set()

    def sig_of(self, ev: TaskEvent) -> tuple[int, bool]:
        """The signature number of ``ev`` (written to the op-info stream on first sight)."""
        op = ev.op
        key = (ev.run.model_id, op.name, op.task_id, ev.input_shapes, ev.output_shapes,
               ev.flops, ev.bytes_moved, ev.cube_fraction)
        sig = self._sigs.get(key)
        if sig is not None:
            return sig, sig in self.comm_sigs
        sig = len(self._sigs)
        self._sigs[key] = sig
        comm = op.collective or op.task_type in COMM_TASK_TYPES
        if comm:
            self.comm_sigs.add(sig)
        self.ops.write(OpSig(
            sig=sig, model_id=ev.run.model_id, name=op.name, op_type=op.op_type,
            task_type=op.task_type, task_id=op.task_id, stream_id=op.stream_id,
            block_dim=op.block_dim, dtype=op.dtype, engine=op.engine, comm=comm,
            flops=ev.flops, bytes_moved=ev.bytes_moved, cube_fraction=ev.cube_fraction,
            input_shapes=ev.input_shapes, input_dtypes=ev.input_dtypes,
            input_formats=ev.input_formats, output_shapes=ev.output_shapes,
            output_dtypes=ev.output_dtypes, output_formats=ev.output_formats,
        ).to_json())
        return sig, comm

    def add(self, sig: int, step: int, start_ns: int, duration_ns: int, wait_ns: int) -> None:
        """Append one task record (``start_ns`` relative to the session base)."""
        self.tasks.append((sig, step, start_ns, duration_ns, wait_ns))

    def load_sigs(self) -> dict[int, OpSig]:
        """Every signature written (bounded by the number of distinct ops)."""
        sigs: dict[int, OpSig] = {}
        for line in self.ops.lines():
            data = json.loads(line)
            sigs[data["sig"]] = OpSig(**data)
        return sigs

    def rows(self, sigs: dict[int, OpSig], base_ns: int = 0) -> Iterator[TaskRow]:
        """Stream every task still on disk, joined with its signature; ``base_ns`` (the
        session base, ns since the epoch) makes the start absolute again."""
        for sig, step, start, dur, wait in self.tasks.records():
            op = sigs.get(int(sig))
            if op is not None:
                yield TaskRow(op, int(step), base_ns + int(start), int(dur), int(wait))
