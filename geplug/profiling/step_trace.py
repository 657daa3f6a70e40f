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

import numpy as np

from geplug.errors import ProfilingError
from geplug.profiling.layout import fmt_ns, us_to_ns
from geplug.profiling.rawlog import RawLog
from geplug.profiling.textfill import BlockFormatter, write_pieces

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
        """Every finished step as recorded."""
        for block in self._blocks():
            yield from block

    def _blocks(self) -> Iterator[list[dict[str, Any]]]:
        """The finished steps a block at a time, parsed by one C-level ``json.loads`` per
        block instead of one per step."""
        block: list[str] = []
        for line in self.log.lines():
            block.append(line)
            if len(block) >= _BLOCK:
                yield json.loads("[" + ",".join(block) + "]")
                block = []
        if block:
            yield json.loads("[" + ",".join(block) + "]")

    def spans(self) -> Iterator[dict[str, Any]]:
        """Each finished step in integer ns: step, model, fp, bp, end, prev (None = absent)."""
        for s in self._records():
            bp = None if s["bp"] is None else s["bp"] + s.get("bpd", 0)
            yield {"step": s["step"], "model": s["model"], "fp": s["fp"], "bp": bp,
                   "end": s["end"], "prev": s["prev"], "begin": s["begin"]}

    def rows(self, device_id: int) -> Iterator[list[str]]:
        """The step_trace CSV rows, in step order as recorded."""
        for block in self._blocks():
            yield from _rows(block, device_id)

    def write_csv(self, fh: IO[str], device_id: int) -> None:
        """The step_trace CSV (header and rows) into ``fh``: every cell is a number or
        ``N/A``, so a row is its cells joined by commas (what the csv module writes for
        them). A block of steps is rendered by numpy from one template per pattern of
        ``N/A`` and negative cells (:mod:`~geplug.profiling.textfill`)."""
        fh.write(",".join(HEADER) + "\n")
        fmt = BlockFormatter([])
        patterns: dict[int, int] = {}
        for block in self._blocks():
            arr = _arrays(block)
            base = np.where(arr["has_prev"], arr["prev"],
                            np.where(arr["has_fp"], arr["fp"], arr["begin"]))
            cells = np.column_stack((arr["fp"], arr["bp"], arr["end"], arr["end"] - base,
                                     arr["bp"] - arr["fp"], arr["end"] - arr["bp"],
                                     arr["fp"] - arr["prev"], arr["rs"], arr["rd"]))
            shown = np.column_stack((arr["has_fp"], arr["has_bp"], arr["ones"], arr["ones"],
                                     arr["has_fp"] & arr["has_bp"], arr["has_bp"],
                                     arr["has_prev"] & arr["has_fp"], arr["has_rs"],
                                     arr["has_rd"]))
            cells = np.where(shown, cells, 0)
            if bool((arr["step"] < -1).any()) or bool((arr["model"] < 0).any()):
                fh.write("".join(",".join(row) + "\n" for row in _rows(block, device_id)))
                continue
            negative = cells < 0  # a step end before its last task's end: "-0.128"
            cells = np.abs(cells)
            codes = ((shown.astype(np.int64) << np.arange(9)).sum(axis=1) |
                     (negative.astype(np.int64) << np.arange(9, 18)).sum(axis=1))
            uniq, inverse = np.unique(codes, return_inverse=True)
            for code in uniq.tolist():
                if code not in patterns:
                    patterns[code] = len(patterns)
                    fmt.put(patterns[code], _csv_template(device_id, code))
            idx = np.array([patterns[c] for c in uniq.tolist()], dtype=np.int64)[inverse]
            whole, frac = cells // 1000, cells % 1000
            vals = np.column_stack((arr["step"] + 1, whole[:, 0], frac[:, 0], whole[:, 1],
                                    frac[:, 1], whole[:, 2], frac[:, 2], whole[:, 3],
                                    frac[:, 3], whole[:, 4], frac[:, 4], whole[:, 5],
                                    frac[:, 5], whole[:, 6], frac[:, 6], arr["model"],
                                    whole[:, 7], frac[:, 7], whole[:, 8], frac[:, 8]))
            write_pieces(fh, fmt.pieces(idx, vals))


def _csv_template(device_id: int, code: int) -> str:
    """The %-template of a step_trace row whose shown cells are bits 0-8 of ``code`` and
    negative cells bits 9-17 (their absolute value is filled in)."""
    cell = [("-" if code >> (i + 9) & 1 else "") + "%d.%03d" if code >> i & 1
            else "N/A%.0s%.0s" for i in range(9)]
    return ",".join([str(device_id), "%d", *cell[:7], "%d", *cell[7:]]) + "\n"


