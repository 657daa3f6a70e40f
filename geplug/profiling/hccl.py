"""hccl: communication tasks -> ``communication_statistic`` CSV and ``analyze/communication*.json``.

formats.md §6.4 (communication_statistic), §6.7 (msprof's flat communication.json and
communication_matrix.json). A task carrying the HCCL model's breakdown
(:class:`geplug.events.CommInfo`, from a multi-rank run) gives the real transit / wait /
synchronisation times, the bytes and times per link type and the per-peer matrix. A task
without one (a single process with a collective op) keeps the simple rule: transit time is
the task's duration, the bytes its ``bytes_moved``, the link the product's first
interconnect target, the matrix the self-link ``"r-r"`` (readers use it to map local to
global ranks) plus the ring neighbour when the rank table names more than one rank.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from geplug.config.rank import WORLD_GROUP
from geplug.events import CommInfo
from geplug.profiling.layout import fmt

__all__ = ["GROUP", "HEADER", "CommCollector"]

HEADER = ["Device_id", "OP Type", "Count", "Total Time(us)", "Min Time(us)", "Avg Time(us)",
          "Max Time(us)", "Ratio(%)"]
GROUP = WORLD_GROUP
LINKS = ("RDMA", "HCCS", "PCIE", "SDMA", "SIO")
_LARGE_PACKET = 1024 * 1024


def _new(op_type: str, dur: float, start: float, group: str) -> dict[str, Any]:
    return {"type": op_type, "n": 0, "total": 0.0, "min": dur, "max": dur, "first": start,
            "bytes": 0.0, "large": 0, "sizes": {}, "group": group, "wait": 0.0,
            "sync": 0.0, "transit": 0.0, "links": {}, "peers": {}, "modelled": False}


class CommCollector:
    """Bounded aggregates per communication op name."""

    def __init__(self) -> None:
        self.ops: dict[str, dict[str, Any]] = {}

    def on_task(self, name: str, op_type: str, start: float, dur: float, nbytes: float,
                comm: CommInfo | None = None) -> None:
        """Record one execution of a communication op (with the HCCL model's ``comm``)."""
        key = comm.hccl_name if comm is not None else name
        s = self.ops.get(key)
        if s is None:
            s = self.ops[key] = _new(op_type, dur, start, comm.group if comm else GROUP)
        s["n"] += 1
        s["total"] += dur
        s["min"] = min(s["min"], dur)
        s["max"] = max(s["max"], dur)
        if comm is not None:
            s["modelled"] = True
            nbytes = sum(b for _, b, _ in comm.links)
            s["wait"] += comm.wait_us
            s["sync"] += comm.sync_us
            s["transit"] += comm.transit_us
            for link, b, t in comm.links:
                acc = s["links"].setdefault(link, [0.0, 0.0, 0, {}])
                acc[0] += b
                acc[1] += t
                acc[2] += 1 if b >= _LARGE_PACKET else 0
                size = acc[3].setdefault(f"{b / 1e6:g}", [0, 0.0])
                size[0] += 1
                size[1] += t / 1000
            for src, dst, link, b, t in comm.peers:
                acc = s["peers"].setdefault((src, dst), [link, 0.0, 0.0, 0])
                acc[1] += b
                acc[2] += t
                acc[3] += 1 if b >= _LARGE_PACKET else 0
        else:
            s["transit"] += dur
        s["bytes"] += nbytes
        if nbytes >= _LARGE_PACKET:
            s["large"] += 1
        entry = s["sizes"].setdefault(f"{nbytes / 1e6:g}", [0, 0.0])
        entry[0] += 1
        entry[1] += dur / 1000

    def statistic_rows(self, device_id: int) -> Iterator[list[str]]:
        """communication_statistic rows per OP Type."""
        by_type: dict[str, list[float]] = {}
        for s in self.ops.values():
            t = by_type.setdefault(s["type"], [0, 0.0, s["min"], s["max"]])
            t[0] += s["n"]
            t[1] += s["total"]
            t[2] = min(t[2], s["min"])
            t[3] = max(t[3], s["max"])
        grand = sum(t[1] for t in by_type.values()) or 1.0
        for op_type, (n, total, lo, hi) in sorted(by_type.items(), key=lambda kv: -kv[1][1]):
            yield [str(device_id), op_type, str(int(n)), fmt(total), fmt(lo), fmt(total / n),
                   fmt(hi), fmt(100 * total / grand)]

    @staticmethod
    def _bandwidth(links: dict[str, list[Any]]) -> dict[str, Any]:
        bw = {}
        for name in LINKS:
            b, t_us, large, sizes = links.get(name, [0.0, 0.0, 0, {}])
            n = sum(c for c, _ in sizes.values())
            size_mb, t_ms = b / 1e6, t_us / 1000
            bw[name] = {
                "Transit Size(MB)": round(size_mb, 6),
                "Transit Time(ms)": round(t_ms, 6),
                "Bandwidth(GB/s)": round(size_mb / t_ms, 6) if t_ms > 0 else 0,
                "Large Packet Ratio": round(large / n, 6) if n else 0,
                "Size Distribution": {k: [c, round(v, 6)] for k, (c, v) in sizes.items()},
            }
        return bw

    def _opinfo(self, s: dict[str, Any], link: str) -> dict[str, Any]:
        total_ms = s["total"] / 1000
        if s["modelled"]:
            links = s["links"]
        else:
            links = {link: [s["bytes"], s["total"], s["large"], dict(s["sizes"])]}
        transit = s["transit"] / 1000
        wait = s["wait"] / 1000 if s["modelled"] else 0.0
        sync = s["sync"] / 1000 if s["modelled"] else 0.0
        idle = max(0.0, total_ms - transit - wait)
        return {
            "Communication Time Info": {
                "Start Timestamp(us)": round(s["first"], 3),
                "Elapse Time(ms)": round(total_ms, 6),
                "Transit Time(ms)": round(transit, 6),
                "Wait Time(ms)": round(wait, 6),
                "Synchronization Time(ms)": round(sync, 6),
                "Idle Time(ms)": round(idle, 6),
                "Wait Time Ratio": round(wait / (wait + transit), 4) if wait + transit else 0,
                "Synchronization Time Ratio": round(sync / (sync + transit), 4)
                if sync + transit else 0,
            },
            "Communication Bandwidth Info": self._bandwidth(links),
        }

    def communication(self, link: str) -> dict[str, Any]:
        """msprof ``analyze/communication.json`` (flat, with ``Total Op Info``)."""
        out: dict[str, Any] = {}
        for name, s in self.ops.items():
            out[f"{name}@{s['group']}"] = self._opinfo(s, link)
        total = _new("", 0.0, min((s["first"] for s in self.ops.values()), default=0.0), GROUP)
        for s in self.ops.values():
            for k in ("n", "total", "bytes", "large", "wait", "sync", "transit"):
                total[k] += s[k]
            total["modelled"] = total["modelled"] or s["modelled"]
            src_links = s["links"] if s["modelled"] else {
                link: [s["bytes"], s["total"], s["large"], s["sizes"]]}
            for name, (b, t, large, sizes) in src_links.items():
                acc = total["links"].setdefault(name, [0.0, 0.0, 0, {}])
                acc[0] += b
                acc[1] += t
                acc[2] += large
                for size, (c, v) in sizes.items():
                    e = acc[3].setdefault(size, [0, 0.0])
                    e[0] += c
                    e[1] += v
        out["Total Op Info"] = self._opinfo(total, link)
        return out

    def matrix(self, link: str, rank: int, rank_size: int) -> dict[str, Any]:
        """msprof ``analyze/communication_matrix.json`` (flat)."""
        out: dict[str, Any] = {}
        for name, s in self.ops.items():
            links: dict[str, Any] = {}
            large_of = round(s["large"] / s["n"], 6) if s["n"] else 0
            if s["modelled"]:
                entries = [(rank, rank, "LOCAL", 0.0, 0.0, 0)]
                entries += [(src, dst, v[0], v[1], v[2], v[3])
                            for (src, dst), v in sorted(s["peers"].items())]
            else:
                peers = [rank] if rank_size <= 1 else [rank, (rank + 1) % rank_size]
                entries = [(rank, d, "LOCAL" if d == rank else link,
                            0.0 if d == rank else s["bytes"], 0.0 if d == rank else s["total"],
                            s["large"]) for d in peers]
            for src, dst, kind, b, t_us, large in entries:
                size_mb, t_ms = b / 1e6, t_us / 1000
                links[f"{src}-{dst}"] = {
                    "Transport Type": kind,
                    "Transit Size(MB)": round(size_mb, 6),
                    "Transit Time(ms)": round(t_ms, 6),
                    "Bandwidth(GB/s)": round(size_mb / t_ms, 6) if t_ms > 0 else 0,
                    "Op Name": name,
                    "Large Packet Ratio": round(large / s["n"], 6) if s["modelled"] and s["n"]
                    else large_of,
                }
            out[f"{name}@{s['group']}"] = links
        return out
