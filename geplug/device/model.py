"""The device model of one compiled graph: tasks, their costs, the schedule, the memory plan.

The entry point for every backend (``docs/device-model.md``)::

    from geplug.device import Graph, Node, Tensor, optimize, build_device_model
    opt = optimize(graph, product.graph)          # fold, eliminate dead nodes, views
    # ... precision decisions for opt.device_nodes (predecessors: opt.device_predecessors)
    model = build_device_model(opt, product, decisions, soc_version="Ascend910B2")
    model.makespan_us, model.tasks, model.schedule, model.memory

``decisions`` maps a node name to its :class:`~geplug.precision.OpDecision` (engine, dtype,
op class); a node without one runs on AI Core in its graph dtype.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain
from operator import attrgetter
from typing import Any

import attrs
import numpy as np

from geplug.device.cost import (
    ATTENTION_OPS,
    GATHER_OPS,
    ISSUE_MODES,
    NodeWork,
    TaskCost,
    gather_unread_bytes,
    l2_resident_bytes,
    node_work,
    node_works,
    run_works,
    task_cost,
    with_ai_cores,
)
from geplug.device.formats import TRANSDATA, Conversion, Layout, node_formats, plan_formats
from geplug.device.ir import Graph, dtype_bytes, numel
from geplug.device.memory import MemoryPlan, check_fits, plan_memory
from geplug.device.passes import OptimizedGraph, Task, fuse
from geplug.device.schedule import STREAMS, Schedule, ScheduledTask, schedule_arrays
from geplug.errors import CompileError
from geplug.products.schema import Product
from geplug.vocab import BUFFER_OPTIMIZE_DEFAULT, BUFFER_OPTIMIZE_MODES

__all__ = ["DeviceModel", "TaskPlan", "build_device_model", "conversion_cost",
           "conversion_decision", "conversion_task", "copy_us", "decomposed_attention_note"]

_FLOATS = frozenset({"float32", "float16", "bfloat16", "float64"})

_COST_KEY_MEMBERS = 8
"""Tasks of up to this many members have their cost looked up by key (repeated layers);
a longer fused chain is costed directly (hashing its key would cost as much)."""


@attrs.frozen(kw_only=True)
class TaskPlan:
    """One device task with its cost and place on the timeline."""

    task: Task
    cost: TaskCost
    engine: str
    dtype: str
    stream_id: int
    start_ns: int
    duration_ns: int
    works: tuple[NodeWork, ...] = attrs.field(repr=False, default=())

    @property
    def name(self) -> str:
        return self.task.name


@attrs.frozen(kw_only=True)
class DeviceModel:
    """See the module docstring."""

    graph: OptimizedGraph = attrs.field(repr=False)
    tasks: tuple[TaskPlan, ...]
    schedule: Schedule = attrs.field(repr=False)
    memory: MemoryPlan
    issue_mode: str
    unresolved: tuple[str, ...] = ()
    """Tensors read or written by a task with a dimension nobody could resolve."""
    node_task: Mapping[str, str] = attrs.field(repr=False, factory=dict)
    """Original node -> the task that runs it."""
    buffer_optimize: str = "l2_optimize"
    """The on-chip reuse in force (the ``buffer_optimize`` option): ``l2_optimize`` costs
    intermediates that fit in the declared L2 at its bandwidth, ``off_optimize`` costs every
    byte at memory bandwidth."""
    small_channel: bool = False
    """Whether convolutions of at most 4 input channels were laid out in C04 (the
    ``enable_small_channel`` option as resolved; :func:`geplug.device.cost.cube_shape`)."""
    conversions: tuple[Conversion, ...] = ()
    """The format conversions (TransData) GE inserts, each a task of its own in ``tasks``
    (named as :attr:`Conversion.name`; :mod:`geplug.device.formats`)."""
    formats: Mapping[str, Mapping[str, Layout]] = attrs.field(repr=False, factory=dict)
    """Task -> the tensors it reads or writes in a device format (``NC1HWC0``,
    ``FRACTAL_Z``: a :class:`~geplug.device.formats.Layout`), by the names its nodes spell
    them with; every other tensor is plain. Only tasks with a node computing in 5HD appear
    (:func:`geplug.device.formats.node_formats`): what profiles report as each tensor's
    format and shape."""

    @property
    def makespan_us(self) -> float:
        """Simulated time of one step: the schedule's makespan, µs."""
        return self.schedule.makespan_us

    @property
    def compute_span_us(self) -> float:
        """From the first task's start to the last task's end, µs: the model's execution on
        the device without the host copies around it (what ``aclmdlExecute`` takes)."""
        if not self.tasks:
            return 0.0
        start = min(t.start_ns for t in self.tasks)
        end = max(t.start_ns + t.duration_ns for t in self.tasks)
        return (end - start) / 1000.0

    def conversion(self, name: str) -> Conversion | None:
        """The format conversion run by task ``name`` (``None`` for any other task)."""
        for conv in self.conversions:
            if conv.name == name:
                return conv
        return None

    @property
    def flops(self) -> float:
        return float(sum(t.cost.flops for t in self.tasks))

    @property
    def cube_flops(self) -> float:
        return float(sum(t.cost.cube_flops for t in self.tasks))

    def copies(self) -> tuple[ScheduledTask, ...]:
        """The host<->device copies of one step on the copy stream."""
        return tuple(t for t in self.schedule.tasks if t.kind != "task")


