"""The device model's passes as they were before the fast paths of issue 10 (compile
speed): name-keyed fusion matching, one record constructor call per node and tensor, every
node's attributes read, one dict per pass. Kept as the reference the fast paths must equal
(``test_sim_device_fast_paths.py``); not used by geplug itself."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
from geplug_simulator.devicegraph import _node_attrs  # attribute reading did not change
from geplug_simulator.importer import FLOAT_NAMES, ImportedModel, TensorType, node_io

from geplug.device import Graph, Node, OptimizedGraph, Task, Tensor
from geplug.device.ir import TensorKind
from geplug.device.passes import Fusion, _unfused, patterns_of
from geplug.precision import NodeInfo
from geplug.products.schema import GraphCaps

__all__ = ["device_dtypes", "device_graph", "device_infos", "fuse", "optimize"]

_FLOATS = frozenset({"float32", "float16", "bfloat16", "float64"})


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


def device_dtypes(graph: Graph, opt: OptimizedGraph, decisions: Mapping[str, Any]
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


def device_graph(imported: ImportedModel, types: Mapping[str, TensorType] | None = None
                 ) -> Graph:
    """``imported`` as the device model's IR (``types`` overrides the inferred types)."""
    types = imported.types if types is None else types
    by_name = {n.name: n for n in imported.nodes}
    tensors: dict[str, Tensor] = {}
    inputs = set(imported.inputs)
    for name, t in types.items():
        kind: TensorKind = ("weight" if name in imported.initializers and name not in inputs
                            else "input" if name in inputs else "activation")
        tensors[name] = Tensor(name=name, dtype=t.dtype, shape=t.shape, kind=kind)
    nodes = []
    # names, op types, inputs and outputs as the importer read them (``node_io``); only
    # the attributes are read here
    for (name, op, ins, outs), node in zip(node_io(imported), imported.model.graph.node,
                                           strict=True):
        info = by_name.get(name)
        nodes.append(Node(name=name, op_type=info.op_type if info else op, source_op=op,
                          inputs=ins, outputs=outs, attrs=_node_attrs(node, op)))
    return Graph(name=imported.name, nodes=tuple(nodes), tensors=tensors,
                 inputs=imported.inputs, outputs=imported.outputs)


def device_infos(imported: ImportedModel, opt: OptimizedGraph) -> list[NodeInfo]:
    """The precision inputs of the device nodes: folded, eliminated and view nodes are no
    tasks, so a grey-list op's predecessors are the device nodes producing its floating
    inputs, whatever way the exporter spelled its constants."""
    device = set(opt.device_nodes)
    graph_nodes = opt.graph.nodes
    # the device IR lists the importer's nodes in the importer's order (device_graph)
    pairs: Iterable[tuple[NodeInfo, Node | None]]
    if len(graph_nodes) == len(imported.nodes) and all(
            i.name == n.name for i, n in zip(imported.nodes, graph_nodes, strict=True)):
        pairs = zip(imported.nodes, graph_nodes, strict=True)
    else:
        by_name = {n.name: n for n in graph_nodes}
        pairs = zip(imported.nodes, (by_name.get(i.name) for i in imported.nodes),
                    strict=True)
    found: dict[str, NodeInfo] = {}
    floats = {n for n, t in imported.types.items() if t.dtype in FLOAT_NAMES}
    alias, producer = opt.alias, opt.producer
    for info, node in pairs:
        if node is None or info.name not in device:
            continue
        ins = node.inputs
        if len(ins) == 1:  # most nodes: no dict to build
            t = ins[0]
            p = producer.get(alias.get(t, t)) if t in floats else None
            preds: tuple[str, ...] = () if p is None else (p,)
        else:
            preds = tuple(dict.fromkeys(
                p for t in ins
                if t in floats and (p := producer.get(alias.get(t, t))) is not None))
        # the importer's predecessors already hold where no fold or view intervened
        found[info.name] = (info if preds == info.predecessors
                            else attrs.evolve(info, predecessors=preds))
    return [found[name] for name in opt.device_nodes]

