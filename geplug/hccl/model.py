"""The HCCL cost model: collectives as phases of flows over the topology's links.

An algorithm is a list of *phases*; in a phase every flow (src -> dst, bytes) runs at once.
A flow's rate is its route's bandwidth (times the product's ``collective_efficiency`` for a
multi-step collective, times a slow-link factor) divided by the number of flows sharing its
most contended resource (a NIC, a switch port, a PCIe bus; a full-mesh HCCS peer link is
not shared). A flow takes ``latency + bytes / rate``; a phase takes its slowest flow; the
collective takes the sum (alpha-beta with contention). Data over ``HCCL_BUFFSIZE`` runs in
several loops, each paying the latencies again.

Algorithms follow HCCL's public descriptions: inside a server ``mesh`` (full mesh / switch
/ bus: one phase to every peer) or ``ring`` (groups); between servers (level1, the ranks
with the same local index) ``ring``, ``H-D_R`` (recursive halving-doubling, two extra full
steps when the server count is not a power of two), ``NHR`` / ``NHR_V1`` (halving-doubling
volumes without that penalty), ``NB`` (Bruck), ``pipeline`` (modelled as ring: its overlap
of server and network links is not modelled) and ``pairwise`` (alltoall: one peer per
step). HCCL's own choice when ``HCCL_ALGO`` is unset: H-D_R for a power-of-two server
count, ring up to 8 servers, NHR beyond.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import attrs

from geplug.errors import HcclError
from geplug.hccl.faults import Faults
from geplug.hccl.settings import HcclSettings
from geplug.hccl.topology import Topology

__all__ = ["KINDS", "CollectiveCost", "Flow", "RankComm", "plan", "simulate"]

KINDS = ("allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall",
         "alltoallv", "send", "recv", "barrier")
"""The collectives the model knows."""


@attrs.frozen
class Flow:
    """``nbytes`` from ``src`` to ``dst`` inside one phase."""

    src: int
    dst: int
    nbytes: float


@attrs.frozen
class Phase:
    """Flows that run at once, ``repeat`` times in a row (ring steps repeat one pattern)."""

    flows: tuple[Flow, ...]
    repeat: int = 1
    label: str = ""


@attrs.define
class RankComm:
    """One rank's share of a collective: its transit time and what it sent where."""

    transit_us: float = 0.0
    links: dict[str, list[float]] = attrs.field(factory=dict)
    """link type -> [bytes, time µs] this rank sent."""
    peers: dict[int, list[object]] = attrs.field(factory=dict)
    """dst rank -> [link, bytes, time µs]."""


@attrs.frozen(kw_only=True)
class CollectiveCost:
    """The modelled collective: its duration (the same on every rank once all arrived)."""

    kind: str
    algorithm: str
    nbytes: float
    duration_us: float
    ranks: Sequence[RankComm] = attrs.field(repr=False)
    """Indexed by rank (ranks outside the group are empty)."""


def _ceil_log2(n: int) -> int:
    return max(0, math.ceil(math.log2(n))) if n > 1 else 0