def copy_us(nbytes: float, product: Product) -> float:
    """One host<->device copy: the fixed cost plus bytes over the declared host link."""
    c = product.compute
    return c.host_copy_overhead_us + nbytes / (c.host_link_gbps * 1e9) * 1e6


def _device_dtypes(graph: Graph, opt: OptimizedGraph, decisions: Mapping[str, Any],
                   nodes: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The dtype each tensor is held in on the device (lowered weights and outputs).

    An output held in its graph dtype (a node computing in its original dtype) may be left
    out: readers take a missing tensor as held in its graph dtype. A weight's first
    consumer decides its dtype, whatever it is (GE stores a lowered weight lowered).
    ``nodes``: the graph's node name -> node map, when the caller has one."""
    out: dict[str, str] = {}
    if nodes is None:
        nodes = {n.name: n for n in graph.nodes}
    tensors = graph.tensors
    known = opt.known
    get = decisions.get
    for name in opt.device_nodes:
        d = get(name)
        if d is None:
            continue
        dtype = getattr(d, "dtype", "")
        if not dtype:
            continue
        orig = getattr(d, "original_dtype", "")
        if orig not in _FLOATS:
            continue
        node = nodes[name]
        held = getattr(d, "output_dtype", "") or dtype
        if held != orig:  # else every output it writes stays in its graph dtype
            for t in node.outputs:
                tt = tensors.get(t) if t else None
                if tt is not None and tt.dtype == orig:
                    out[t] = held
        for t in node.inputs:
            if t in known:
                tt = tensors.get(t)
                if tt is not None and tt.dtype == orig:
                    out.setdefault(t, dtype)  # GE stores a lowered weight lowered
    return out


def build_device_model(
    opt: OptimizedGraph,
    product: Product,
    decisions: Mapping[str, Any] | None = None,
    *,
    issue_mode: str = "graph",
    soc_version: str = "",
    fusion: bool = True,
    check_memory: bool = True,
    model_name: str = "",
    aicore_num: int | None = None,
    buffer_optimize: str | None = None,
    small_channel: bool = False,
    held_inputs: Sequence[str] = (),
) -> DeviceModel:
    """Fuse, cost, schedule and memory-plan ``opt`` on ``product`` (module docstring).

    Raises :class:`~geplug.device.memory.DeviceMemoryError` when ``check_memory`` and the
    plan exceeds the SoC's HBM; :class:`CompileError` for an unknown ``issue_mode``.
    ``aicore_num`` (the session option): the AI Cores the tasks may use, fewer than the
    product declares making compute-bound tasks slower (:func:`with_ai_cores`).
    ``buffer_optimize`` (the session option, ATC ``--buffer_optimize``; ``None`` is its
    default ``l2_optimize``): ``off_optimize`` turns the on-chip reuse (L2) term off.
    ``small_channel``: whether C04 is in force (``enable_small_channel`` as resolved, less
    a SoC that keeps it for AIPP: :func:`geplug.device.cost.small_channel_in_force`): a
    convolution that may use it pads its at most 4 input channels to 4 per kernel tap
    instead of the C0 (:func:`geplug.device.cost.cube_shape`). ``held_inputs``: tensors
    already on the device when the graph starts and held by its caller until it ends (a
    torch graph's inputs: no host copy), planned live for the whole graph.
    """
    product = with_ai_cores(product, aicore_num)
    if issue_mode not in ISSUE_MODES:
        raise CompileError(f"issue_mode {issue_mode!r} is not one of {list(ISSUE_MODES)}; "
                           "use 'graph' (sunk graph) or 'single_op' (host launch per op)")
    buffer_optimize = buffer_optimize or BUFFER_OPTIMIZE_DEFAULT
    if buffer_optimize not in BUFFER_OPTIMIZE_MODES:
        raise CompileError(f"buffer_optimize {buffer_optimize!r} is not one of "
                           f"{list(BUFFER_OPTIMIZE_MODES)}; use 'l2_optimize' (the default: "
                           "intermediates in L2) or 'off_optimize' (no L2 reuse)")
    decisions = dict(decisions or {})
    graph = opt.graph
    # fuse keeps the nodes off any engine but AI Core out of fusions: it needs only those
    engines = {n: e for n, d in decisions.items()
               if (e := getattr(d, "engine", "AI_CORE")) != "AI_CORE"}
    nodes = {n.name: n for n in graph.nodes}
    opt = fuse(opt, product.graph, engines=engines, patterns=None if fusion else (),
               _nodes=nodes)
    held = _device_dtypes(graph, opt, decisions, nodes)
    nbytes = _Bytes(graph, held)
    op_classes: dict[str, str] = {}
    node_task: dict[str, str] = {}
    plans: list[tuple[Task, TaskCost, str, str, tuple[NodeWork, ...]]] = []
    unresolved: set[str] = set()
    tasks = opt.tasks
    gathers = frozenset(n.name for n in graph.nodes if n.op_type in GATHER_OPS)
    moved_by_task = [_task_bytes(task, nodes, nbytes, gathers) for task in tasks]
    l2_served = (_l2_served(tasks, opt, graph, nbytes, moved_by_task, product)
                 if buffer_optimize == "l2_optimize" else [0.0] * len(tasks))
    # format conversions (TransData): tasks of their own, each run right before the first
    # task holding a reader of the converted tensor; those readers read the converted tensor
    format_plan = plan_formats(graph, [nodes[n] for n in opt.device_nodes], product.graph,
                               root=opt.alias, known=opt.known, dtypes=held,
                               aicpu={n for n, e in engines.items() if e == "AI_CPU"})
    placed = _placed(list(format_plan.conversions), tasks, nodes)
    task_formats = _task_formats(tasks, nodes, graph, product, format_plan.five_hd_nodes)
    conversions = _named([conv for _, conv in placed], nodes)
    before: dict[int, list[Conversion]] = {}  # task index -> the conversions run before it
    reads_converted: dict[str, dict[str, str]] = {}  # node -> {tensor: converted tensor}
    # a conversion of a tensor already converted to its source format (a reshaping view of
    # a 5HD tensor: converted to ND, viewed, converted back) reads that conversion's output
    conv_reads: dict[str, str] = {}
    latest: dict[tuple[str, str], str] = {}  # (tensor, format) -> the conversion writing it
    for (index, _), conv in zip(placed, conversions, strict=True):
        before.setdefault(index, []).append(conv)
        base = opt.root(conv.tensor)
        src = latest.get((base, conv.source))
        if src is not None:
            conv_reads[conv.name] = src
        latest[(base, conv.target)] = conv.output
        for r in conv.readers:
            reads_converted.setdefault(r, {})[base] = conv.output
    task_reads: dict[int, tuple[str, ...]] = {}  # plan index -> its reads, when converted
    # a task's cost is a pure function of its members' op types, works, dtypes and op
    # classes, its engine and bytes: computed once per distinct key in this build (real
    # and synthetic graphs repeat their layers)
    costs: dict[tuple[object, ...], TaskCost] = {}
    for index, task in enumerate(tasks):
        if len(task.members) == 1:  # most tasks: no per-member lists
            n = nodes[task.members[0]]
            d = decisions.get(n.name)
            dtype = getattr(d, "dtype", "") or _graph_dtype(graph, n)
            klass = getattr(d, "op_class", "") or _op_class(product, n.op_type, op_classes)
            members, ds, dtypes, classes = [n], [d], [dtype], [klass]
            works: tuple[NodeWork, ...] = (node_work(n, graph, klass),)
        else:
            members, ds, dtypes, classes = _member_lists(task.members, nodes, decisions,
                                                         graph, product, op_classes)
            works = tuple(node_works(members, graph, classes))
        engine = getattr(ds[0], "engine", "AI_CORE") or "AI_CORE"
        moved = moved_by_task[index]
        key = ((tuple(n.op_type for n in members), works, tuple(dtypes), tuple(classes),
                engine, moved, l2_served[index])
               if len(members) <= _COST_KEY_MEMBERS else None)
        cost = costs.get(key) if key is not None else None
        if cost is None:
            cost = task_cost(members, works, dtypes, engine=engine, bytes_moved=moved,
                             product=product, issue_mode=issue_mode, op_classes=classes,
                             l2_bytes=l2_served[index], small_channel=small_channel)
            if key is not None:
                costs[key] = cost
        for w, n in zip(works, members, strict=True):
            if w.unresolved:
                for t in (*n.inputs, *n.outputs):
                    tt = graph.tensor(t)
                    if t and (tt is None or not tt.resolved):
                        unresolved.add(t)
        node_task.update(dict.fromkeys(task.members, task.name))
        if conversions:
            for conv in before.get(index, ()):
                if conv.name in conv_reads:
                    task_reads[len(plans)] = (conv_reads[conv.name],)
                plans.append((conversion_task(conv), conversion_cost(
                    conv, product, issue_mode), "AI_CORE", conv.dtype, ()))
            subs: dict[str, str] = {}
            for m in task.members:
                subs.update(reads_converted.get(m) or {})
            if subs:
                task_reads[len(plans)] = tuple(subs.get(t, t) for t in task.inputs)
        plans.append((task, cost, engine, dtypes[0], works))
    # the schedule over arrays: H2D copies, tasks, D2H copies (items in that order)
    feeds = [t for t in graph.inputs if graph.tensor(t) is not None]
    n_feeds, n_tasks = len(feeds), len(plans)
    producer: dict[str, int] = {}  # tensor -> item index of the task writing it
    for k, (task, *_) in enumerate(plans):
        for t in task.outputs:
            producer[t] = n_feeds + k
    for k, (task, *_) in enumerate(plans):
        for m in task.members:
            for t in nodes[m].outputs:
                if t:
                    producer.setdefault(t, n_feeds + k)
    copy_item = {t: i for i, t in enumerate(feeds)}
    dep_item: list[int] = []
    dep_on: list[int] = []

    def depend(i: int, tensor: str) -> None:
        j = producer.get(tensor)
        if j is None:
            j = copy_item.get(tensor)
        if j is None and tensor in opt.alias:  # a view (a conversion may read one)
            j = producer.get(opt.alias[tensor])
        if j is not None and j < i:  # a later or unknown producer: no dependency
            dep_item.append(i)
            dep_on.append(j)

    for k, (task, *_) in enumerate(plans):
        for t in task_reads.get(k, task.inputs):
            depend(n_feeds + k, t)
    outs = list(graph.outputs)
    for k, t in enumerate(outs):
        depend(n_feeds + n_tasks + k, opt.root(t))
    copy, compute, aicpu = STREAMS["copy"], STREAMS["compute"], STREAMS["aicpu"]
    streams = np.array([copy] * n_feeds
                       + [aicpu if e == "AI_CPU" else compute for _, _, e, _, _ in plans]
                       + [copy] * len(outs), np.int64)
    durations = np.array([copy_us(nbytes.plain(t), product) for t in feeds]
                         + [c.duration_us for _, c, _, _, _ in plans]
                         + [copy_us(nbytes(t), product) for t in outs], np.float64)
    start, dur = schedule_arrays(streams, durations, np.asarray(dep_item, np.int64),
                                 np.asarray(dep_on, np.int64))
    names = ([f"h2d:{t}" for t in feeds] + [task.name for task, *_ in plans]
             + [f"d2h:{t}" for t in outs])
    kinds = ["h2d"] * n_feeds + ["task"] * n_tasks + ["d2h"] * len(outs)
    sids, starts, durs = streams.tolist(), start.tolist(), dur.tolist()
    sched = Schedule(
        tasks=tuple(ScheduledTask(name=n, kind=k, stream_id=sid, start_ns=st, duration_ns=du)
                    for n, k, sid, st, du in zip(names, kinds, sids, starts, durs,
                                                 strict=True)),
        makespan_ns=int((start + dur).max()) if len(names) else 0)
    task_plans = tuple(
        TaskPlan(task=task, cost=cost, engine=engine, dtype=dtype,
                 stream_id=sids[n_feeds + k], start_ns=starts[n_feeds + k],
                 duration_ns=durs[n_feeds + k], works=works)
        for k, (task, cost, engine, dtype, works) in enumerate(plans)
    )
    # memory: tasks in start order (stream id breaking ties)
    ordered = np.lexsort((streams[n_feeds:n_feeds + n_tasks],
                          start[n_feeds:n_feeds + n_tasks])).tolist()
    sizes: dict[str, int] = {c.output: c.bytes_in(c.target) for c in conversions}
    resident: dict[str, int] = {}
    order: list[tuple[str, list[str], list[str]]] = []
    known = opt.known
    for k in ordered:
        task = plans[k][0]
        reads = []
        for t in task_reads.get(k, task.inputs):
            if t in known:
                resident[t] = nbytes(t)
            else:
                if t not in sizes:
                    sizes[t] = nbytes(t)
                reads.append(t)
        for t in task.outputs:
            if t not in sizes:
                sizes[t] = nbytes(t)
        writes = list(task.outputs)
        scratch = _scratch_bytes(plans[k][4], plans[k][3], product)
        if scratch:
            # what a decomposed op keeps in memory inside its task (a block live for it)
            name = f"{task.name}/scratch"
            sizes[name] = scratch
            writes.append(name)
        order.append((task.name, reads, writes))
    for t in feeds:
        sizes.setdefault(t, nbytes.plain(t))
    kept = [t for t in held_inputs if t not in known and graph.tensor(t) is not None]
    for t in kept:
        sizes.setdefault(t, nbytes(t))
    roots = [opt.root(t) for t in graph.outputs]
    memory = plan_memory(order, sizes, resident=resident, graph_inputs=feeds,
                         graph_outputs=[t for t in roots if t not in known],
                         product=product, soc_version=soc_version, held_inputs=kept)
    if check_memory:
        check_fits(memory, model_name or graph.name, product)
    return DeviceModel(graph=opt, tasks=task_plans, schedule=sched, memory=memory,
                       issue_mode=issue_mode, unresolved=tuple(sorted(unresolved)),
                       node_task=node_task, buffer_optimize=buffer_optimize,
                       small_channel=small_channel, conversions=tuple(conversions),
                       formats=task_formats)


def _task_formats(tasks: Sequence[Task], nodes: Mapping[str, Any], graph: Graph,
                  product: Product, five_hd: frozenset[str]
                  ) -> dict[str, dict[str, Layout]]:
    """Task -> its tensors held in a device format (:attr:`DeviceModel.formats`)."""
    if not five_hd:
        return {}
    out: dict[str, dict[str, Layout]] = {}
    for task in tasks:
        for m in task.members:
            if m in five_hd:
                out.setdefault(task.name, {}).update(
                    node_formats(nodes[m], graph, product.graph))
    return out


def _placed(conversions: list[Conversion], tasks: Sequence[Task], nodes: Mapping[str, Any]
            ) -> list[tuple[int, Conversion]]:
    """``conversions`` as the tasks run them, each with the index of the task it runs
    before, in that order: a reader in the task that writes the tensor reads it inside the
    fused kernel, in the kernel's own layout (no conversion for it); the other readers keep
    it, the first of them (in task order) its ``consumer``, so the TransData runs after the
    task writing the tensor and before every task reading it. A conversion left with no
    reader, or whose first reading task would run before the writing one, is dropped."""
    if not conversions:
        return []
    task_of: dict[str, int] = {}
    writer: dict[str, int] = {}
    for i, task in enumerate(tasks):
        for m in task.members:
            task_of[m] = i
            for t in nodes[m].outputs:
                if t:
                    writer[t] = i
    out: list[tuple[int, Conversion]] = []
    for conv in conversions:
        made = writer.get(conv.tensor, -1)
        readers = sorted((r for r in conv.readers if r in task_of and task_of[r] != made),
                         key=task_of.__getitem__)
        if readers and task_of[readers[0]] > made:
            out.append((task_of[readers[0]], attrs.evolve(
                conv, consumer=readers[0], readers=tuple(readers))))
    out.sort(key=lambda placed: placed[0])  # stable: the pass's order within a task
    return out


def _named(conversions: list[Conversion], nodes: Mapping[str, Any]) -> list[Conversion]:
    """``conversions`` with their task names: ``trans_TransData_<n>`` in execution order, as
    GE names the TransData nodes it inserts (a number a graph node's name already takes is
    skipped)."""
    out: list[Conversion] = []
    k = 0
    for conv in conversions:
        while f"trans_{TRANSDATA}_{k}" in nodes:
            k += 1
        out.append(attrs.evolve(conv, name=f"trans_{TRANSDATA}_{k}"))
        k += 1
    return out


def conversion_task(conv: Conversion) -> Task:
    """The task of one format conversion: it runs no graph node (``Task.inserted``), reads
    the tensor and writes :attr:`Conversion.output`."""
    return Task(name=conv.name, op_type=TRANSDATA, members=(), inputs=(conv.tensor,),
                outputs=(conv.output,))


def conversion_decision(conv: Conversion) -> Any:
    """The :class:`~geplug.precision.OpDecision` of a conversion's task (kernel_meta files,
    dump and profiling records): an AI Core vector op in the tensor's held dtype, chosen by
    GE's format pass, not by the precision mode."""
    from geplug.precision.select import OpDecision

    return OpDecision(
        node=conv.name, onnx_op="", op_type=TRANSDATA, engine="AI_CORE", dtype=conv.dtype,
        impl_mode="", original_dtype=conv.dtype, output_dtype=conv.dtype, op_class="vector",
        reason=f"format conversion {conv.source} -> {conv.target} of {conv.tensor!r} that GE "
               f"inserts before {conv.consumer!r} (docs/device-model.md, Format conversions)")


def conversion_cost(conv: Conversion, product: Product, issue_mode: str) -> TaskCost:
    """One TransData: a vector task moving its bytes (read the source, write the target) at
    the vector share of the memory bandwidth, no L2 reuse (a layout rewrite of a fresh
    tensor), plus the task overhead of ``issue_mode``."""
    return task_cost([], [], [], engine="AI_CORE", bytes_moved=float(conv.bytes_moved),
                     product=product, issue_mode=issue_mode)


def _member_lists(names: Sequence[str], nodes: Mapping[str, Any],
                  decisions: Mapping[str, Any], graph: Graph, product: Product,
                  op_classes: dict[str, str]
                  ) -> tuple[list[Any], list[Any], list[str], list[str]]:
    """A fused task's members: their nodes, decisions, compute dtypes (the decision's, else
    the graph's) and op classes (the decision's, else the product's), in one pass."""
    members: list[Any] = []
    ds: list[Any] = []
    dtypes: list[str] = []
    classes: list[str] = []
    get = decisions.get
    for m in names:
        n = nodes[m]
        d = get(m)
        members.append(n)
        ds.append(d)
        dtypes.append(getattr(d, "dtype", "") or _graph_dtype(graph, n))
        classes.append(getattr(d, "op_class", "") or _op_class(product, n.op_type, op_classes))
    return members, ds, dtypes, classes


def _task_bytes(task: Task, nodes: Mapping[str, Any], nbytes: _Bytes,
                gathers: frozenset[str]) -> float:
    """Bytes a task moves: its external inputs and outputs, less what a gather (a node of
    ``gathers``) does not read of its table (:func:`~geplug.device.cost.gather_unread_bytes`)."""
    moved = float(sum(nbytes(t) for t in (*task.inputs, *task.outputs)))
    if gathers and not gathers.isdisjoint(task.members):
        members = [nodes[m] for m in task.members]
        moved -= gather_unread_bytes(members, task.inputs, nbytes)
    return moved


def _l2_served(tasks: Sequence[Task], opt: OptimizedGraph, graph: Graph, nbytes: _Bytes,
               moved: Sequence[float], product: Product) -> list[float]:
    """Per task (in ``tasks`` order, the compute stream's order), the bytes served by L2
    (:func:`~geplug.device.cost.l2_resident_bytes`). Eligible: tensors a task writes that
    are neither graph outputs nor known at compile; weights and constants (known) count
    whole in every window, activations per slice of their leading dimension."""
    capacity = product.compute.l2_cache_mib * (1 << 20)
    if capacity <= 0 or product.compute.l2_bandwidth_gbps <= 0:
        return [0.0] * len(tasks)
    outputs = {opt.root(t) for t in graph.outputs}
    known = opt.known
    eligible = set(chain.from_iterable(map(attrgetter("outputs"), tasks)))
    eligible.difference_update(outputs, known, ("",))
    # every tensor of these tasks was sized by _task_bytes (``moved``): its cache is the map
    return l2_resident_bytes(list(map(attrgetter("inputs", "outputs"), tasks)), nbytes.seen,
                             capacity_bytes=capacity, eligible=eligible, fixed=known,
                             slices=lambda t, _: _leading_dim(graph, t), moved=moved)


def _leading_dim(graph: Graph, name: str) -> int:
    """The leading (batch) dimension of ``name``: the slices L2 fusion may cut it into."""
    t = graph.tensor(name)
    if t is None or not t.shape:
        return 1
    d = t.shape[0]
    return int(d) if isinstance(d, int) and d > 0 else 1


def _graph_dtype(graph: Graph, node: Any) -> str:
    for t in (*node.inputs, *node.outputs):
        tt = graph.tensor(t)
        if tt is not None and tt.dtype in _FLOATS:
            return tt.dtype
    return "float32"


def decomposed_attention_note(model: DeviceModel, product: Product) -> str:
    """A note for a model whose attention runs as its decomposition on ``product`` (its SoC
    has no fused attention kernels: ``compute.fused_attention`` false): why its time and
    memory are what they are. "" otherwise."""
    if product.compute.fused_attention:
        return ""
    tasks = [p for p in model.tasks if p.task.op_type in ATTENTION_OPS]
    if not tasks:
        return ""
    largest = max(_scratch_bytes(p.works, p.dtype, product) for p in tasks)
    return (f"{len(tasks)} attention task(s) run as their decomposition on {product.name}: "
            "its SoC has no fused attention kernel (compute.fused_attention = false), so "
            "every score is computed and the score matrices go through memory (the largest "
            f"holds {largest / 2**20:.1f} MiB at once); on a SoC with the kernels they stay "
            "on chip")


def _scratch_bytes(works: Sequence[NodeWork], dtype: str, product: Product) -> int:
    """Bytes a task's decomposed ops hold in memory at once (an attention on a SoC without
    the fused kernels: its score and probability matrices, ``NodeWork.scratch_elements`` of
    the decomposition, at the compute dtype's size); 0 for every other task."""
    elements = sum(w.scratch_elements for w in run_works(works, product.compute))
    return int(elements * dtype_bytes(dtype or "float32")) if elements else 0


def _op_class(product: Product, op_type: str, seen: dict[str, str]) -> str:
    """The product's op class of ``op_type`` (looked up once per op type)."""
    found = seen.get(op_type)
    if found is None:
        found = seen[op_type] = product.op(op_type).op_class
    return found


def _bytes(graph: Graph, name: str, held: Mapping[str, str]) -> int:
    """Bytes of tensor ``name`` as the device holds it (``held`` dtypes; 0 when unknown)."""
    t = graph.tensor(name)
    if t is None:
        return 0
    return numel(t.shape) * dtype_bytes(held.get(name, t.dtype))


class _Bytes:
    """Bytes of a tensor as the device holds it (``held`` dtypes), once per tensor;
    :meth:`plain` in the graph's own dtype (what a host copy of a graph input moves)."""

    def __init__(self, graph: Graph, held: Mapping[str, str]) -> None:
        self._tensors = graph.tensors
        self._held = held
        self._seen: dict[str, int] = {}

    def __call__(self, name: str) -> int:
        found = self._seen.get(name)
        if found is None:
            t = self._tensors.get(name) if name else None
            found = 0 if t is None else numel(t.shape) * dtype_bytes(
                self._held.get(name, t.dtype))
            self._seen[name] = found
        return found

    @property
    def seen(self) -> Mapping[str, int]:
        """Bytes of every tensor asked for so far (a name never asked is absent)."""
        return self._seen

    def plain(self, name: str) -> int:
        t = self._tensors.get(name) if name else None
        return 0 if t is None else numel(t.shape) * dtype_bytes(t.dtype)
