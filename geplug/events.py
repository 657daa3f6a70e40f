"""The records a backend emits through ``geplug_dump`` and ``geplug_profile``.

Backends (the simulator) only emit these; the built-in writers in ``geplug.dump`` and
``geplug.profiling`` (and any user plugin) turn them into files. Times are microseconds on the
simulated device clock: since the Unix epoch for dump timestamps and user markers, and relative
to ``RunInfo.time_base_us`` for task, step and API events.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
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
    "StepBatchEvent",
    "StepEvent",
    "StepTasksEvent",
    "TaskEvent",
    "TaskTable",
    "TensorRecord",
    "expand_tasks",
]


def _tensors(values: Iterable[TensorRecord]) -> tuple[TensorRecord, ...]:
    return tuple(values)


def _ops(values: Iterable[OpRecord]) -> tuple[OpRecord, ...]:
    return tuple(values)


def _shapes(values: Iterable[Iterable[int]]) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(int(d) for d in v) for v in values)


def _strs(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(values)


def _read_only(array: Any) -> Any:
    """A read-only view of ``array`` (payloads handed to plugins are never writable: a
    plugin that changes data copies it, so no plugin alters what the built-in writers write).
    Anything that is not an ndarray is kept as given."""
    if isinstance(array, np.ndarray) and array.flags.writeable:
        array = array.view()
        array.flags.writeable = False
    return array


@attrs.frozen(kw_only=True)
class TensorRecord:
    """One tensor of an op as the device holds it (``array`` already in ``dtype``; a
    read-only view: copy it to change it)."""

    name: str
    array: np.ndarray = attrs.field(eq=False, repr=False, converter=_read_only)
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
    in_batch: bool = False
    """This task was also delivered inside a :class:`StepTasksEvent` of the same step; a
    collector that consumes the batched record (the built-in one) skips it. Plugins that only
    know per-task events read it like any other task."""


def _plans(values: Any) -> tuple[Any, ...]:
    return tuple(values)


@attrs.frozen(kw_only=True)
class GraphEvent:
    """A model was compiled: its ops in execution order (``run.step`` is -1).

    Emitted once per compiled model before its first step, so collectors can validate names
    (fp_point / bp_point) and describe ops.
    """

    kind: Literal["graph"] = "graph"
    run: RunInfo
    ops: tuple[OpRecord, ...] = attrs.field(converter=_ops)
    memory_bytes: int = 0
    """Device memory the loaded model holds (the device model's plan: weights, activation
    peak, workspace); 0 = not modelled. The profiling collectors' npu_mem records use it."""
    memory_plans: tuple[Any, ...] = attrs.field(default=(), converter=_plans)
    """The model's :class:`~geplug.device.memory.MemoryPlan` per graph (one for inference,
    forward and backward for training), task names as in ``ops``; () = not modelled. The
    memory profiling records (task_memory) replay them each step."""


@attrs.frozen(kw_only=True)
class StepEvent:
    """A step (iteration) boundary on the device timeline."""

    kind: Literal["step"] = "step"
    run: RunInfo
    phase: Literal["begin", "end"]
    time_us: float


def _check_copy(_: Any, attribute: Any, value: Any) -> None:
    """``ApiCall.copy``: None or (``H2D`` | ``D2H``, bytes >= 0)."""
    if value is None:
        return
    ok = (isinstance(value, tuple) and len(value) == 2 and value[0] in ("H2D", "D2H")
          and isinstance(value[1], int) and value[1] >= 0)
    if not ok:
        raise ValueError(f"ApiCall.copy={value!r}: expected None or (direction, bytes) with "
                         "direction 'H2D' (host to device) or 'D2H' (device to host) and "
                         "bytes an int >= 0; fix the backend that builds the event")


@attrs.frozen(kw_only=True)
class ApiCall:
    """A runtime API call (host<->device copies, launches) on the host timeline."""

    kind: Literal["api"] = "api"
    run: RunInfo
    name: str
    level: str = "runtime"
    start_us: float
    duration_us: float
    copy: tuple[str, int] | None = attrs.field(default=None, validator=_check_copy)
    """A host<->device copy: its direction (``H2D`` or ``D2H``) and bytes. The device runs
    it as a ``MEMCPY_ASYNC`` task on the copy stream for the call's duration
    (:mod:`geplug.profiling.memcpy`); None for any other call."""


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


