"""hccl: communication tasks -> ``communication_statistic`` CSV and ``analyze/communication*.json``.

formats.md §6.4 (communication_statistic), §6.7 (msprof's flat communication.json and
communication_matrix.json). A simulated single process has no real links: transit time is the
task's modelled duration, the bytes are the task's ``bytes_moved``, the link type is the
product's first interconnect target (HCCS, else PCIe), and the matrix has the self-link
``"r-r"`` (which readers use to map local to global ranks) plus the ring neighbour when the
rank table names more than one rank. Wait / synchronisation / idle times are 0 (modelled).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from geplug.profiling.layout import fmt
from geplug.runtime.rank import WORLD_GROUP

__all__ = ["GROUP", "HEADER", "CommCollector"]

HEADER = ["Device_id", "OP Type", "Count", "Total Time(us)", "Min Time(us)", "Avg Time(us)",
          "Max Time(us)", "Ratio(%)"]
GROUP = WORLD_GROUP
LINKS = ("RDMA", "HCCS", "PCIE", "SDMA", "SIO")
_LARGE_PACKET = 1024 * 1024


class CommCollector:
    """Bounded aggregates per communication op name."""

    def __init__(self) -> None:
        self.ops: dict[str, dict[str, Any]] = {}

    def on_task(self, name: str, op_type: str, start: float, dur: float, nbytes: float) -> None:
        """Record one execution of a communication op."""
        s = self.ops.get(name)
        if s is None:
            s = self.ops[name] = {"type": op_type, "n": 0, "total": 0.0, "min": dur, "max": dur,
                                  "first": start, "bytes": 0.0, "large": 0, "sizes": {}}
        s["n"] += 1
        s["total"] += dur
        s["min"] = min(s["min"], dur)
        s["max"] = max(s["max"], dur)
        s["bytes"] += nbytes
        if nbytes >= _LARGE_PACKET:
            s["large"] += 1
        key = f"{nbytes / 1e6:g}"
        entry = s["sizes"].setdefault(key, [0, 0.0])
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
    def _opinfo(start: float, total_us: float, nbytes: float, large: int, n: int,
                sizes: dict[str, list[float]], link: str) -> dict[str, Any]:
        ms = total_us / 1000
        bw = {}
        for name in LINKS:
            used = name == link
            size_mb = nbytes / 1e6 if used else 0.0
            t_ms = ms if used else 0.0
            bw[name] = {
                "Transit Size(MB)": round(size_mb, 6),
                "Transit Time(ms)": round(t_ms, 6),
                "Bandwidth(GB/s)": round(size_mb / 1e3 / (t_ms / 1e3), 6) if t_ms > 0 else 0,
                "Large Packet Ratio": round(large / n, 6) if used and n else 0,
                "Size Distribution": dict(sizes) if used else {},
            }
        return {
            "Communication Time Info": {
                "Start Timestamp(us)": round(start, 3),
                "Elapse Time(ms)": round(ms, 6),
                "Transit Time(ms)": round(ms, 6),
                "Wait Time(ms)": 0,
                "Synchronization Time(ms)": 0,
                "Idle Time(ms)": 0,
                "Wait Time Ratio": 0,
                "Synchronization Time Ratio": 0,
            },
            "Communication Bandwidth Info": bw,
        }

    def communication(self, link: str) -> dict[str, Any]:
        """msprof ``analyze/communication.json`` (flat, with ``Total Op Info``)."""
        out: dict[str, Any] = {}
        first = min((s["first"] for s in self.ops.values()), default=0.0)
        for name, s in self.ops.items():
            out[f"{name}@{GROUP}"] = self._opinfo(s["first"], s["total"], s["bytes"], s["large"],
                                                  s["n"], s["sizes"], link)
        ops = self.ops.values()
        out["Total Op Info"] = self._opinfo(
            first, sum(s["total"] for s in ops), sum(s["bytes"] for s in ops),
            sum(s["large"] for s in ops), sum(s["n"] for s in ops), {}, link)
        return out

    def matrix(self, link: str, rank: int, rank_size: int) -> dict[str, Any]:
        """msprof ``analyze/communication_matrix.json`` (flat)."""
        out: dict[str, Any] = {}
        peers = [rank] if rank_size <= 1 else [rank, (rank + 1) % rank_size]
        for name, s in self.ops.items():
            links = {}
            for dst in peers:
                local = dst == rank
                size_mb = 0.0 if local else s["bytes"] / 1e6
                t_ms = 0.0 if local else s["total"] / 1000
                links[f"{rank}-{dst}"] = {
                    "Transport Type": "LOCAL" if local else link,
                    "Transit Size(MB)": round(size_mb, 6),
                    "Transit Time(ms)": round(t_ms, 6),
                    "Bandwidth(GB/s)": round(size_mb / t_ms, 6) if t_ms > 0 else 0,
                    "Op Name": name,
                    "Large Packet Ratio": round(s["large"] / s["n"], 6) if s["n"] else 0,
                }
            out[f"{name}@{GROUP}"] = links
        return out
