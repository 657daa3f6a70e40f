"""A job's topology: where every rank sits and which link joins two ranks.

Built from the product's ``[topology]`` declaration plus either a rank table (v1.0 / v1.2 /
v2.0 / legacy, validated by :mod:`geplug.config.rank_table`: servers, device ids, device
IPs, super-pods) or ``--ranks N`` (``ceil(N / devices_per_server)`` generated servers, one
super-node when the product has them). :meth:`Topology.route` answers the link type, the
shared resources a flow occupies (so contended links share their bandwidth), the bandwidth
and the step latency between two ranks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from geplug.errors import HcclError
from geplug.products.schema import Product, TopologyCaps

__all__ = ["Place", "Route", "Topology"]


@attrs.frozen
class Place:
    """One rank's place in the job."""

    rank: int
    server: int
    """Server index (0-based, in rank order)."""
    local: int
    """Index of the rank on its server."""
    device_id: int
    server_id: str
    device_ip: str = ""
    pod: int = 0
    """Super-node index (0 when the job has none or one)."""


@attrs.frozen
class Route:
    """How data goes from one rank to another."""

    link: str
    """Transport type as msprof names it: HCCS, PCIE, RDMA, SIO."""
    resources: tuple[tuple[object, ...], ...]
    """Capacity-limited resources the flow occupies (shared with other flows on them)."""
    gbps: float
    latency_us: float


def _generated_ip(server: int, local: int) -> str:
    return f"192.{168 + server // 250}.{server % 250}.{local + 1}"


