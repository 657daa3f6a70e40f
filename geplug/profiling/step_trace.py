"""training_trace: FP start, BP end and iteration end per step (options.md §3.3, formats.md §6.4).

``fp_point`` / ``bp_point`` empty: automatic - the first compute task of the step starts the
forward pass, the last compute task ends the backward pass. Named: the first execution of the
named op in the step / the end of its last execution; a name that is not an op of the compiled
graph is a :class:`~geplug.errors.ProfilingError` at compile time. Derived times follow
msprof: Iteration Time = iteration end - previous iteration end (first step: - FP start);
FP to BP = BP end - FP start; Iteration Refresh = iteration end - BP end; Data Aug Bound =
FP start - previous iteration end (``N/A`` on the first step). Iteration ID = step + 1.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

from geplug.errors import ProfilingError
from geplug.profiling.layout import fmt_ns, us_to_ns
from geplug.profiling.rawlog import RawLog

if TYPE_CHECKING:
    from geplug.events import GraphEvent, StepEvent

__all__ = [
    "HEADER",
    "StepTraceCollector",
    "check_fp_bp",
    "write_track",
]

HEADER = [
    "Device_id", "Iteration ID", "FP Start(us)", "BP End(us)", "Iteration End(us)",
    "Iteration Time(us)", "FP to BP Time(us)", "Iteration Refresh(us)", "Data Aug Bound(us)",
    "Model ID", "Reduce Start(us)", "Reduce Duration(us)",
]



def check_fp_bp(ev: GraphEvent, fp_point: str, bp_point: str) -> None:
    """Raise :class:`ProfilingError` when a named fp/bp op is not in the compiled graph."""
    names = [op.name for op in ev.ops]
    known = set(names)
    for key, value in (("fp_point", fp_point), ("bp_point", bp_point)):
        if value and value not in known:
            close = difflib.get_close_matches(value, names, n=3)
            more = " ..." if len(names) > 8 else ""
            hint = ("did you mean " + " or ".join(repr(c) for c in close) + "?") if close \
                else f"the graph's ops are {', '.join(names[:8])}{more}"
            raise ProfilingError(
                f"profiling_options.{key} = {value!r} is not an op of model "
                f"{ev.run.model_name!r} (model id {ev.run.model_id}): {hint}; set it to an "
                "op name of the graph, or to \"\" for automatic detection"
            )


class StepTraceCollector:
    """Tracks the open step of each model and appends one record per finished step."""

    def __init__(self, log: RawLog, fp_point: str, bp_point: str) -> None:
        self.log = log
        self.fp_point = fp_point
        self.bp_point = bp_point
        self._open: dict[int, dict[str, Any]] = {}
        self._prev_end: dict[int, int] = {}

    def on_graph(self, ev: GraphEvent) -> None:
        """Check that named fp/bp ops exist in the compiled graph."""
        check_fp_bp(ev, self.fp_point, self.bp_point)

    def on_step(self, ev: StepEvent, time_ns: int | None = None) -> None:
        """Open or close the step of ``ev.run.model_id`` (``time_ns``: the boundary in exact
        integer ns since the epoch; else taken from ``ev.time_us``)."""
        t = us_to_ns(ev.time_us) if time_ns is None else time_ns
        self.on_bound(ev.run.model_id, ev.run.step, ev.phase, t)

    def on_bound(self, model: int, step: int, phase: str, t: int) -> None:
        """A step boundary of ``model`` at ``t`` (integer ns since the epoch)."""
        if phase == "begin":
            self._open[model] = {"step": step, "begin": t, "fp": None,
                                 "bp": None, "rs": None, "rd": None}
            return
        state = self._open.pop(model, None)
        if state is None:
            return
        state["end"] = t
        state["prev"] = self._prev_end.get(model)
        state["model"] = model
        self._prev_end[model] = t
        self.log.write(json.dumps(state) + "\n")

    def on_task(self, model: int, name: str, start: int, dur: int, comm: bool) -> None:
        """Feed one task of the open step: ``start`` (ns since the epoch) and ``dur`` (ns),
        integers, so every derived time is exact."""
        state = self._open.get(model)
        if state is None:
            return
        if comm:
            if state["rs"] is None:
                state["rs"], state["rd"] = start, dur
            return
        if self.fp_point:
            if state["fp"] is None and name == self.fp_point:
                state["fp"] = start
        elif state["fp"] is None:
            state["fp"] = start
        if not self.bp_point or name == self.bp_point:
            state["bp"], state["bpd"] = start, dur

    def _records(self) -> Iterator[dict[str, Any]]:
        """Every finished step as recorded, parsed a block of lines at a time (one C-level
        ``json.loads`` per block instead of one per step)."""
        block: list[str] = []
        for line in self.log.lines():
            block.append(line)
            if len(block) >= _BLOCK:
                yield from json.loads("[" + ",".join(block) + "]")
                block = []
        if block:
            yield from json.loads("[" + ",".join(block) + "]")

    def spans(self) -> Iterator[dict[str, Any]]:
        """Each finished step in integer ns: step, model, fp, bp, end, prev (None = absent)."""
        for s in self._records():
            bp = None if s["bp"] is None else s["bp"] + s.get("bpd", 0)
            yield {"step": s["step"], "model": s["model"], "fp": s["fp"], "bp": bp,
                   "end": s["end"], "prev": s["prev"], "begin": s["begin"]}

    def rows(self, device_id: int) -> Iterator[list[str]]:
        """The step_trace CSV rows, in step order as recorded."""
        for s in self._records():
            fp, end, prev = s["fp"], s["end"], s["prev"]
            bp = None if s["bp"] is None else s["bp"] + s.get("bpd", 0)
            assert end is not None
            base = prev if prev is not None else (fp if fp is not None else s["begin"])
            assert base is not None
            yield [
                str(device_id), str(s["step"] + 1), _na(fp), _na(bp), fmt_ns(end),
                fmt_ns(end - base),
                "N/A" if fp is None or bp is None else fmt_ns(bp - fp),
                "N/A" if bp is None else fmt_ns(end - bp),
                "N/A" if prev is None or fp is None else fmt_ns(fp - prev),
                str(s["model"]),
                _na(s["rs"]),
                _na(s["rd"]),
            ]

    def write_csv(self, fh: IO[str], device_id: int) -> None:
        """The step_trace CSV (header and rows) into ``fh``: every cell is a number or
        ``N/A``, so a row is its cells joined by commas (what the csv module writes for
        them), written a block at a time."""
        fh.write(",".join(HEADER) + "\n")
        lines: list[str] = []
        for row in self.rows(device_id):
            lines.append(",".join(row))
            if len(lines) >= _BLOCK:
                fh.write("\n".join(lines) + "\n")
                lines = []
        if lines:
            fh.write("\n".join(lines) + "\n")


def _na(value: int | None) -> str:
    return "N/A" if value is None else fmt_ns(value)


_BLOCK = 4096
"""Steps parsed and formatted per block (bounds memory)."""
_SPAN = ('{"ph":"X","name":"%s %d","pid":%d,"tid":%d,"ts":"%s","dur":%r,'
         '"args":{"Iteration ID":%d,"Model ID":%d}}')
"""One Step Trace event exactly as :meth:`TimelineWriter.span` encodes it (the names are
ASCII literals, so no JSON escaping is needed)."""


def write_track(timeline: Any, steps: StepTraceCollector) -> None:
    """The ``Step Trace`` timeline process (training_trace on): per model one thread with
    ``Iteration {n}`` spanning the iteration, and nested in it ``Data_aug Bound {n}``
    (previous end -> FP start), ``FP_BP Time {n}`` (FP start -> BP end) and ``Iteration
    Refresh {n}`` (BP end -> iteration end); all from integer ns, so they nest exactly.
    Events are formatted from one template and appended a block at a time; the process and
    thread metadata come first, as :meth:`TimelineWriter.span` writes them."""
    pid = 0
    seen: set[int] = set()
    events: list[str] = []

    def add(name: str, n: int, model: int, start: int, end: int) -> None:
        events.append(_SPAN % (name, n, pid, model, fmt_ns(start), (end - start) / 1000, n,
                               model))

    for s in steps.spans():
        n = s["step"] + 1
        model = int(s["model"])
        if model not in seen:
            seen.add(model)
            flush(timeline, events)
            pid = timeline.thread(PROCESS, model, f"Model {model}")
        fp, bp, end, prev = s["fp"], s["bp"], s["end"], s["prev"]
        first = prev if prev is not None else (fp if fp is not None else s["begin"])
        add("Iteration", n, model, first, end)
        if prev is not None and fp is not None and fp >= prev:
            add("Data_aug Bound", n, model, prev, fp)
        if fp is not None and bp is not None and bp >= fp:
            add("FP_BP Time", n, model, fp, bp)
        if bp is not None and end >= bp:
            add("Iteration Refresh", n, model, bp, end)
        if len(events) >= _BLOCK:
            flush(timeline, events)
    flush(timeline, events)


def flush(timeline: Any, events: list[str]) -> None:
    """Append the formatted ``events`` to the timeline and empty the list."""
    if events:
        timeline.raw_block(",\n" + ",\n".join(events), len(events))
        events.clear()


PROCESS = "Step Trace"
