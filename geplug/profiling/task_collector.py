"""task_time / task_trace: device tasks streamed to raw files (options.md §3.3, formats.md §6.4).

Each task is one binary record (``sig, step, start, duration, wait``, :mod:`.records`) appended
at once; what does not change between executions of an op (name, type, shapes, work, ...) is
written once per distinct *signature* to a small op-info text stream, so memory grows with the
graph, not the run.
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
    """One task execution joined with its signature (the export pass yields these)."""

    op: OpSig
    step: int
    start_us: float
    duration_us: float
    wait_us: float


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

    def add(self, sig: int, step: int, start: float, duration: float, wait: float) -> None:
        """Append one task record."""
        self.tasks.append((sig, step, start, duration, wait))

    def load_sigs(self) -> dict[int, OpSig]:
        """Every signature written (bounded by the number of distinct ops)."""
        sigs: dict[int, OpSig] = {}
        for line in self.ops.lines():
            data = json.loads(line)
            sigs[data["sig"]] = OpSig(**data)
        return sigs

    def rows(self, sigs: dict[int, OpSig]) -> Iterator[TaskRow]:
        """Stream every task still on disk, joined with its signature."""
        for sig, step, start, dur, wait in self.tasks.records():
            op = sigs.get(int(sig))
            if op is not None:
                yield TaskRow(op, int(step), start, dur, wait)