def _int64(values: Any) -> np.ndarray:
    array = np.ascontiguousarray(values, dtype=np.int64)
    array.setflags(write=False)
    return array


_table_keys = iter(range(1, 2**62))


def _task_tuple(values: Iterable[TaskEvent]) -> tuple[TaskEvent, ...]:
    return tuple(values)


@attrs.frozen(kw_only=True, eq=False)
class TaskTable:
    """The static task list of one compiled model at one input shape (built once).

    A compiled model's tasks, their order, streams and modelled times do not change between
    steps, so a backend builds this once and sends one :class:`StepTasksEvent` per step
    instead of one :class:`TaskEvent` per task. ``tasks`` are the per-task templates (their
    ``run`` is a placeholder and their ``start_us`` the offset from the step's first task);
    ``offset_ns`` / ``duration_ns`` / ``wait_ns`` are the exact integer-ns times, one per task,
    in launch order. ``key`` identifies the table (collectors cache what they derive from it).
    """

    tasks: tuple[TaskEvent, ...] = attrs.field(converter=_task_tuple)
    offset_ns: np.ndarray = attrs.field(converter=_int64, repr=False)
    duration_ns: np.ndarray = attrs.field(converter=_int64, repr=False)
    wait_ns: np.ndarray = attrs.field(converter=_int64, repr=False)
    key: int = attrs.field(factory=lambda: next(_table_keys))

    def __attrs_post_init__(self) -> None:
        n = len(self.tasks)
        for name in ("offset_ns", "duration_ns", "wait_ns"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"TaskTable.{name} has {len(getattr(self, name))} values for "
                                 f"{n} tasks; give one value per task")

    span_ns: int = attrs.field(init=False)
    """From the first task's start to the last task's end (0 for no task)."""

    @span_ns.default
    def _span(self) -> int:
        if not len(self.offset_ns):
            return 0
        return int((self.offset_ns + self.duration_ns).max())

    @classmethod
    def sequential(cls, tasks: Iterable[TaskEvent]) -> TaskTable:
        """Tasks back to back on their streams in the given order (offsets from durations)."""
        tasks = tuple(tasks)
        dur = np.array([round(t.duration_us * 1000) for t in tasks], dtype=np.int64)
        wait = np.array([round(t.wait_us * 1000) for t in tasks], dtype=np.int64)
        off = np.cumsum(dur + wait) - dur
        task_list: Any = tasks  # the converter's input type confuses mypy's attrs plugin
        return cls(tasks=task_list, offset_ns=off, duration_ns=dur, wait_ns=wait)


@attrs.frozen(kw_only=True)
class StepTasksEvent:
    """Every device task of one step at once (the batched record of a static task table).

    Task ``i`` starts at ``start_ns + table.offset_ns[i]`` ns after ``run.time_base_us``.
    Third-party plugins that implement ``geplug_profile`` also get each task as a
    :class:`TaskEvent` with ``in_batch = True`` (see :func:`expand_tasks`).

    A **whole-step record** (``begin_us`` and ``end_us`` set) also stands for the step's two
    :class:`StepEvent` boundaries and its host runtime calls (``calls``), so a profiled step
    costs one event. A backend sends it that way only when no third-party plugin implements
    ``geplug_profile`` (``PluginManager.has_external``); otherwise it sends the separate
    events, which third-party plugins understand. One exception: a plugin that registers
    while steps are queued (``System.defer_profile``) gets those steps as whole-step
    records, one each (never a :class:`StepBatchEvent`).
    """

    kind: Literal["step_tasks"] = "step_tasks"
    run: RunInfo
    table: TaskTable
    start_ns: int
    """Start of the step's first task, integer ns after ``run.time_base_us``."""
    begin_us: float | None = None
    """Whole-step record: the step's begin, µs after ``run.time_base_us``."""
    end_us: float | None = None
    """Whole-step record: the step's end, µs after ``run.time_base_us``."""
    calls: tuple[tuple[Any, ...], ...] = ()
    """Whole-step record: the step's host runtime API calls (name, start µs after
    ``run.time_base_us``, duration µs), as :class:`ApiCall` at level ``runtime`` would say;
    a host<->device copy adds its direction and bytes (``ApiCall.copy``) as two more
    fields."""


