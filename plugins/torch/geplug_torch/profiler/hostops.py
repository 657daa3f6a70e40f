"""The framework ops of a collection on the host track (``aten::*``, cat ``cpu_op``).

geplug does not time the host per op: each framework op is placed at the start of the device
task it launched (the simulated device clock), and lasts until that task ends or the next
framework op begins, whichever comes first - so framework ops never nest in one another (the
analysers, e.g. msprof-analyze compare's operator tree, nest an op under another when it
starts before the other ends). Two ops whose tasks start together (tasks on different
streams) are one nanosecond apart. ``trace_view.json`` and the database use the same spans.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from geplug_torch.profiler.profile import Collection

__all__ = ["HostOp", "host_ops", "ns"]


def ns(base_us: int, start_us: float) -> int:
    """A device-clock time (µs after ``base_us``) as integer ns since the epoch."""
    return base_us * 1000 + round(start_us * 1000)


@attrs.frozen
class HostOp:
    """One framework op: its graph op, run, its task's start and its host span (ns)."""

    op: Any
    run: Any
    kernel_ns: int
    begin_ns: int
    end_ns: int


def host_ops(c: Collection) -> list[HostOp]:
    """Every framework op of ``c`` in start order (see the module docstring): one per aten
    call, at its first kernel, lasting to its last kernel's end (an aten call run as several
    kernels, ``convolution_backward``'s gradients, is one framework op; so is a call with the
    TransData torch_npu casts a format with inside it, which is then its first kernel: the
    TransData's graph op carries the call's aten op and arguments)."""
    first: dict[tuple[int, str], tuple[int, int, int, Any, Any]] = {}
    last_end: dict[tuple[int, str], int] = {}
    for i, run in enumerate(c.runs):
        for j, (op, start) in enumerate(zip(run.graph.ops, run.starts, strict=True)):
            k = ns(run.base_us, start)
            key = (i, getattr(op, "call", "") or f"#{j}")
            if key not in first or k < first[key][0]:
                first[key] = (k, i, j, run, op)
            last_end[key] = max(last_end.get(key, 0), k + round(op.duration_us * 1000))
    items = sorted(((*v, last_end[key]) for key, v in first.items()),
                   key=lambda t: (t[0], t[1], t[2]))
    begins: list[int] = []
    for k, *_ in items:
        begins.append(k if not begins or k > begins[-1] else begins[-1] + 1)
    out = []
    for n, (k, _i, _j, run, op, end) in enumerate(items):
        if n + 1 < len(begins):
            end = min(end, begins[n + 1] - 1)
        out.append(HostOp(op=op, run=run, kernel_ns=k, begin_ns=begins[n],
                          end_ns=max(end, begins[n])))
    return out