def _pow2(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def _level1_choice(settings: HcclSettings, kind: str, servers: int) -> str:
    chosen = settings.algorithm(kind)
    if chosen == "pairwise" and kind not in ("alltoall", "alltoallv"):
        chosen = ""
    if chosen:
        return chosen
    if kind in ("alltoall", "alltoallv"):
        return "pairwise" if servers > 1 else "mesh"
    if _pow2(servers):
        return "H-D_R"
    return "ring" if servers <= 8 else "NHR"


# -- primitive patterns ------------------------------------------------------------------------

def _mesh(group: Sequence[int], chunk: float, label: str) -> list[Phase]:
    flows = tuple(Flow(a, b, chunk) for a in group for b in group if a != b)
    return [Phase(flows, 1, label)] if flows else []


def _ring(group: Sequence[int], chunk: float, steps: int, label: str) -> list[Phase]:
    k = len(group)
    if k < 2 or steps < 1:
        return []
    flows = tuple(Flow(group[i], group[(i + 1) % k], chunk) for i in range(k))
    return [Phase(flows, steps, label)]


def _hd(groups: Sequence[Sequence[int]], data: float, halving: bool, penalty: bool,
        label: str) -> list[Phase]:
    """Recursive halving (reduce-scatter, ``halving``) or doubling (allgather) over each
    group; a non-power-of-two group first folds its extra members in (``penalty``)."""
    m = len(groups[0]) if groups else 0
    if m < 2:
        return []
    p = 1 << (m.bit_length() - 1)
    phases: list[Phase] = []
    if p != m and penalty:
        flows = tuple(Flow(g[p + i], g[i], data) for g in groups for i in range(m - p))
        phases.append(Phase(flows, 1, label + " fold"))
    steps = int(math.log2(p))
    order = range(steps) if halving else reversed(range(steps))
    for s in order:
        dist = p >> (s + 1) if halving else 1 << s
        chunk = data / (2 ** (s + 1)) if halving else data / p * dist
        flows = tuple(Flow(g[i], g[i ^ dist], chunk) for g in groups for i in range(p))
        phases.append(Phase(flows, 1, label))
    if p != m and not penalty:  # NHR: the extra members join with a proportional share
        flows = tuple(Flow(g[i], g[p + i], data / m) for g in groups for i in range(m - p))
        phases.append(Phase(flows, 1, label + " tail"))
    return phases


def _bruck(groups: Sequence[Sequence[int]], block: float, label: str) -> list[Phase]:
    m = len(groups[0]) if groups else 0
    phases = []
    for s in range(_ceil_log2(m)):
        dist = 1 << s
        blocks = min(dist, m - dist)
        flows = tuple(Flow(g[i], g[(i - dist) % m], block * blocks) for g in groups
                      for i in range(m))
        phases.append(Phase(flows, 1, label))
    return phases


def _level1(algo: str, planes: Sequence[Sequence[int]], data: float, op: str) -> list[Phase]:
    """``op`` (rs, ag, ar) of ``data`` bytes per rank over the planes (one per local index)."""
    m = len(planes[0]) if planes else 0
    if m < 2:
        return []
    if algo in ("ring", "pipeline"):
        chunk = data / m
        if op == "ar":
            return _ring_planes(planes, chunk, 2 * (m - 1))
        return _ring_planes(planes, chunk if op == "rs" else data, m - 1)
    if algo == "NB":
        if op == "ar":
            return _bruck(planes, data / m, "NB rs") + _bruck(planes, data / m, "NB ag")
        return _bruck(planes, data / m if op == "rs" else data, "NB")
    penalty = algo == "H-D_R"
    if op == "ar":
        return _hd(planes, data, True, penalty, algo) + _hd(planes, data, False, penalty, algo)
    if op == "rs":
        return _hd(planes, data, True, penalty, algo)
    return _hd(planes, data * m, False, penalty, algo)


def _ring_planes(planes: Sequence[Sequence[int]], chunk: float, steps: int) -> list[Phase]:
    flows = tuple(Flow(g[i], g[(i + 1) % len(g)], chunk) for g in planes for i in range(len(g)))
    return [Phase(flows, steps, "ring")] if flows and steps > 0 else []


def _level0(topo: Topology, servers: Sequence[Sequence[int]], chunk: float, op: str
            ) -> list[Phase]:
    """``op`` (rs/ag) inside every server with ``chunk`` bytes per peer block."""
    k = len(servers[0]) if servers else 0
    if k < 2:
        return []
    if topo.caps.intra_layout == "groups":
        flows = tuple(Flow(g[i], g[(i + 1) % k], chunk) for g in servers for i in range(k))
        return [Phase(flows, k - 1, "ring")]
    flows = tuple(Flow(a, b, chunk) for g in servers for a in g for b in g if a != b)
    return [Phase(flows, 1, "mesh")]


def plan(topo: Topology, kind: str, nbytes: float, settings: HcclSettings, *,
         root: int = 0, peer: int = -1, ranks: Sequence[int] | None = None
         ) -> tuple[str, list[Phase]]:
    """The algorithm name and phases of collective ``kind`` with ``nbytes`` per rank.

    ``nbytes``: allreduce / broadcast / reduce: the buffer; allgather: each rank's input;
    reducescatter: each rank's input (output = input / n); alltoall(v): what each rank
    sends in total; send/recv: the message (``root`` sends to ``peer``).
    """
    if kind not in KINDS:
        raise HcclError(f"unknown collective {kind!r}; known: {', '.join(KINDS)}")
    n = topo.size if ranks is None else len(ranks)
    servers = topo.server_ranks()
    planes = topo.planes()
    m = len(servers)
    k = len(servers[0])
    flat = not topo.symmetric() or ranks is not None
    group = list(range(topo.size)) if ranks is None else list(ranks)
    if kind in ("send", "recv"):
        return "p2p", [Phase((Flow(root, peer, nbytes),), 1, "p2p")]
    if kind == "barrier":
        return _level1_choice(settings, "allreduce", m), _mesh(group, 0.0, "barrier") \
            if m == 1 else _level0(topo, servers, 0.0, "ag") + _level1(
                _level1_choice(settings, "allreduce", m), planes, 0.0, "ar")
    if kind in ("alltoall", "alltoallv"):
        algo = _level1_choice(settings, kind, m)
        block = nbytes / max(n, 1)
        if algo == "pairwise":
            phases = [Phase(tuple(Flow(group[i], group[(i + s) % n], block)
                                  for i in range(n)), 1, "pairwise") for s in range(1, n)]
            return "pairwise", phases
        return "mesh", _mesh(group, block, "mesh")
    if flat:
        algo = "ring"
        if kind == "allreduce":
            return algo, _ring(group, nbytes / n, 2 * (n - 1), "ring")
        if kind == "allgather":
            return algo, _ring(group, nbytes, n - 1, "ring")
        if kind == "reducescatter":
            return algo, _ring(group, nbytes / n, n - 1, "ring")
        chunk = nbytes / n
        scatter = Phase(tuple(Flow(group[root % n], r, chunk) for r in group
                              if r != group[root % n]), 1, "scatter")
        if kind == "broadcast":
            return algo, [scatter, *_ring(group, chunk, n - 1, "ring")]
        return algo, [*_ring(group, chunk, n - 1, "ring"),
                      Phase(tuple(f.__class__(f.dst, f.src, f.nbytes) for f in scatter.flows),
                            1, "gather")]
    level1 = _level1_choice(settings, kind, m)
    name = ("mesh" if topo.caps.intra_layout != "groups" else "ring") + (
        f"+{level1}" if m > 1 else "")
    if kind == "allreduce":
        return name, (_level0(topo, servers, nbytes / k, "rs")
                      + _level1(level1, planes, nbytes / k, "ar")
                      + _level0(topo, servers, nbytes / k, "ag"))
    if kind == "allgather":
        return name, (_level1(level1, planes, nbytes, "ag")
                      + _level0(topo, servers, nbytes * m, "ag"))
    if kind == "reducescatter":
        return name, (_level0(topo, servers, nbytes / k, "rs")
                      + _level1(level1, planes, nbytes / k, "rs"))
    root_place = topo.places[root]
    plane = planes[root_place.local]
    tree = []
    for s in range(_ceil_log2(m)):
        dist = 1 << s
        flows = tuple(Flow(plane[i], plane[i + dist], nbytes / k if kind == "reduce" else nbytes)
                      for i in range(dist) if i + dist < m)
        tree.append(Phase(flows, 1, "tree"))
    if kind == "broadcast":
        scatters = _root_phase(servers, root_place.local, nbytes / k, out=True)
        return name, tree + scatters + _level0(topo, servers, nbytes / k, "ag")
    gather = _root_phase(servers, root_place.local, nbytes / k, out=False)
    return name, _level0(topo, servers, nbytes / k, "rs") + tree[::-1] + gather


def _root_phase(servers: Sequence[Sequence[int]], local: int, chunk: float, *, out: bool
                ) -> list[Phase]:
    flows = []
    for g in servers:
        head = g[min(local, len(g) - 1)]
        for r in g:
            if r != head:
                flows.append(Flow(head, r, chunk) if out else Flow(r, head, chunk))
    return [Phase(tuple(flows), 1, "scatter" if out else "gather")] if flows else []


def _phase_time(topo: Topology, phase: Phase, faults: Faults, efficiency: float,
                loops: int, out: list[RankComm] | None) -> float:
    counts: dict[tuple[object, ...], int] = {}
    routes = []
    for f in phase.flows:
        route = topo.route(f.src, f.dst)
        routes.append(route)
        for res in route.resources:
            counts[res] = counts.get(res, 0) + 1
    slowest = 0.0
    busy: dict[tuple[int, str], float] = {}  # (rank, link) -> longest transfer this phase
    for f, route in zip(phase.flows, routes, strict=True):
        share = max(counts[res] for res in route.resources)
        rate = route.gbps * 1e3 * efficiency * faults.link_factor(f.src, f.dst) / share
        transfer = f.nbytes / rate if rate > 0 else 0.0
        t = route.latency_us * loops + transfer
        slowest = max(slowest, t)
        if out is not None:
            key = (f.src, route.link)
            busy[key] = max(busy.get(key, 0.0), transfer)
            rc = out[f.src]
            used = rc.links.setdefault(route.link, [0.0, 0.0])
            used[0] += f.nbytes * phase.repeat
            peer = rc.peers.setdefault(f.dst, [route.link, 0.0, 0.0])
            peer[1] = float(peer[1]) + f.nbytes * phase.repeat  # type: ignore[arg-type]
            peer[2] = float(peer[2]) + transfer * phase.repeat  # type: ignore[arg-type]
    if out is not None:
        longest: dict[int, float] = {}
        for (rank, link_name), t in busy.items():
            out[rank].links[link_name][1] += t * phase.repeat
            longest[rank] = max(longest.get(rank, 0.0), t)
        for rank, t in longest.items():
            out[rank].transit_us += t * phase.repeat
    return slowest * phase.repeat


def _check_links(phases: Iterable[Phase], faults: Faults, settings: HcclSettings,
                 kind: str) -> None:
    if not faults.down_links:
        return
    for phase in phases:
        for f in phase.flows:
            pair = (min(f.src, f.dst), max(f.src, f.dst))
            if pair in faults.down_links:
                raise HcclError(
                    f"EI0006: Getting socket times out. Reason: rank {f.src} could not connect "
                    f"to rank {f.dst} for {kind} within HCCL_CONNECT_TIMEOUT "
                    f"{settings.connect_timeout_s} s (+20 s): the link {pair[0]}-{pair[1]} is "
                    "down (GEPLUG_SIM_DOWN_LINK). Check the connectivity of the communication "
                    "link between the nodes (hccn_tool -i <id> -net_health -g)",
                    code="EI0006", ranks=pair, option="GEPLUG_SIM_DOWN_LINK")


def simulate(topo: Topology, kind: str, nbytes: float, settings: HcclSettings,
             faults: Faults | None = None, *, root: int = 0, peer: int = -1,
             ranks: Sequence[int] | None = None) -> CollectiveCost:
    """Model collective ``kind`` of ``nbytes`` per rank (see :func:`plan`)."""
    faults = faults or Faults()
    algorithm, phases = plan(topo, kind, nbytes, settings, root=root, peer=peer, ranks=ranks)
    _check_links(phases, faults, settings, kind)
    eff = 1.0 if kind in ("send", "recv") else topo.caps.collective_efficiency
    buff = settings.buffsize_mb * 1024 * 1024
    biggest = max((f.nbytes for p in phases for f in p.flows), default=0.0)
    loops = max(1, math.ceil(biggest / buff)) if buff else 1
    per_rank = [RankComm() for _ in range(topo.size)]
    total = sum(_phase_time(topo, p, faults, eff, loops, per_rank) for p in phases)
    if not phases:
        total = topo.caps.intra_latency_us if kind == "barrier" else 0.0
    return CollectiveCost(kind=kind, algorithm=algorithm, nbytes=nbytes, duration_us=total,
                          ranks=per_rank)