def expand_tasks(event: StepTasksEvent) -> Iterable[TaskEvent]:
    """The per-task events of ``event`` (``in_batch = True``), in launch order."""
    new, put = object.__new__, object.__setattr__
    names = [a.name for a in attrs.fields(TaskEvent)
             if a.name not in ("run", "start_us", "duration_us", "wait_us", "in_batch")]
    start = event.start_ns
    table = event.table
    for template, off, dur, wait in zip(table.tasks, table.offset_ns.tolist(),
                                        table.duration_ns.tolist(), table.wait_ns.tolist(),
                                        strict=True):
        task = new(TaskEvent)
        for name in names:
            put(task, name, getattr(template, name))
        put(task, "run", event.run)
        put(task, "start_us", (start + off) / 1000)
        put(task, "duration_us", dur / 1000)
        put(task, "wait_us", wait / 1000)
        put(task, "in_batch", True)
        yield task


def _int64s(values: Any) -> np.ndarray:
    out = np.array(values, dtype=np.int64)  # a copy, read-only: a batch is immutable
    out.flags.writeable = False
    return out


def _float64s(values: Any) -> np.ndarray:
    out = np.array(values, dtype=np.float64)
    out.flags.writeable = False
    return out


@attrs.frozen(kw_only=True, eq=False)
class StepBatchEvent:
    """Consecutive whole-step records of one compiled model that share one task table and
    one set of host calls, as columns: how a backend's deferred steps
    (``System.defer_profile``) reach the collectors, so many steps cost one vectorised
    call. Step ``k`` is the :class:`StepTasksEvent` ``records()`` yields: ``run`` with step
    ``steps[k]``, its tasks from ``start_ns[k]``, its boundaries ``begin_us[k]`` and
    ``end_us[k]``, call ``j`` of ``calls`` starting at ``call_start_us[k, j]``.

    Sent only when no third-party plugin implements ``geplug_profile``, as whole-step
    records are; a consumer that does not vectorise can take :meth:`records`.
    """

    kind: Literal["step_batch"] = "step_batch"
    run: RunInfo
    """The first step's run; the others differ only in ``step``."""
    table: TaskTable
    steps: np.ndarray = attrs.field(converter=_int64s)
    begin_us: np.ndarray = attrs.field(converter=_float64s)
    """Each step's begin, µs after ``run.time_base_us``."""
    start_ns: np.ndarray = attrs.field(converter=_int64s)
    """Each step's first task start, integer ns after ``run.time_base_us``."""
    end_us: np.ndarray = attrs.field(converter=_float64s)
    calls: tuple[tuple[Any, ...], ...] = ()
    """The host calls of every step: (name, duration µs), a copy adding its direction and
    bytes (as :attr:`StepTasksEvent.calls` without the start)."""
    call_start_us: np.ndarray = attrs.field(converter=_float64s,
                                            factory=lambda: np.zeros((0, 0)))
    """Shape (steps, calls): each call's start, µs after ``run.time_base_us``."""

    def __attrs_post_init__(self) -> None:
        n = len(self.steps)
        if not (len(self.begin_us) == len(self.start_ns) == len(self.end_us) == n):
            raise ValueError(f"StepBatchEvent: {n} steps but {len(self.begin_us)} begins, "
                             f"{len(self.start_ns)} task starts, {len(self.end_us)} ends")
        if self.calls and self.call_start_us.shape != (n, len(self.calls)):
            raise ValueError(f"StepBatchEvent: call_start_us has shape "
                             f"{self.call_start_us.shape}, expected ({n}, {len(self.calls)})")

    def records(self) -> Iterator[StepTasksEvent]:
        """The whole-step records this batch stands for, in order."""
        starts = self.call_start_us.tolist() if self.calls else None
        for k, (step, begin, start, end) in enumerate(zip(
                self.steps.tolist(), self.begin_us.tolist(), self.start_ns.tolist(),
                self.end_us.tolist(), strict=True)):
            calls = tuple((c[0], at, *c[1:]) for c, at in zip(self.calls, starts[k],
                                                              strict=True)) if starts else ()
            yield StepTasksEvent(run=attrs.evolve(self.run, step=step), table=self.table,
                                 start_ns=start, begin_us=begin, end_us=end, calls=calls)


ProfileEvent = (TaskEvent | StepTasksEvent | StepBatchEvent | GraphEvent | StepEvent | ApiCall
                | MarkerEvent)
"""Everything ``geplug_profile`` receives."""
