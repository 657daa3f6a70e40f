"""The records a backend emits through ``geplug_dump`` and ``geplug_profile``.

Backends (the simulator) only emit these; the built-in writers in ``geplug.dump`` and
``geplug.profiling`` (and any user plugin) turn them into files. Times are microseconds on the
simulated device clock: since the Unix epoch for dump timestamps and user markers, and relative
to ``RunInfo.time_base_us`` for task, step and API events.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

import attrs
import numpy as np

if TYPE_CHECKING:
    from geplug.runtime.system import System

__all__ = [
    "ApiCall",
    "CommInfo",
    "DumpEvent",
    "GraphEvent",
    "MarkerEvent",
    "OpRecord",
    "ProfileEvent",
    "RunInfo",
    "StepEvent",
    "TaskEvent",
    "TensorRecord",
]


def _tensors(values: Iterable[TensorRecord]) -> tuple[TensorRecord, ...]:
    return tuple(values)


def _ops(values: Iterable[OpRecord]) -> tuple[OpRecord, ...]:
    return tuple(values)


def _shapes(values: Iterable[Iterable[int]]) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(int(d) for d in v) for v in values)


def _strs(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(values)


@attrs.frozen(kw_only=True)
class TensorRecord:
    """One tensor of an op as the device holds it (``array`` already in ``dtype``)."""

    name: str
    array: np.ndarray = attrs.field(eq=False, repr=False)
    dtype: str
    """numpy/ml_dtypes name: float32, float16, bfloat16, int64, bool, ..."""
    format: str = "ND"
    """Device format name of formats.md §2.4 (ND, NCHW, NC1HWC0, ...)."""

    @property
    def shape(self) -> tuple[int, ...]:
        """The tensor's shape."""
        return tuple(int(d) for d in self.array.shape)


@attrs.frozen(kw_only=True)
class OpRecord:
    """The compiled facts of one op, shared by its dump and profiling events."""

    name: str
    """The node name as in the graph."""
    op_type: str
    """The Ascend op type (MatMulV2, SoftmaxV2, ...)."""
    onnx_op: str = ""
    engine: Literal["AI_CORE", "AI_CPU"] = "AI_CORE"
    dtype: str = "float32"
    impl_mode: str = ""
    task_id: int = 0
    stream_id: int = 0
    block_dim: int = 1
    task_type: str = "AI_CORE"
    """Profiling task type: AI_CORE, AI_VECTOR_CORE, AI_CPU, MIX_AIC, COMMUNICATION, ..."""
    collective: bool = False
    """A collective-communication op (inputs dumped before, outputs after: options.md §4.4)."""
    data_inputs: tuple[str, ...] = attrs.field(converter=_strs, default=())
    """Names of the graph inputs (GE ``Data`` ops) that feed this op directly, as in the
    ``name`` of its input TensorRecords; ``dump_layer`` dumps those Data ops too
    (options.md §4.7). Empty when the backend does not say."""


@attrs.frozen(kw_only=True)
class RunInfo:
    """Which system, model and step an event belongs to."""

    system: System = attrs.field(eq=False, repr=False)
    model_name: str
    model_id: int
    step: int
    device_id: int = 0
    dynamic_shape: bool = False
    time_base_us: int = 0
    """Integer µs since the epoch that the times of this run's Task, Step and Api events are
    relative to (absolute = ``time_base_us + start_us``). A float of µs since the epoch only
    resolves 0.25 µs, so a backend keeps its device clock small and exact; 0 = absolute."""
    """The model has dynamic (symbolic) input shapes; with ``enable_exception_dump = 1`` such
    a network gets only the exception dump, no data or overflow dump (options.md §4.1)."""


@attrs.frozen(kw_only=True)
class DumpEvent:
    """An op's tensors on a step where dumping may apply.

    ``kind``: ``data`` (the op ran; writers decide from the config whether it is dumped and
    whether it overflowed), ``exception`` (an AI Core error at this op: the exception-dump
    writers write it, then the backend raises). ``phase``: ``all`` for an ordinary op;
    ``before`` (inputs only) and ``after`` (outputs only) for collective ops.
    """

    kind: Literal["data", "exception"]
    run: RunInfo
    op: OpRecord
    inputs: tuple[TensorRecord, ...] = attrs.field(converter=_tensors)
    outputs: tuple[TensorRecord, ...] = attrs.field(converter=_tensors)
    timestamp_us: int
    phase: Literal["all", "before", "after"] = "all"
    workspace: bytes = b""
    tiling: bytes = b""
    message: str = ""