def _arrays(block: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """The columns of a block of step records as integer arrays (0 where absent, with a
    ``has_`` mask for the optional ones); ``bp`` is the BP end."""
    out: dict[str, np.ndarray] = {}
    for key in ("fp", "prev", "rs", "rd"):
        raw = [r[key] for r in block]
        out["has_" + key] = np.array([x is not None for x in raw], dtype=bool)
        out[key] = np.array([0 if x is None else x for x in raw], dtype=np.int64)
    raw = [None if r["bp"] is None else r["bp"] + r.get("bpd", 0) for r in block]
    out["has_bp"] = np.array([x is not None for x in raw], dtype=bool)
    out["bp"] = np.array([0 if x is None else x for x in raw], dtype=np.int64)
    for key in ("end", "begin", "step", "model"):
        out[key] = np.array([int(r[key]) for r in block], dtype=np.int64)
    out["ones"] = np.ones(len(block), dtype=bool)
    return out


def _rows(block: list[dict[str, Any]], device_id: int) -> Iterator[list[str]]:
    """The step_trace CSV rows of ``block``, cell by cell."""
    for s in block:
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
    A block of steps is rendered by numpy (:mod:`~geplug.profiling.textfill`) from one
    template per event kind and printed length of ``dur`` (the shortest repr of a float
    of µs, as :meth:`TimelineWriter.span` writes it); a block with a negative or huge
    duration goes through the per-event template. The process and thread metadata come
    first, as :meth:`TimelineWriter.span` writes them."""
    seen: set[int] = set()
    track = _Track()
    for block in steps._blocks():
        models = [int(r["model"]) for r in block]
        lo = 0
        for i, model in enumerate(models):
            if model not in seen:  # a new model: its thread metadata before its events
                track.write(timeline, block[lo:i])
                lo = i
                seen.add(model)
                track.pid = timeline.thread(PROCESS, model, f"Model {model}")
        track.write(timeline, block[lo:])


_KINDS = ("Iteration", "Data_aug Bound", "FP_BP Time", "Iteration Refresh")
_DUR_FRAC = ("%d.0%.0s", "%d.%01d", "%d.%02d", "%d.%03d")
"""``dur`` as ``repr(ns / 1000)`` prints it, by the number of its non-zero decimals."""
_REPR_EXACT = 10 ** 15
"""Durations (ns) below this print as their exact decimal (at most 15 digits)."""


class _Track:
    """Renders Step Trace events a block of steps at a time."""

    def __init__(self) -> None:
        self.pid = 0
        self.fmt = BlockFormatter([])
        self._tpl: dict[tuple[int, int, int], int] = {}

    def write(self, timeline: Any, block: list[dict[str, Any]]) -> None:
        if not block:
            return
        arr = _arrays(block)
        fp, bp, end, prev = arr["fp"], arr["bp"], arr["end"], arr["prev"]
        has_fp, has_bp, has_prev = arr["has_fp"], arr["has_bp"], arr["has_prev"]
        first = np.where(has_prev, prev, np.where(has_fp, fp, arr["begin"]))
        starts = np.column_stack((first, prev, fp, bp))
        ends = np.column_stack((end, fp, bp, end))
        shown = np.column_stack((arr["ones"], has_prev & has_fp & (fp >= prev),
                                 has_fp & has_bp & (bp >= fp), has_bp & (end >= bp)))
        dur = ends - starts
        if bool(((dur < 0) & shown).any()) or bool(((dur >= _REPR_EXACT) & shown).any()) \
                or bool((starts[shown] < 0).any()) or bool((arr["step"] < -1).any()):
            self._slow(timeline, block)
            return
        keep = shown.ravel()
        n = np.repeat(arr["step"] + 1, 4)[keep]
        model = np.repeat(arr["model"], 4)[keep]
        st = starts.ravel()[keep]
        d = dur.ravel()[keep]
        kind = np.tile(np.arange(4), len(block))[keep]
        frac = d % 1000
        digits = np.where(frac == 0, 0, np.where(frac % 100 == 0, 1,
                                                 np.where(frac % 10 == 0, 2, 3)))
        shown_frac = frac // np.array([1, 100, 10, 1])[digits]
        idx = np.empty(len(kind), dtype=np.int64)
        codes = kind * 4 + digits
        for code in np.unique(codes).tolist():
            key = (self.pid, code // 4, code % 4)
            if key not in self._tpl:
                self._tpl[key] = len(self._tpl)
                self.fmt.put(self._tpl[key], _span_template(self.pid, *key[1:]))
            idx[codes == code] = self._tpl[key]
        vals = np.column_stack((n, model, st // 1000, st % 1000, d // 1000, shown_frac, n,
                                model))
        first_event = np.concatenate(([0], np.cumsum(shown.sum(axis=1))[:-1]))
        timeline.raw_pieces(self.fmt.pieces(idx, vals, first_event), len(idx))

    def _slow(self, timeline: Any, block: list[dict[str, Any]]) -> None:
        """The block event by event (negative or huge durations)."""
        events: list[str] = []
        for s in block:
            fp = s["fp"]
            bp = None if s["bp"] is None else s["bp"] + s.get("bpd", 0)
            end, prev, n, model = s["end"], s["prev"], s["step"] + 1, int(s["model"])
            first = prev if prev is not None else (fp if fp is not None else s["begin"])
            spans = [("Iteration", first, end)]
            if prev is not None and fp is not None and fp >= prev:
                spans.append(("Data_aug Bound", prev, fp))
            if fp is not None and bp is not None and bp >= fp:
                spans.append(("FP_BP Time", fp, bp))
            if bp is not None and end >= bp:
                spans.append(("Iteration Refresh", bp, end))
            for name, start, stop in spans:
                events.append(_SPAN % (name, n, self.pid, model, fmt_ns(start),
                                       (stop - start) / 1000, n, model))
        flush(timeline, events)


def _span_template(pid: int, kind: int, digits: int) -> str:
    """The %-template of one Step Trace event of ``kind`` whose ``dur`` shows ``digits``
    decimals (values: n, model, ts whole, ts frac, dur whole, dur decimals, n, model)."""
    return (',\n{"ph":"X","name":"' + _KINDS[kind] + ' %d","pid":' + str(pid) +
            ',"tid":%d,"ts":"%d.%03d","dur":' + _DUR_FRAC[digits] +
            ',"args":{"Iteration ID":%d,"Model ID":%d}}')


def flush(timeline: Any, events: list[str]) -> None:
    """Append the formatted ``events`` to the timeline and empty the list."""
    if events:
        timeline.raw_block(",\n" + ",\n".join(events), len(events))
        events.clear()


PROCESS = "Step Trace"
