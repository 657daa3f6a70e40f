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

from collections.abc import Iterable, Mapping

import attrs

from geplug.device.ir import Graph, Node
from geplug.device.matcher import Compiled, compile_pattern, device_nodes, match
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

    @property
    def inserted(self) -> bool:
        """A task GE inserts that runs no graph node (a format conversion, TransData:
        :func:`geplug.device.model.conversion_task`)."""
        return not self.members


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
    producer: dict[str, str] = {}  # tensor -> the device node writing it
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
        name = node.name
        device.append(name)
        for t in node.outputs:
            if t:
                producer[t] = name
    opt = OptimizedGraph(graph=graph, folded=tuple(folded), views=tuple(views),
                         eliminated=tuple(eliminated), device_nodes=tuple(device),
                         known=frozenset(known), alias=alias,
                         producer=producer, tasks=None)
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
    _nodes: Mapping[str, Node] | None = None,
) -> OptimizedGraph:
    """``opt`` with chains matching the product's fusion patterns merged into one task.

    ``engines`` (node -> ``AI_CORE``/``AI_CPU``, from the precision decisions) keeps AI CPU
    nodes out of fusions; ``patterns`` restricts the pattern names (default:
    ``caps.fusion``; ``()`` = no fusion). ``_nodes`` (internal): the graph's node name ->
    node map when the caller has built it already.
    """
    graph = opt.graph
    table = patterns_of(caps)
    if patterns is not None:
        wanted = tuple(patterns)
        table = {k: v for k, v in table.items() if k in wanted}
    if not table:
        return _unfused(opt)
    dev = opt.device_nodes
    nodes = _nodes if _nodes is not None else _node_map(graph)
    dnodes = [nodes[name] for name in dev]
    position = {name: i for i, name in enumerate(dev)}
    # the device nodes' outputs -> their node: what optimize recorded (built here only for
    # an OptimizedGraph made without it)
    named: Mapping[str, str] = opt.producer or _producers(graph, set(dev))
    dn = device_nodes([n.op_type for n in dnodes], [n.inputs for n in dnodes],
                      [n.outputs for n in dnodes], opt.alias,
                      {t: position[p] for t, p in named.items()})
    graph_outputs = {opt.root(t) for t in graph.outputs}
    assigned = bytearray(len(dev))
    blocked = bytearray(len(dev))  # AI CPU: never fused
    for n, e in (engines or {}).items():
        if e != "AI_CORE" and n in position:
            blocked[position[n]] = 1
    tasks: list[Task] = []
    fusions: list[Fusion] = []
    compiled = {pname: compile_pattern(steps) for pname, steps in table.items()}
    # per op type, the patterns whose first step it matches (in pattern order): the only
    # ones worth trying from a node of that type
    starting: dict[str, list[tuple[str, Compiled]]] = {}
    op_types, roots, outputs = dn.op_types, dn.roots, dn.outputs
    consumers = dn.consumers
    for i, name in enumerate(dev):
        if assigned[i]:
            continue
        members = [i]
        pattern = ""
        external: list[str] = []
        op_type = op_types[i]
        tried = starting.get(op_type)
        if tried is None:
            tried = starting[op_type] = [(pname, pat) for pname, pat in compiled.items()
                                         if op_type in pat[0][0]]
        if tried and not blocked[i]:
            for pname, pat in tried:
                found_chain, found_ext = match(i, pat, dn, assigned, blocked, graph_outputs)
                if len(found_chain) > 1:
                    members, pattern, external = found_chain, pname, found_ext
                    break
        if len(members) == 1:
            assigned[i] = 1
            tasks.append(Task(name=name, op_type=op_types[i], members=(name,),
                              inputs=tuple(dict.fromkeys(roots[i])), outputs=outputs[i]))
            continue
        member_names = tuple([dev[m] for m in members])
        task_name = "".join(member_names)
        for m in members:
            assigned[m] = 1
        # the members but the last write only tensors read inside and no graph output
        # (match checked it: ``closed``): the task's outputs are the last member's that
        # are read outside or are graph outputs
        inside = set(members)
        outs = tuple(t for t in outputs[members[-1]]
                     if t in graph_outputs or not inside.issuperset(consumers.get(t, ())))
        first = op_types[members[0]]
        tasks.append(Task(name=task_name, op_type=first, members=member_names,
                          pattern=pattern, inputs=tuple(dict.fromkeys(external)),
                          outputs=outs))
        fusions.append(Fusion(name=task_name, op_type=first, pattern=pattern,
                              members=member_names))
    return attrs.evolve(opt, tasks=tuple(tasks), fusions=tuple(fusions))


def _node_map(graph: Graph) -> dict[str, Node]:
    """Node name -> node."""
    return {n.name: n for n in graph.nodes}


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
