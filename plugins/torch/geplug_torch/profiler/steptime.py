"""Per profiled step: its compute and communication intervals and step_trace_time's columns.

torch_npu derives ``step_trace_time.csv`` and the timeline's ``Overlap Analysis`` process
from the device tasks of each ``ProfilerStep``: Computing is the union of the compute
kernels' intervals, Communication the union of the communication ops' (each from its start
on the communication stream, waits included, to its end), Communication(Not Overlapped) the
communication no kernel runs beside, Overlapped the rest of Communication, Bubble the
receive ops (``hcom_receive*``), Stage the step less its bubble, Preparing the time from
the step's start to its first task. Free is the rest of the step: every instant of the
step is exactly one of Computing, Communication(Not Overlapped) or Free, so the three add
up to the step's time (its makespan on the device, from its begin to its end mark, which
includes the optimizer's modelled update). Intervals are integer nanoseconds, merged with
the core's interval arithmetic (:mod:`geplug.profiling.overlap`), so the CSV and the
timeline give the same numbers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs
import numpy as np

from geplug.profiling.layout import fmt_ns
from geplug.profiling.overlap import merge, subtract

if TYPE_CHECKING:
    from geplug_torch.profiler.profile import Collection

__all__ = ["StepTime", "ns", "step_times"]

_RECEIVE = "hcom_receive"


def ns(base_us: int, t_us: float) -> int:
    """A device-clock time (µs after ``base_us``) as epoch nanoseconds."""
    return base_us * 1000 + round(t_us * 1000)


def _total(iv: np.ndarray) -> int:
    return int((iv[:, 1] - iv[:, 0]).sum()) if len(iv) else 0


def _array(spans: list[tuple[int, int]]) -> np.ndarray:
    return merge(np.asarray(sorted(spans), dtype=np.int64).reshape(-1, 2))


@attrs.frozen
class StepTime:
    """One step's interval sets (merged, ns) and its span."""

    step: int
    begin_ns: int
    end_ns: int
    first_task_ns: int
    computing: np.ndarray = attrs.field(eq=False)
    communication: np.ndarray = attrs.field(eq=False)
    not_overlapped: np.ndarray = attrs.field(eq=False)
    free: np.ndarray = attrs.field(eq=False)
    bubble: np.ndarray = attrs.field(eq=False)

    def columns(self) -> dict[str, int]:
        """step_trace_time.csv's time columns (ns), in the file's order."""
        comm, not_ov, bubble = (_total(self.communication), _total(self.not_overlapped),
                                _total(self.bubble))
        span = self.end_ns - self.begin_ns
        return {
            "Computing": _total(self.computing), "Communication(Not Overlapped)": not_ov,
            "Overlapped": comm - not_ov, "Communication": comm, "Free": _total(self.free),
            "Stage": span - bubble, "Bubble": bubble,
            "Communication(Not Overlapped and Exclude Receive)": not_ov - bubble,
            "Preparing": max(self.first_task_ns - self.begin_ns, 0),
        }

    def row(self, device_id: int) -> list[str]:
        """The step's step_trace_time.csv row (µs)."""
        return [str(device_id), str(self.step),
                *(fmt_ns(v) if v else "0" for v in self.columns().values())]

    def tracks(self) -> dict[str, np.ndarray]:
        """The Overlap Analysis thread name -> this step's intervals."""
        return {"Computing": self.computing, "Communication": self.communication,
                "Communication(Not Overlapped)": self.not_overlapped, "Free": self.free}


def step_times(c: Collection) -> dict[int, StepTime]:
    """Every step of the collection that has a boundary or a task, by step id."""
    marks: dict[int, list[int]] = {}
    for m in c.steps:
        t = ns(m.base_us, m.time_us)
        s = marks.setdefault(m.step, [t, t])
        s[0], s[1] = min(s[0], t), max(s[1], t)
    compute: dict[int, list[tuple[int, int]]] = {}
    for run in c.runs:
        spans = compute.setdefault(run.step, [])
        for op, start in zip(run.graph.ops, run.starts, strict=True):
            t = ns(run.base_us, start)
            spans.append((t, t + round(op.duration_us * 1000)))
    comm: dict[int, list[tuple[int, int]]] = {}
    receive: dict[int, list[tuple[int, int]]] = {}
    for r in c.comms:
        iv = (ns(r.base_us, r.start_us), ns(r.base_us, r.end_us))
        comm.setdefault(r.step, []).append(iv)
        if r.name.startswith(_RECEIVE):
            receive.setdefault(r.step, []).append(iv)
    out: dict[int, StepTime] = {}
    for step in sorted(set(marks) | set(compute) | set(comm)):
        comp = _array(compute.get(step, []))
        com = _array(comm.get(step, []))
        busy = merge(np.concatenate([comp, com])) if len(comp) and len(com) else \
            (comp if len(comp) else com)
        first = int(busy[0, 0]) if len(busy) else 0
        last = int(busy[-1, 1]) if len(busy) else 0
        begin, end = marks.get(step, [first, last])
        begin = min(begin, first) if len(busy) else begin
        end = max(end, last)
        span = np.array([[begin, end]], dtype=np.int64) if end > begin else \
            np.zeros((0, 2), dtype=np.int64)
        out[step] = StepTime(
            step=step, begin_ns=begin, end_ns=end, first_task_ns=first if len(busy) else begin,
            computing=comp, communication=com, not_overlapped=subtract(com, comp),
            free=subtract(span, busy), bubble=_array(receive.get(step, [])))
    return out
