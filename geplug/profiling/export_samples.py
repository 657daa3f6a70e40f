"""Export of the sampled series: modelled device samplers and real host samples -> CSV + timeline.

Part of the shutdown pass of :mod:`geplug.profiling.export`: each ``sys_*`` sampler gives one
CSV (``hbm_llc``, ``sys_io``, ``interconnect``, ``dvpp``, ``instr_profiling``) with the
product's declared targets as columns, and each host item its psutil series; every sample is
also a counter event (``ph: C``) of the timeline. Files are atomic (complete or absent).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING

from geplug.profiling.device_samplers import sample_columns, sample_values
from geplug.profiling.host_sampler import ITEMS as HOST_ITEMS
from geplug.profiling.layout import AtomicFile, fmt
from geplug.profiling.timeline import TimelineWriter

if TYPE_CHECKING:
    from geplug.profiling.session import ProfilingSession

__all__ = ["SAMPLER_STEMS", "CsvFile", "host_files", "sampler_files"]

SAMPLER_STEMS = {"memory": "hbm_llc", "io": "sys_io", "interconnect": "interconnect",
                 "dvpp": "dvpp", "instr": "instr_profiling"}
"""Sampler kind -> the CSV stem in ``mindstudio_profiler_output``."""


class CsvFile:
    """An atomic CSV file opened inside an ExitStack."""

    def __init__(self, stack: ExitStack, path: str, header: list[str],
                 written: list[str]) -> None:
        self.handle = stack.enter_context(AtomicFile(path, newline=""))
        self.writer = csv.writer(self.handle, lineterminator="\n")
        self.writer.writerow(header)
        self.writerow = self.writer.writerow
        written.append(path)


def _targets(session: ProfilingSession, kind: str) -> tuple[str, ...]:
    """The product's declared targets of a sampler kind (columns of its CSV)."""
    caps = session.product.profiling
    if kind == "io":
        return caps.sys_io_targets
    if kind == "interconnect":
        return caps.interconnect_targets
    return ()


def sampler_files(session: ProfilingSession, stack: ExitStack, path: Callable[[str], str],
                  timeline: TimelineWriter, written: list[str]) -> None:
    """One CSV per modelled device sampler, and its counter track (the memory sampler's
    npu_mem and npu_module_mem come from the memory plans: ``memory_records``)."""
    dev = str(session.device_id)
    for kind, sampler in session.samplers:
        targets = _targets(session, kind)
        cols = sample_columns(kind, targets, session.eff.llc_profiling)
        stem = SAMPLER_STEMS[kind]
        out = CsvFile(stack, path(stem), ["Device_id", "Timestamp(us)", *cols], written)
        for start, compute, comm, busy in sampler.windows():
            values = sample_values(kind, targets, sampler.period, compute, comm, busy)
            out.writerow([dev, fmt(start), *(fmt(v) for v in values)])
            timeline.counter(stem.upper(), start, dict(zip(cols, values, strict=True)))


def host_files(session: ProfilingSession, stack: ExitStack, path: Callable[[str], str],
               timeline: TimelineWriter, written: list[str]) -> None:
    """One CSV per collected host item (psutil samples), and its counter track."""
    items = session.host.items
    if not items:
        return
    writers = {item: CsvFile(stack, path(HOST_ITEMS[item][0]), HOST_ITEMS[item][1], written)
               for item in items}
    for line in session.host.log.lines():
        sample = json.loads(line)
        for item, out in writers.items():
            stem, cols, keys = HOST_ITEMS[item]
            if keys[0] not in sample:
                continue
            out.writerow([f"{sample['ts']:.3f}", *(f"{sample[k]:.3f}" for k in keys)])
            timeline.counter(stem, sample["ts"],
                             {c: sample[k] for c, k in zip(cols[1:], keys, strict=True)})