@attrs.frozen(kw_only=True)
class Topology:
    """Every rank's :class:`Place` plus the product's links."""

    caps: TopologyCaps
    places: tuple[Place, ...]
    source: str = "generated"
    """``generated`` (--ranks N) or the rank table's path."""

    @property
    def size(self) -> int:
        """Number of ranks."""
        return len(self.places)

    @property
    def servers(self) -> int:
        """Number of servers."""
        return max((p.server for p in self.places), default=-1) + 1

    def per_server(self) -> int:
        """Ranks on the first server (servers of a job are alike in size)."""
        return sum(1 for p in self.places if p.server == 0)

    @classmethod
    def generated(cls, product: Product, ranks: int) -> Topology:
        """``ranks`` ranks filling servers of ``devices_per_server`` in order."""
        caps = _caps(product)
        if ranks < 1:
            raise HcclError(f"--ranks {ranks}: give a number of ranks >= 1", option="--ranks")
        per = caps.devices_per_server
        pod_size = caps.supernode_devices or 0
        places = tuple(
            Place(rank=r, server=r // per, local=r % per, device_id=r % per,
                  server_id=f"server{r // per}", device_ip=_generated_ip(r // per, r % per),
                  pod=(r // pod_size) if pod_size else r // per)
            for r in range(ranks))
        return cls(caps=caps, places=places)

    @classmethod
    def from_rank_table(cls, product: Product, path: str,
                        env: Mapping[str, str] | None = None) -> Topology:
        """The topology a rank table describes (validated; RankTableError naming the field)."""
        from geplug.config.rank_table import read_rank_table

        caps = _caps(product)
        _, ranks = read_rank_table(path, product, env or {})
        ranks = sorted(ranks, key=lambda r: r.rank_id)
        server_index: dict[str, int] = {}
        pod_index: dict[str, int] = {}
        local_count: dict[int, int] = {}
        places = []
        for r in ranks:
            s = server_index.setdefault(r.server, len(server_index))
            local = local_count.get(s, 0)
            local_count[s] = local + 1
            if r.super_pod:
                pod = pod_index.setdefault(r.super_pod, len(pod_index))
            else:
                pod = s if not caps.supernode_devices else 0
            places.append(Place(rank=r.rank_id, server=s, local=local,
                                device_id=r.device_id, server_id=r.server,
                                device_ip=r.device_ip, pod=pod))
        return cls(caps=caps, places=tuple(places), source=path)

    def check_device_ips(self, nic_ips: Mapping[int, str]) -> None:
        """EI0014 when the table's device_ip of a rank differs from its NIC's address.

        ``nic_ips``: rank -> the address the simulated NIC really has (the
        GEPLUG_SIM_NIC_IP fault); ranks not named have the table's address.
        """
        bad = [(p, nic_ips[p.rank]) for p in self.places
               if p.rank in nic_ips and p.device_ip and nic_ips[p.rank] != p.device_ip]
        if bad:
            p, real = bad[0]
            raise HcclError(
                f"EI0014: the device_ip {p.device_ip!r} of rank {p.rank} (server "
                f"{p.server_id!r}, device {p.device_id}) in {self.source} differs from the "
                f"NIC's real IP {real!r}; set device_ip to the address_{p.device_id} of "
                "/etc/hccn.conf (hccn_tool -i <id> -ip -g)"
                + (f" ({len(bad)} ranks differ)" if len(bad) > 1 else ""),
                code="EI0014", ranks=[b[0].rank for b in bad], option="RANK_TABLE_FILE")

    def route(self, a: int, b: int) -> Route:
        """The link from rank ``a`` to rank ``b``."""
        c = self.caps
        pa, pb = self.places[a], self.places[b]
        if pa.server == pb.server:
            if c.dies_per_package > 1 and pa.local // c.dies_per_package == \
                    pb.local // c.dies_per_package:
                return Route(c.die_link, (("die", pa.server, pa.local // c.dies_per_package,
                                           min(a, b), max(a, b)),), c.die_gbps,
                             c.intra_latency_us)
            layout = c.intra_layout
            if layout == "full_mesh":
                return Route(c.intra_link, (("peer", a, b),), c.intra_gbps, c.intra_latency_us)
            if layout == "groups":
                g = max(c.intra_group_size, 1)
                if pa.local // g == pb.local // g:
                    return Route(c.intra_link, (("peer", a, b),), c.intra_gbps,
                                 c.intra_latency_us)
                return Route(c.cross_group_link, (("bridge", pa.server),), c.cross_group_gbps,
                             c.intra_latency_us)
            if layout == "switch":
                return Route(c.intra_link, (("port-out", a), ("port-in", b)), c.intra_gbps,
                             c.intra_latency_us)
            return Route(c.intra_link, (("bus", pa.server),), c.intra_gbps, c.intra_latency_us)
        if c.supernode_devices and pa.pod == pb.pod:
            return Route(c.intra_link, (("port-out", a), ("port-in", b)), c.supernode_gbps,
                         c.intra_latency_us)
        return Route(c.nic_link, (("nic-out", a), ("nic-in", b)), c.nic_gbps,
                     c.nic_latency_us)

    def planes(self) -> list[list[int]]:
        """Ranks with the same index on every server (the level1 groups of HCCL)."""
        out: dict[int, list[int]] = {}
        for p in self.places:
            out.setdefault(p.local, []).append(p.rank)
        return [out[k] for k in sorted(out)]

    def server_ranks(self) -> list[list[int]]:
        """Ranks of each server (the level0 groups)."""
        out: dict[int, list[int]] = {}
        for p in self.places:
            out.setdefault(p.server, []).append(p.rank)
        return [out[k] for k in sorted(out)]

    def symmetric(self) -> bool:
        """Every server holds the same number of ranks."""
        sizes = {len(s) for s in self.server_ranks()}
        return len(sizes) == 1


def _caps(product: Product) -> TopologyCaps:
    if product.topology is None:
        raise HcclError(
            f"product {product.name!r} declares no [topology]: collectives cannot be "
            "simulated on it; add a [topology] section to its capabilities.toml "
            "(docs/capabilities.md)", option="product")
    return product.topology


def ranks_of(places: Sequence[Place]) -> list[int]:
    """The rank ids of ``places``."""
    return [p.rank for p in places]
