"""sys_* frequencies: *modelled* device samplers over the simulated device timeline.

A simulator has no hardware counters, so each ``sys_*`` option drives a sampler that cuts the
device timeline into windows of ``1 / freq`` seconds (exactly the requested rate) and reports
what the task stream implies for each window: bytes moved by compute tasks (HBM / LLC),
bytes moved by communication tasks (NIC / RoCE / HCCS / PCIe / ... - the product's declared
``sys_io_targets`` and ``interconnect_targets``), and busy time (AI Core utilisation for
instruction profiling). DVPP has no work in the model and reports 0. Windows are flushed as the
timeline advances, so memory stays bounded.
"""

from __future__ import annotations

from collections.abc import Iterator

from geplug.profiling.rawlog import RawLog

__all__ = ["SAMPLER_ITEMS", "WindowSampler", "sample_columns", "sample_values"]

SAMPLER_ITEMS = {
    "sys_hardware_mem_freq": "memory",
    "sys_io_sampling_freq": "io",
    "sys_interconnection_freq": "interconnect",
    "dvpp_freq": "dvpp",
    "instr_profiling_freq": "instr",
}
"""Frequency option -> sampler kind."""


class WindowSampler:
    """Aggregates task work into fixed windows and appends one record per window."""

    def __init__(self, option: str, freq: int, log: RawLog) -> None:
        self.option = option
        self.freq = freq
        self.period = 1e6 / freq
        self.log = log
        self._open: dict[int, list[float]] = {}
        self._next: int | None = None
        self.samples = 0

    def add(self, start: float, dur: float, nbytes: float, comm: bool) -> None:
        """Spread one task's work over the windows it covers."""
        period = self.period
        first = int(start // period)
        if self._next is None:
            self._next = first
        self._flush_before(first)
        end = start + dur
        last = int(end // period)
        if dur <= 0 or last == first:
            w = self._open.setdefault(first, [0.0, 0.0, 0.0])
            w[1 if comm else 0] += nbytes
            w[2] += dur
            return
        for idx in range(first, last + 1):
            lo = max(start, idx * period)
            hi = min(end, (idx + 1) * period)
            if hi <= lo:
                continue
            share = (hi - lo) / dur
            w = self._open.setdefault(idx, [0.0, 0.0, 0.0])
            w[1 if comm else 0] += nbytes * share
            w[2] += hi - lo

    def advance(self, time_us: float) -> None:
        """The timeline reached ``time_us`` (a step end): windows before it are complete."""
        if self._next is None:
            self._next = int(time_us // self.period)
        self._flush_before(int(time_us // self.period))

    def _flush_before(self, idx: int) -> None:
        assert self._next is not None
        while self._next < idx:
            w = self._open.pop(self._next, None) or [0.0, 0.0, 0.0]
            self.log.write(f"{self._next * self.period!r}\t{w[0]!r}\t{w[1]!r}\t{w[2]!r}\n")
            self.samples += 1
            self._next += 1

    def close(self) -> None:
        """Flush every remaining window."""
        if self._open and self._next is not None:
            self._flush_before(max(self._open) + 1)

    def windows(self) -> Iterator[tuple[float, float, float, float]]:
        """Every window recorded: (start µs, compute bytes, comm bytes, busy µs)."""
        for line in self.log.lines():
            a, b, c, d = line.rstrip("\n").split("\t")
            yield float(a), float(b), float(c), float(d)


def sample_columns(kind: str, targets: tuple[str, ...], llc_mode: str) -> list[str]:
    """CSV value columns of one sampler kind (after ``Device_id, Timestamp(us)``)."""
    if kind == "memory":
        return ["HBM Read(MB/s)", "HBM Write(MB/s)", f"LLC {llc_mode.capitalize()}(MB/s)",
                f"LLC {llc_mode.capitalize()} Hit Rate(%)"]
    if kind in ("io", "interconnect"):
        return [c for t in targets for c in (f"{t} Rx(MB/s)", f"{t} Tx(MB/s)")]
    if kind == "dvpp":
        return ["DVPP Utilization(%)"]
    return ["AI Core Busy(%)"]


def sample_values(kind: str, targets: tuple[str, ...], period_us: float,
                  compute: float, comm: float, busy: float) -> list[float]:
    """Modelled values of one window (MB/s from bytes per window)."""
    per_s = 1e6 / period_us
    if kind == "memory":
        return [compute * 0.6 * per_s / 1e6, compute * 0.4 * per_s / 1e6,
                compute * 0.5 * per_s / 1e6, 85.0 if compute else 0.0]
    if kind in ("io", "interconnect"):
        mbps = comm * per_s / 1e6 / max(1, len(targets))
        return [v for _ in targets for v in (mbps, mbps)]
    if kind == "dvpp":
        return [0.0]
    return [min(100.0, 100.0 * busy / period_us)]

