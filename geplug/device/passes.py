"""GE-style graph compilation over :class:`~geplug.device.ir.Graph`.

Three passes, as GE runs them before it builds tasks:

- **dead-node elimination**: nodes no graph output depends on are removed;
- **constant folding**: a node whose inputs are all known at compile (weights, constants,
  folded outputs; for ``GraphCaps.shape_op_types`` such as ``Shape``, a resolved input shape)
  is computed at compile and is never a device task; ``GraphCaps.view_op_types`` (Reshape,
  Squeeze, Identity, ...) only relabel a tensor: no task, the output aliases the input;
- **fusion** (:func:`fuse`, after precision decisions): chains matching the product's
  patterns become one task, named as FE names a UB-fused op (the members' names
  concatenated, the first member's op type).

Every pass is linear in the number of nodes and tensors.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import attrs

from geplug.device.ir import Graph, Node
from geplug.device.patterns import DEFAULT_PATTERNS
from geplug.products.schema import GraphCaps

__all__ = ["Fusion", "OptimizedGraph", "Task", "fuse", "optimize", "patterns_of"]


@attrs.frozen(kw_only=True)
class Task:
    """One device task: a node, or a fused chain of nodes."""

    name: str
    op_type: str
    members: tuple[str, ...]
    """The original nodes, in order (one for an unfused node)."""
    pattern: str = ""
    """The fusion pattern that made it ("" for an unfused node)."""
    inputs: tuple[str, ...] = ()
    """Tensors read from outside the task (view aliases resolved)."""
    outputs: tuple[str, ...] = ()
    """Tensors written for consumers outside the task, or graph outputs."""

    @property
    def fused(self) -> bool:
        """More than one original node."""
        return len(self.members) > 1


@attrs.frozen(kw_only=True)
class Fusion:
    """What one fusion did (``geplug compile`` lists these)."""

    name: str
    op_type: str
    pattern: str
    members: tuple[str, ...]


@attrs.frozen(kw_only=True)
class OptimizedGraph:
    """The outcome of :func:`optimize` (and :func:`fuse`)."""

    graph: Graph = attrs.field(repr=False)
    folded: tuple[str, ...]
    """Nodes computed at compile (constants, shape arithmetic, ops on weights)."""
    views: tuple[str, ...]
    """Nodes that only relabel a tensor (no task; output aliases input)."""
    eliminated: tuple[str, ...]
    """Nodes no graph output depends on."""
    device_nodes: tuple[str, ...]
    """Nodes that run on the device, in topological order."""
    known: frozenset[str] = attrs.field(repr=False)
    """Tensors whose values are known at compile (weights, constants, folded outputs)."""
    alias: Mapping[str, str] = attrs.field(repr=False)
    """View output -> the tensor whose memory it shares."""
    producer: Mapping[str, str] = attrs.field(repr=False, factory=dict)
    """Tensor -> the device node writing it."""
    _tasks: tuple[Task, ...] | None = attrs.field(default=(), alias="tasks")
    """The tasks (``None``: one per device node, built on first use; :func:`optimize`
    defers them because :func:`fuse` usually replaces them at once)."""
    fusions: tuple[Fusion, ...] = ()

    @property
    def tasks(self) -> tuple[Task, ...]:
        """The device tasks in topological order (one per device node until :func:`fuse`)."""
        if self._tasks is None:
            object.__setattr__(self, "_tasks", _unfused_tasks(self))
        assert self._tasks is not None
        return self._tasks

    def root(self, tensor: str) -> str:
        """The tensor ``tensor`` shares memory with (itself unless a view produced it)."""
        return self.alias.get(tensor, tensor)

    def device_predecessors(self, node: Node) -> tuple[str, ...]:
        """The device nodes producing ``node``'s inputs (through views; folded and graph
        inputs excluded): what the grey-list precision rule looks at."""
        producer = self.producer
        preds = [producer[self.root(t)] for t in node.inputs
                 if t and self.root(t) in producer]
        return tuple(dict.fromkeys(preds))

    def summary(self) -> dict[str, object]:
        """JSON-ready counts and names (``geplug compile --format json``: ``graph``)."""
        return {
            "nodes": len(self.graph.nodes),
            "tasks": len(self.tasks),
            "folded": list(self.folded),
            "views": list(self.views),
            "eliminated": list(self.eliminated),
            "fusions": [attrs.asdict(f) | {"members": list(f.members)} for f in self.fusions],
        }


def _producers(graph: Graph, among: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for node in graph.nodes:
        if node.name in among:
            for t in node.outputs:
                if t:
                    out[t] = node.name
    return out


def optimize(graph: Graph, caps: GraphCaps) -> OptimizedGraph:
    """Dead-node elimination, constant folding and view removal (see the module docstring);
    every remaining node is its own task until :func:`fuse` runs."""
    needed = set(graph.outputs)
    needed.discard("")
    live: list[Node] = []
    eliminated: list[str] = []
    for node in reversed(graph.nodes):
        if not needed.isdisjoint(node.outputs):
            live.append(node)
            needed.update(node.inputs)
            needed.discard("")  # an omitted optional input names no tensor
        else:
            eliminated.append(node.name)
    live.reverse()
    eliminated.reverse()
    known = {name for name, t in graph.tensors.items() if t.kind in ("weight", "constant")}
    shape_ops = frozenset(caps.shape_op_types)
    view_ops = frozenset(caps.view_op_types)
    folded: list[str] = []
    views: list[str] = []
    device: list[str] = []
    alias: dict[str, str] = {}
    for node in live:
        ins = [t for t in node.inputs if t] if "" in node.inputs else node.inputs
        if known.issuperset(ins) and (ins or node.op_type in shape_ops):
            folded.append(node.name)
            known.update(t for t in node.outputs if t)
            continue
        if node.op_type in shape_ops and node.op_type in ("Shape", "Size") and ins:
            src = graph.tensor(ins[0])
            if src is not None and src.resolved:
                folded.append(node.name)
                known.update(t for t in node.outputs if t)
                continue
        if node.op_type in view_ops and ins and known.issuperset(ins[1:]):
            views.append(node.name)
            base = alias.get(ins[0], ins[0])
            for t in node.outputs:
                if t:
                    alias[t] = base
            continue
        device.append(node.name)
    opt = OptimizedGraph(graph=graph, folded=tuple(folded), views=tuple(views),
                         eliminated=tuple(eliminated), device_nodes=tuple(device),
                         known=frozenset(known), alias=alias,
                         producer=_producers(graph, set(device)), tasks=None)
    return opt


def patterns_of(caps: GraphCaps) -> dict[str, tuple[tuple[str, ...], ...]]:
    """The patterns ``caps.fusion`` names, in its order (the product's own first)."""
    table = {**DEFAULT_PATTERNS, **caps.fusion_patterns}
    out: dict[str, tuple[tuple[str, ...], ...]] = {}
    for name in caps.fusion:
        if name not in table:
            from geplug.errors import CapabilityError

            raise CapabilityError(
                f"graph.fusion names pattern {name!r}, which is neither a default pattern "
                f"({', '.join(DEFAULT_PATTERNS)}) nor declared in graph.fusion_patterns; "
                "fix the name or declare the pattern", key="graph.fusion")
        out[name] = table[name]
    return out


def fuse(
    opt: OptimizedGraph,
    caps: GraphCaps,
    *,
    engines: Mapping[str, str] | None = None,
    patterns: Iterable[str] | None = None,
) -> OptimizedGraph:
    """``opt`` with chains matching the product's fusion patterns merged into one task.

    ``engines`` (node -> ``AI_CORE``/``AI_CPU``, from the precision decisions) keeps AI CPU
    nodes out of fusions; ``patterns`` restricts the pattern names (default:
    ``caps.fusion``; ``()`` = no fusion).
    """
    graph = opt.graph
    table = patterns_of(caps)
    if patterns is not None:
        wanted = tuple(patterns)
        table = {k: v for k, v in table.items() if k in wanted}
    if not table:
        return _unfused(opt)
    nodes = {n.name: n for n in graph.nodes}
    order = {name: i for i, name in enumerate(opt.device_nodes)}
    engines = engines or {}
    alias = opt.alias
    consumers: dict[str, list[str]] = {}
    # the device nodes' outputs -> their node: what optimize recorded (built here only for
    # an OptimizedGraph made without it)
    producer: Mapping[str, str] = opt.producer or _producers(graph, set(opt.device_nodes))
    for name in opt.device_nodes:
        for t in nodes[name].inputs:
            if t:
                r = alias.get(t, t)
                found = consumers.get(r)
                if found is None:
                    consumers[r] = [name]
                else:
                    found.append(name)
    graph_outputs = {opt.root(t) for t in graph.outputs}
    assigned: dict[str, str] = {}
    tasks: list[Task] = []
    fusions: list[Fusion] = []
    blocked = {n for n, e in engines.items() if e != "AI_CORE"}  # AI CPU: never fused
    compiled = {pname: _compile(steps) for pname, steps in table.items()}
    starts = frozenset().union(*(sets[0] for sets, _ in compiled.values()))
    for name in opt.device_nodes:
        if name in assigned:
            continue
        members = [name]
        pattern = ""
        if nodes[name].op_type in starts and name not in blocked:
            for pname, pat in compiled.items():
                found_chain = _match(name, pat, nodes, order, producer, consumers,
                                     graph_outputs, alias, assigned, blocked)
                if len(found_chain) > 1:
                    members, pattern = found_chain, pname
                    break
        if len(members) == 1:
            node = nodes[name]
            assigned[name] = name
            tasks.append(Task(
                name=name, op_type=node.op_type, members=(name,),
                inputs=tuple(dict.fromkeys(alias.get(t, t) for t in node.inputs if t)),
                outputs=tuple(t for t in node.outputs if t)))
            continue
        task_name = "".join(members)
        for m in members:
            assigned[m] = task_name
        inside = set(members)
        ins: dict[str, None] = {}  # ordered, O(1) membership on long chains
        outs: list[str] = []
        for m in members:
            node = nodes[m]
            for t in node.inputs:
                r = alias.get(t, t)
                if r and r not in ins and producer.get(r) not in inside:
                    ins[r] = None
            for t in node.outputs:
                if t and (t in graph_outputs
                          or not inside.issuperset(consumers.get(t, ()))):
                    outs.append(t)
        first = nodes[members[0]]
        tasks.append(Task(name=task_name, op_type=first.op_type, members=tuple(members),
                          pattern=pattern, inputs=tuple(ins), outputs=tuple(outs)))
        fusions.append(Fusion(name=task_name, op_type=first.op_type, pattern=pattern,
                              members=tuple(members)))
    return attrs.evolve(opt, tasks=tuple(tasks), fusions=tuple(fusions))


def _unfused(opt: OptimizedGraph) -> OptimizedGraph:
    """Every device node its own task (no pattern to match)."""
    return attrs.evolve(opt, tasks=None, fusions=())


def _unfused_tasks(opt: OptimizedGraph) -> tuple[Task, ...]:
    """One task per device node: one pass, no chain search."""
    nodes = {n.name: n for n in opt.graph.nodes}
    alias = opt.alias
    tasks: list[Task] = []
    for name in opt.device_nodes:
        node = nodes[name]
        ins = tuple(dict.fromkeys(alias.get(t, t) for t in node.inputs if t))
        tasks.append(Task(name=node.name, op_type=node.op_type, members=(node.name,),
                          inputs=ins, outputs=tuple(t for t in node.outputs if t)))
    return tuple(tasks)


def _compile(steps: Sequence[tuple[str, ...]]
             ) -> tuple[tuple[frozenset[str], ...], tuple[tuple[int, ...], ...]]:
    """A pattern's steps as sets (O(1) membership: ELEMENTWISE has ~50 types) and, per
    step, the steps the next member may match (a pure function of the step index): built
    once per :func:`fuse`, not per node tried."""
    sets = tuple(frozenset(s) for s in steps)
    options: list[tuple[int, ...]] = []
    for step in range(len(steps)):
        probe = step + 1 if "*" not in sets[step] else step
        candidates = [probe] if probe < len(steps) else []
        # optional steps may be skipped; a repeating step may also move on
        if "*" in sets[step] and step + 1 < len(steps):
            candidates.append(step + 1)
        k = probe
        while k < len(steps) and "?" in sets[k] and k + 1 < len(steps):
            k += 1
            candidates.append(k)
        options.append(tuple(candidates))
    return sets, tuple(options)


def _match(
    start: str,
    pattern: tuple[tuple[frozenset[str], ...], tuple[tuple[int, ...], ...]],
    nodes: Mapping[str, Node],
    order: Mapping[str, int],
    producer: Mapping[str, str],
    consumers: Mapping[str, list[str]],
    graph_outputs: set[str],
    alias: Mapping[str, str],
    assigned: Mapping[str, str],
    blocked: set[str],
) -> list[str]:
    """The longest valid chain from ``start`` along ``pattern`` (:func:`_compile`;
    ``[start]`` when none). A node may join when it is in no task yet (``assigned``) and
    not ``blocked`` (an AI CPU node)."""
    sets, options = pattern
    if nodes[start].op_type not in sets[0]:
        return [start]
    members = [start]
    inside = {start}  # the members as a set: membership tests stay O(1) on long chains
    first = order[start]
    step = 0
    while True:
        found = [c for t in nodes[members[-1]].outputs if t for c in consumers.get(t, ())
                 if c not in inside and c not in assigned and c not in blocked]
        nexts = (sorted(set(found), key=order.__getitem__) if len(found) > 1 else found)
        chosen = None
        for want in options[step]:
            wanted = sets[want]
            for c in nexts:
                if nodes[c].op_type in wanted and _inputs_ready(
                        c, first, inside, nodes, order, producer, alias):
                    chosen = (c, want)
                    break
            if chosen:
                break
        if chosen is None:
            break
        members.append(chosen[0])
        inside.add(chosen[0])
        step = chosen[1]
    # shrink until every internal tensor is consumed only inside and is no graph output
    while len(members) > 1 and not _closed(members, nodes, consumers, graph_outputs):
        members.pop()
    if len(members) > 1 and not _complete(sets, [nodes[m].op_type for m in members]):
        return [start]
    return members


def _complete(sets: Sequence[frozenset[str]], types: list[str]) -> bool:
    """The matched types cover every non-optional step up to the last one matched."""
    i = 0
    for op_type in types:
        while i < len(sets) and op_type not in sets[i]:
            if "?" not in sets[i]:
                return False
            i += 1
        if i >= len(sets):
            return False
        if "*" not in sets[i]:
            i += 1
    # every step after the last one matched must be optional (or the repeating one)
    return all("?" in step or "*" in step for step in sets[i:])


def _inputs_ready(candidate: str, start: int, inside: set[str], nodes: Mapping[str, Node],
                  order: Mapping[str, int], producer: Mapping[str, str],
                  alias: Mapping[str, str]) -> bool:
    """Every input of ``candidate`` is from the chain (``inside``, starting at position
    ``start``) or produced before it starts (so merging cannot create a cycle)."""
    for t in nodes[candidate].inputs:
        if not t:
            continue
        p = producer.get(alias.get(t, t))
        if p is None or p in inside:
            continue
        if order[p] >= start:
            return False
    return True


def _closed(members: list[str], nodes: Mapping[str, Node],
            consumers: Mapping[str, list[str]], graph_outputs: set[str]) -> bool:
    inside = set(members)
    for m in members[:-1]:
        for t in nodes[m].outputs:
            if not t:
                continue
            if t in graph_outputs or not inside.issuperset(consumers.get(t, ())):
                return False
    return True
