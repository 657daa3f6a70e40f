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
from typing import Any

import attrs

from geplug.device.cost import (
    ISSUE_MODES,
    NodeWork,
    TaskCost,
    node_work,
    task_cost,
    with_ai_cores,
)
from geplug.device.ir import Graph, dtype_bytes, numel
from geplug.device.memory import MemoryPlan, check_fits, plan_memory
from geplug.device.passes import OptimizedGraph, Task, fuse
from geplug.device.schedule import Schedule, ScheduledTask, schedule
from geplug.errors import CompileError
from geplug.products.schema import Product

__all__ = ["DeviceModel", "TaskPlan", "build_device_model", "copy_us"]

_FLOATS = frozenset({"float32", "float16", "bfloat16", "float64"})


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


def _device_dtypes(graph: Graph, opt: OptimizedGraph, decisions: Mapping[str, Any]
                   ) -> dict[str, str]:
    """The dtype each tensor is held in on the device (lowered weights and outputs)."""
    out: dict[str, str] = {}
    nodes = {n.name: n for n in graph.nodes}
    tensors = graph.tensors
    known = opt.known
    for name in opt.device_nodes:
        d = decisions.get(name)
        if d is None or not getattr(d, "dtype", ""):
            continue
        orig = getattr(d, "original_dtype", "")
        if orig not in _FLOATS:
            continue
        node = nodes[name]
        for t in node.outputs:
            tt = tensors.get(t) if t else None
            if tt is not None and tt.dtype == orig:
                out[t] = d.output_dtype or d.dtype
        for t in node.inputs:
            if t in known:
                tt = tensors.get(t)
                if tt is not None and tt.dtype == orig:
                    out.setdefault(t, d.dtype)  # GE stores a lowered weight lowered
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
) -> DeviceModel:
    """Fuse, cost, schedule and memory-plan ``opt`` on ``product`` (module docstring).

    Raises :class:`~geplug.device.memory.DeviceMemoryError` when ``check_memory`` and the
    plan exceeds the SoC's HBM; :class:`CompileError` for an unknown ``issue_mode``.
    ``aicore_num`` (the session option): the AI Cores the tasks may use, fewer than the
    product declares making compute-bound tasks slower (:func:`with_ai_cores`).
    """
    product = with_ai_cores(product, aicore_num)
    if issue_mode not in ISSUE_MODES:
        raise CompileError(f"issue_mode {issue_mode!r} is not one of {list(ISSUE_MODES)}; "
                           "use 'graph' (sunk graph) or 'single_op' (host launch per op)")
    decisions = dict(decisions or {})
    graph = opt.graph
    engines = {n: getattr(d, "engine", "AI_CORE") for n, d in decisions.items()}
    opt = fuse(opt, product.graph, engines=engines, patterns=None if fusion else ())
    nodes = {n.name: n for n in graph.nodes}
    held = _device_dtypes(graph, opt, decisions)
    node_task: dict[str, str] = {}
    plans: list[tuple[Task, TaskCost, str, str, tuple[NodeWork, ...]]] = []
    unresolved: set[str] = set()
    for task in opt.tasks:
        members = [nodes[m] for m in task.members]
        ds = [decisions.get(m) for m in task.members]
        dtypes = [getattr(d, "dtype", "") or _graph_dtype(graph, n) for d, n in
                  zip(ds, members, strict=True)]
        classes = [getattr(d, "op_class", "") or product.op(n.op_type).op_class
                   for d, n in zip(ds, members, strict=True)]
        works = tuple(node_work(n, graph, k) for n, k in zip(members, classes, strict=True))
        engine = getattr(ds[0], "engine", "AI_CORE") or "AI_CORE"
        moved = float(sum(_bytes(graph, t, held) for t in (*task.inputs, *task.outputs)))
        cost = task_cost(members, works, dtypes, engine=engine, bytes_moved=moved,
                         product=product, issue_mode=issue_mode, op_classes=classes)
        for w, n in zip(works, members, strict=True):
            if w.unresolved:
                for t in (*n.inputs, *n.outputs):
                    tt = graph.tensor(t)
                    if t and (tt is None or not tt.resolved):
                        unresolved.add(t)
        for m in task.members:
            node_task[m] = task.name
        plans.append((task, cost, engine, dtypes[0], works))
    # the schedule: H2D copies, tasks, D2H copies
    producer_task = {t: task.name for task, *_ in plans for t in task.outputs}
    for task, *_ in plans:
        for m in task.members:
            for t in nodes[m].outputs:
                if t:
                    producer_task.setdefault(t, task.name)
    items: list[tuple[str, str, str, float, Sequence[str]]] = []
    feeds = [t for t in graph.inputs if graph.tensor(t) is not None]
    for t in feeds:
        items.append((f"h2d:{t}", "h2d", "copy", copy_us(_bytes(graph, t, {}), product), ()))
    for task, cost, engine, _, _ in plans:
        deps = [producer_task.get(t, f"h2d:{t}") for t in task.inputs]
        items.append((task.name, "task", "aicpu" if engine == "AI_CPU" else "compute",
                      cost.duration_us, deps))
    for t in graph.outputs:
        root = opt.root(t)
        src = producer_task.get(root, f"h2d:{root}")
        items.append((f"d2h:{t}", "d2h", "copy", copy_us(_bytes(graph, t, held), product),
                      (src,)))
    sched = schedule(items)
    by_name = sched.by_name()
    task_plans = tuple(
        TaskPlan(task=task, cost=cost, engine=engine, dtype=dtype,
                 stream_id=by_name[task.name].stream_id, start_ns=by_name[task.name].start_ns,
                 duration_ns=by_name[task.name].duration_ns, works=works)
        for task, cost, engine, dtype, works in plans
    )
    # memory: tasks in start order
    ordered = sorted(task_plans, key=lambda p: (p.start_ns, p.stream_id))
    sizes: dict[str, int] = {}
    resident: dict[str, int] = {}
    order: list[tuple[str, list[str], list[str]]] = []
    for p in ordered:
        reads = []
        for t in p.task.inputs:
            if t in opt.known:
                resident[t] = _bytes(graph, t, held)
            else:
                sizes.setdefault(t, _bytes(graph, t, held))
                reads.append(t)
        writes = []
        for t in p.task.outputs:
            sizes.setdefault(t, _bytes(graph, t, held))
            writes.append(t)
        order.append((p.name, reads, writes))
    for t in feeds:
        sizes.setdefault(t, _bytes(graph, t, {}))
    outs = [opt.root(t) for t in graph.outputs]
    memory = plan_memory(order, sizes, resident=resident, graph_inputs=feeds,
                         graph_outputs=[t for t in outs if t not in opt.known],
                         product=product, soc_version=soc_version)
    if check_memory:
        check_fits(memory, model_name or graph.name, product)
    return DeviceModel(graph=opt, tasks=task_plans, schedule=sched, memory=memory,
                       issue_mode=issue_mode, unresolved=tuple(sorted(unresolved)),
                       node_task=node_task)


def _graph_dtype(graph: Graph, node: Any) -> str:
    for t in (*node.inputs, *node.outputs):
        tt = graph.tensor(t)
        if tt is not None and tt.dtype in _FLOATS:
            return tt.dtype
    return "float32"


def _bytes(graph: Graph, name: str, held: Mapping[str, str]) -> int:
    t = graph.tensor(name)
    if t is None:
        return 0
    return numel(t.shape) * dtype_bytes(held.get(name, t.dtype))
