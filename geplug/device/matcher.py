"""The fusion matcher of :func:`geplug.device.passes.fuse`, over integer node positions.

Every device node is its position in ``OptimizedGraph.device_nodes`` (a topological order),
so "produced before the chain starts" is an integer comparison, the assigned and AI CPU
nodes are flags in a ``bytearray``, and each node's alias-resolved inputs are computed once
per :func:`fuse` instead of once per visit (issue 10, compile speed: the matcher's walk was
the largest part of fusing a 10,000-node chain). The rules are those the name-keyed matcher
applied, step for step; the reference in
``plugins/simulator/tests/reference_device.py`` is compared with it by
``test_sim_device_fast_paths.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["Compiled", "DeviceNodes", "closed", "compile_pattern", "complete", "match"]

Compiled = tuple[tuple[frozenset[str], ...], tuple[tuple[int, ...], ...]]
"""A pattern's steps as sets and, per step, the steps the next member may match."""


class DeviceNodes:
    """The device nodes as positions: op types, alias-resolved inputs ("" dropped, order
    and repeats kept), outputs ("" dropped), the producing position of every device-written
    tensor and the consuming positions of every (root) tensor, in order."""

    __slots__ = ("consumers", "op_types", "outputs", "producer", "roots")

    def __init__(self, op_types: list[str], roots: list[tuple[str, ...]],
                 outputs: list[tuple[str, ...]], producer: dict[str, int],
                 consumers: dict[str, list[int]]) -> None:
        self.op_types = op_types
        self.roots = roots
        self.outputs = outputs
        self.producer = producer
        self.consumers = consumers


def compile_pattern(steps: Sequence[tuple[str, ...]]) -> Compiled:
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


def match(start: int, pattern: Compiled, dn: DeviceNodes, assigned: bytearray,
          blocked: bytearray, graph_outputs: set[str]) -> tuple[list[int], list[str]]:
    """The longest valid chain from ``start`` along ``pattern`` (``[start]`` when none) and
    the chain's external inputs (alias-resolved, in member order, repeats left in). A node
    may join when it is in no task yet (``assigned``) and not ``blocked`` (an AI CPU node),
    and every input it reads from outside the chain was produced before the chain starts
    (so merging cannot create a cycle). A member's inputs are produced by earlier members
    or outside the chain, so which are external is known when it joins."""
    sets, options = pattern
    op_types, outputs, consumers = dn.op_types, dn.outputs, dn.consumers
    roots, producer = dn.roots, dn.producer
    if op_types[start] not in sets[0]:
        return [start], []
    members = [start]
    inside = {start}  # the members as a set: membership tests stay O(1) on long chains
    # (position in members, its external inputs) for the members that have any
    first_ext = [r for r in roots[start] if producer.get(r) != start]
    external: list[tuple[int, list[str]]] = [(0, first_ext)] if first_ext else []
    step = 0
    last = start
    while True:
        outs = outputs[last]
        found = consumers.get(outs[0], ()) if len(outs) == 1 else [
            c for t in outs for c in consumers.get(t, ())]
        if len(found) == 1:  # most nodes: one output, one consumer
            c = found[0]
            if assigned[c] or blocked[c] or c in inside:
                break
            nexts = found
        else:
            found = [c for c in found if not assigned[c] and not blocked[c]
                     and c not in inside]
            if not found:
                break
            nexts = sorted(set(found)) if len(found) > 1 else found
        chosen = -1
        ext: list[str] | None = None
        for want in options[step]:
            wanted = sets[want]
            for c in nexts:
                if op_types[c] in wanted:
                    ext = None
                    for r in roots[c]:  # inputs ready: from the chain or from before it
                        p = producer.get(r)
                        if p is None or p not in inside:
                            if p is not None and p >= start:
                                break
                            if ext is None:
                                ext = [r]
                            else:
                                ext.append(r)
                    else:
                        chosen = c
                        step = want
                        break
            if chosen >= 0:
                break
        if chosen < 0:
            break
        if ext is not None:
            external.append((len(members), ext))
        members.append(chosen)
        inside.add(chosen)
        last = chosen
    # shrink until every internal tensor is consumed only inside and is no graph output
    while len(members) > 1 and not closed(members, dn, graph_outputs):
        members.pop()
    if len(members) > 1 and not (len(sets) == 1 and "*" in sets[0]) and not complete(
            sets, [op_types[m] for m in members]):
        # (a single repeating step is complete whatever number of members matched it)
        return [start], []
    n = len(members)
    return members, [r for k, ext_k in external if k < n for r in ext_k]


def complete(sets: Sequence[frozenset[str]], types: list[str]) -> bool:
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


def closed(members: list[int], dn: DeviceNodes, graph_outputs: set[str]) -> bool:
    """Every tensor a member but the last writes is no graph output and is read only by
    members."""
    inside = set(members)
    outputs, consumers = dn.outputs, dn.consumers
    for m in members[:-1]:
        for t in outputs[m]:
            if t in graph_outputs or not inside.issuperset(consumers.get(t, ())):
                return False
    return True


def device_nodes(op_types: list[str], inputs: Sequence[Sequence[str]],
                 outputs: Sequence[Sequence[str]], alias: Mapping[str, str],
                 producer: Mapping[str, int]) -> DeviceNodes:
    """:class:`DeviceNodes` from the device nodes' op types, inputs and outputs (in
    ``device_nodes`` order) and the producing position of each device-written tensor."""
    roots: list[tuple[str, ...]] = []
    consumers: dict[str, list[int]] = {}
    for i, ins in enumerate(inputs):
        if alias:
            rs = tuple(alias.get(t, t) for t in ins if t)
        elif "" in ins:
            rs = tuple(t for t in ins if t)
        else:
            rs = tuple(ins)
        roots.append(rs)
        for r in rs:
            found = consumers.get(r)
            if found is None:
                consumers[r] = [i]
            else:
                found.append(i)
    outs = [tuple(t for t in o if t) if "" in o else tuple(o) for o in outputs]
    return DeviceNodes(op_types, roots, outs, dict(producer), consumers)