@attrs.frozen(kw_only=True)
class CommInfo:
    """What the HCCL model says about one communication task on one rank (``geplug.hccl``).

    Times are µs, as msprof defines them: ``transit_us`` moving this rank's data;
    ``wait_us`` every other moment of the task (waiting for peers, step handshakes, slower
    flows), of which ``sync_us`` is the synchronisation before the first transfer (waiting
    for the last rank to arrive). Elapse = transit + wait.
    ``links``: (link type, bytes, µs) this rank sent per transport (HCCS, RDMA, PCIE, SIO);
    ``peers``: (src rank, dst rank, link type, bytes, µs) per destination.
    """

    hccl_name: str
    """HCCL's op name (``hcom_allReduce__<node>``): equal on every rank of the collective."""
    kind: str
    """allreduce, allgather, reducescatter, broadcast, reduce, alltoall, alltoallv, send,
    recv, barrier."""
    algorithm: str
    group: str = "hccl_world_group"
    rank: int
    rank_size: int
    nbytes: float
    wait_us: float = 0.0
    transit_us: float = 0.0
    sync_us: float = 0.0
    links: tuple[tuple[str, float, float], ...] = ()
    peers: tuple[tuple[int, int, str, float, float], ...] = ()


@attrs.frozen(kw_only=True)
class TaskEvent:
    """A device task: one op's execution on the simulated device timeline."""

    kind: Literal["task"] = "task"
    run: RunInfo
    op: OpRecord
    start_us: float
    duration_us: float
    wait_us: float = 0.0
    flops: float = 0.0
    bytes_moved: float = 0.0
    input_shapes: tuple[tuple[int, ...], ...] = attrs.field(converter=_shapes, default=())
    input_dtypes: tuple[str, ...] = attrs.field(converter=_strs, default=())
    input_formats: tuple[str, ...] = attrs.field(converter=_strs, default=())
    output_shapes: tuple[tuple[int, ...], ...] = attrs.field(converter=_shapes, default=())
    output_dtypes: tuple[str, ...] = attrs.field(converter=_strs, default=())
    output_formats: tuple[str, ...] = attrs.field(converter=_strs, default=())
    cube_fraction: float = 0.0
    """Share of the work on the cube unit (the rest is vector/scalar); feeds PMU models."""
    comm: CommInfo | None = None
    """A communication task's HCCL-model breakdown (``None`` for compute tasks)."""


@attrs.frozen(kw_only=True)
class GraphEvent:
    """A model was compiled: its ops in execution order (``run.step`` is -1).

    Emitted once per compiled model before its first step, so collectors can validate names
    (fp_point / bp_point) and describe ops.
    """

    kind: Literal["graph"] = "graph"
    run: RunInfo
    ops: tuple[OpRecord, ...] = attrs.field(converter=_ops)


@attrs.frozen(kw_only=True)
class StepEvent:
    """A step (iteration) boundary on the device timeline."""

    kind: Literal["step"] = "step"
    run: RunInfo
    phase: Literal["begin", "end"]
    time_us: float


@attrs.frozen(kw_only=True)
class ApiCall:
    """A runtime API call (host<->device copies, launches) on the host timeline."""

    kind: Literal["api"] = "api"
    run: RunInfo
    name: str
    level: str = "runtime"
    start_us: float
    duration_us: float


@attrs.frozen(kw_only=True)
class MarkerEvent:
    """A user marker from ``geplug.mstx`` (a mark, or a range when ``end_us`` is set)."""

    kind: Literal["marker"] = "marker"
    system: Any = attrs.field(eq=False, repr=False)
    message: str
    start_us: float
    end_us: float | None = None
    domain: str = "default"
    range_id: int = 0


ProfileEvent = TaskEvent | GraphEvent | StepEvent | ApiCall | MarkerEvent
"""Everything ``geplug_profile`` receives."""
