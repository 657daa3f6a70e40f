"""runtime_api and ge_api: host API calls -> ``api_statistic`` CSV and timeline (formats.md §6.4).

``ApiCall.level`` ``ge``/``node``/``model`` rows are collected when ``ge_api`` is on (l0/l1),
every other level (``runtime``, ``acl``, ...) when ``runtime_api`` is on. Statistics are kept
as bounded per-API aggregates; each call is also appended to a raw stream for the timeline.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from geplug.profiling.layout import fmt
from geplug.profiling.rawlog import RawLog

if TYPE_CHECKING:
    from geplug.events import ApiCall

__all__ = ["GE_LEVELS", "HEADER", "ApiCollector"]

HEADER = ["Device_id", "Level", "API Name", "Time(us)", "Count", "Avg(us)", "Min(us)",
          "Max(us)", "Variance"]
GE_LEVELS = frozenset({"ge", "node", "model"})


class ApiCollector:
    """Per (level, API) count/total/min/max/sum of squares, plus the raw call stream."""

    def __init__(self, log: RawLog, *, runtime_api: bool, ge_api: bool) -> None:
        self.log = log
        self.runtime_api = runtime_api
        self.ge_api = ge_api
        self.stats: dict[tuple[str, str], list[float]] = {}

    def wants(self, level: str) -> bool:
        """Whether calls of ``level`` are collected."""
        return self.ge_api if level in GE_LEVELS else self.runtime_api

    def on_call(self, ev: ApiCall, start_ns: int | None = None) -> None:
        """Record one call (``start_ns``: its absolute start in integer ns, exact; else
        taken from ``ev.start_us``)."""
        if start_ns is None:
            start_ns = round(ev.start_us * 1000)
        self.on_values(ev.level, ev.name, start_ns, ev.duration_us)

    def on_values(self, level: str, name: str, start_ns: int, d: float) -> None:
        """Record one call from its values (``d``: duration in µs)."""
        if not self.wants(level):
            return
        s = self.stats.get((level, name))
        if s is None:
            self.stats[(level, name)] = [1, d, d, d, d * d]
        else:
            s[0] += 1
            s[1] += d
            s[2] = min(s[2], d)
            s[3] = max(s[3], d)
            s[4] += d * d
        self.log.write(f"{level}\t{name}\t{start_ns}\t{round(d * 1000)}\n")

    def rows(self) -> Iterator[list[str]]:
        """api_statistic rows, most total time first (Device_id ``host``: host-side calls)."""
        for (level, name), (n, total, lo, hi, sq) in sorted(
            self.stats.items(), key=lambda kv: -kv[1][1]
        ):
            mean = total / n
            var = max(0.0, sq / n - mean * mean)
            yield ["host", level, name, fmt(total), str(int(n)), fmt(mean), fmt(lo), fmt(hi),
                   fmt(var)]

    def calls(self) -> Iterator[tuple[str, str, int, int]]:
        """Every recorded call (level, name, start ns since the epoch, duration ns)."""
        for line in self.log.lines():
            level, name, start, dur = line.rstrip("\n").split("\t")
            yield level, name, int(start), int(dur)
