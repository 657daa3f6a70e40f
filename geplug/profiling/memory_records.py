"""Memory profiling records from the device model's memory plans (msprof's memory data).

What the real stack writes, and under which switch (Ascend/msprof
``docs/en/user_guide/profile_data_file_references_db.md`` and ``..._references.md``):

- ``task_memory`` (msprof ``--task-memory``, ``ACL_PROF_TASK_MEMORY``; torch_npu
  ``profile_memory=True``): ``NPU_OP_MEM`` rows - one ``allocate`` and one ``release`` per
  GE-planned tensor (``type`` and ``component`` are ``STRING_IDS`` ids of
  ``allocate``/``release`` and ``GE``; ``size`` positive; ``totalAllocate`` / ``totalReserve``
  the GE pool after the event) - and, from the same events, ``operator_memory_{ts}.csv``
  (allocation paired with release by operator and address) and ``memory_record_{ts}.csv``
  (the pool totals at every event);
- ``sys_hardware_mem_freq``: ``NPU_MEM`` (``app`` and ``device`` rows per sample, ddr and hbm
  bytes) with ``npu_mem_{ts}.csv`` and the ``NPU MEM`` counter track, and ``NPU_MODULE_MEM``
  (per ``ENUM_MODULE`` component) with ``npu_module_mem_{ts}.csv``.

How the plan becomes events (geplug's model; the real GE plans static graphs at compile and
reports them per operator): every step of a model replays its plan
(:class:`~geplug.device.memory.MemoryPlan`) in plan order - a block is allocated when the task
writing it starts (a graph input at the step's begin) and released when the last task reading
it ends (a graph output at the step's end); times never go backwards within a step (a task that
started on another stream before the previous one ended is placed at that end), so the running
total follows the plan and its peak is the plan's activation peak plus the weights. Weights
are allocated at the model's first step and released at its last. The GE pool reserves a
model's weights plus its largest activation peak from its first step on (GE's static memory
is reserved whole, at load). Addresses are a first-fit placement of each plan's blocks in the
model's region: an allocation and its release share one address.
"""

from __future__ import annotations

import bisect
import csv
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from typing import IO, TYPE_CHECKING, Any

import attrs

from geplug.profiling.layout import AtomicFile, fmt, fmt_ns
from geplug.profiling.msprof_db import MODULES

if TYPE_CHECKING:
    from geplug.profiling.device_samplers import WindowSampler
    from geplug.profiling.msprof_db import MsprofDb
    from geplug.profiling.session import ProfilingSession
    from geplug.profiling.timeline import TimelineWriter

__all__ = [
    "MEMORY_RECORD_HEADER",
    "NPU_MEM_HEADER",
    "NPU_MODULE_MEM_HEADER",
    "OPERATOR_MEMORY_HEADER",
    "MemEvent",
    "MemoryCollector",
    "write_memory",
]

OPERATOR_MEMORY_HEADER = [
    "Device_id", "Name", "Size(KB)", "Allocation Time(us)", "Duration(us)",
    "Allocation Total Allocated(KB)", "Allocation Total Reserved(KB)",
    "Release Total Allocated(KB)", "Release Total Reserved(KB)", "Device",
]
"""operator_memory_*.csv (msprof, task_memory): one row per allocation and its release."""
MEMORY_RECORD_HEADER = ["Device_id", "Component", "Timestamp(us)", "Total Allocated(KB)",
                        "Total Reserved(KB)", "Device"]
"""memory_record_*.csv (msprof, task_memory): the GE pool at every allocation and release."""
NPU_MEM_HEADER = ["Device_id", "event", "ddr(KB)", "hbm(KB)", "memory(KB)", "timestamp(us)"]
"""npu_mem_*.csv (msprof, sys_hardware_mem): memory held per sample, app and device level."""
NPU_MODULE_MEM_HEADER = ["Device_id", "Component", "Timestamp(us)", "Total Reserved(KB)",
                         "Device"]
"""npu_module_mem_*.csv (msprof, sys_hardware_mem): memory each component holds."""
COMPONENT = "GE"
"""The component of every operator memory record (msprof collects GE operators only)."""
WORKSPACE_MODULE = "RUNTIME"
"""The component geplug files the product's system workspace under (the public docs name no
component for it)."""
BASE_ADDR = 0x12C0_0000_0000
"""Where the simulated device's model memory starts (an HBM-like virtual address)."""


@attrs.frozen
class MemEvent:
    """One allocation (``size`` > 0) or release (``size`` < 0) of the GE pool."""

    ts_ns: int
    name: str
    addr: int
    size: int
    total_allocated: int
    total_reserved: int


def _first_fit(blocks: Sequence[Any], n_tasks: int) -> list[int]:
    """An offset per block: first fit in plan order (alloc at ``first``, free after
    ``last``), so blocks live at once never overlap and freed space is reused."""
    free: list[tuple[int, int]] = [(0, 1 << 62)]
    offsets = [0] * len(blocks)
    frees: dict[int, list[int]] = {}
    by_first: dict[int, list[int]] = {}
    for k, b in enumerate(blocks):
        by_first.setdefault(b.first, []).append(k)
        frees.setdefault(b.last, []).append(k)
    for i in range(-1, n_tasks + 2):
        for k in by_first.get(i, ()):
            size = max(blocks[k].nbytes, 1)
            for j, (start, length) in enumerate(free):
                if length >= size:
                    offsets[k] = start
                    free[j] = (start + size, length - size)
                    break
        for k in frees.get(i, ()):
            start, size = offsets[k], max(blocks[k].nbytes, 1)
            j = bisect.bisect_left(free, (start, 0))
            free.insert(j, (start, size))
            # merge with the neighbours
            if j + 1 < len(free) and start + size == free[j + 1][0]:
                free[j] = (start, size + free[j + 1][1])
                del free[j + 1]
            if j > 0 and free[j - 1][0] + free[j - 1][1] == start:
                free[j - 1] = (free[j - 1][0], free[j - 1][1] + free[j][1])
                del free[j]
    return offsets


class _Model:
    """One model's plans, their addresses and what the GE pool reserves for it."""

    def __init__(self, plans: Sequence[Any], base: int) -> None:
        self.plans = [p for p in plans if p.liveness is not None]
        self.tasks = [p.tasks for p in self.plans]
        self.blocks = [p.blocks for p in self.plans]
        weights: dict[str, int] = {}
        for p in self.plans:
            for name, nbytes in p.resident:
                weights.setdefault(name, nbytes)
        self.weights = list(weights.items())
        self.weights_bytes = sum(weights.values())
        self.peak = max((p.activation_peak_bytes for p in self.plans), default=0)
        self.workspace = max((p.workspace_bytes for p in self.plans), default=0)
        self.reserve = self.weights_bytes + self.peak
        """What the GE pool holds for the model from its first step on."""
        addr = base
        self.weight_addrs = []
        for _, nbytes in self.weights:
            self.weight_addrs.append(addr)
            addr += max(nbytes, 1)
        self.plan_addrs: list[list[int]] = []
        for tasks, blocks in zip(self.tasks, self.blocks, strict=True):
            offsets = _first_fit(blocks, len(tasks))
            self.plan_addrs.append([addr + o for o in offsets])
            addr += max((o + b.nbytes for o, b in zip(offsets, blocks, strict=True)),
                        default=0)
        self.end_addr = addr


class MemoryCollector:
    """Collects, per model and step, the times of the tasks the memory plans name."""

    def __init__(self) -> None:
        self.models: dict[int, _Model] = {}
        self._next_base = BASE_ADDR
        self._segments: dict[tuple[int, int], list[tuple[Sequence[str], Sequence[int],
                                                        Sequence[int]]]] = {}
        """(model, step) -> the (names, starts, ends) it was given, joined at export."""
        self._times: dict[tuple[int, int], dict[str, tuple[int, int]]] = {}
        self._bounds: dict[tuple[int, int], list[int]] = {}

    def on_graph(self, model_id: int, plans: Sequence[Any]) -> None:
        """A compiled model's memory plans (one per graph: inference, or forward and
        backward)."""
        known = self.models.get(model_id)
        if not plans or (known is not None and len(plans) <= len(known.plans)):
            return
        # a model announced again with more graphs (training: forward, then backward)
        model = _Model(plans, known.weight_addrs[0] if known is not None and
                       known.weight_addrs else self._next_base)
        if model.plans:
            self.models[model_id] = model
            self._next_base = -(-model.end_addr // (1 << 30)) * (1 << 30) + (1 << 30)

    def on_tasks(self, model_id: int, step: int, names: Sequence[str],
                 starts: Sequence[int], ends: Sequence[int]) -> None:
        """Tasks of one step (absolute ns)."""
        if model_id in self.models:
            self._segments.setdefault((model_id, step), []).append((names, starts, ends))

    def _join(self) -> None:
        """Task name -> (start, end) per (model, step): the first execution of a name wins."""
        for key, parts in self._segments.items():
            got = self._times.setdefault(key, {})
            for names, starts, ends in reversed(parts):
                got.update(zip(names, zip(starts, ends, strict=True), strict=True))
        self._segments.clear()

    def on_bound(self, model_id: int, step: int, phase: str, ns: int) -> None:
        """A step boundary of a model (absolute ns)."""
        if model_id in self.models:
            span = self._bounds.setdefault((model_id, step), [ns, ns])
            if phase == "begin":
                span[0] = ns
            else:
                span[1] = ns

    def held_bytes(self) -> dict[int, tuple[int, int]]:
        """Model id -> (GE bytes reserved, workspace bytes)."""
        return {m: (model.reserve, model.workspace) for m, model in self.models.items()}

    # -- the events ----------------------------------------------------------------------

    def _step_span(self, key: tuple[int, int], times: dict[str, tuple[int, int]]
                   ) -> tuple[int, int]:
        lo = min(s for s, _ in times.values())
        hi = max(e for _, e in times.values())
        span = self._bounds.get(key)
        if span is not None:
            lo, hi = min(lo, span[0]), max(hi, span[1])
        return lo, hi

    def _raw(self) -> Iterator[tuple[int, int, int, str, int, int]]:
        """(ts, order, model id, name, addr, signed size) of every event, unsorted."""
        self._join()
        order = 0
        steps_of: dict[int, list[int]] = {}
        for model_id, step in self._times:
            steps_of.setdefault(model_id, []).append(step)
        for model_id, steps in steps_of.items():
            model = self.models[model_id]
            steps.sort()
            first_span = last_span = None
            for step in steps:
                key = (model_id, step)
                times = self._times[key]
                begin, end = self._step_span(key, times)
                if first_span is None:
                    first_span = begin
                    for (name, nbytes), addr in zip(model.weights, model.weight_addrs,
                                                    strict=True):
                        yield begin, order, model_id, name, addr, nbytes
                        order += 1
                last_span = end
                for k, tasks in enumerate(model.tasks):
                    ran = [times[t] for t in tasks if t in times]
                    if not ran:
                        continue
                    lo, hi = begin, end
                    if len(model.plans) > 1:  # each graph's inputs and outputs live in its run
                        lo, hi = min(s for s, _ in ran), max(e for _, e in ran)
                    for ev in _replay(tasks, model.blocks[k], model.plan_addrs[k], times,
                                      lo, hi):
                        yield ev[0], order, model_id, ev[1], ev[2], ev[3]
                        order += 1
            if last_span is not None:
                for (name, nbytes), addr in zip(model.weights, model.weight_addrs,
                                                strict=True):
                    yield last_span, order, model_id, name, addr, -nbytes
                    order += 1

    def events(self) -> list[MemEvent]:
        """Every allocation and release in time order with the pool totals after it."""
        raw = sorted(self._raw(), key=lambda r: (r[0], r[1]))
        total = reserved = 0
        loaded: set[int] = set()
        out = []
        for ts, _, model_id, name, addr, size in raw:
            if model_id not in loaded:
                loaded.add(model_id)
                reserved += self.models[model_id].reserve
            total += size
            out.append(MemEvent(ts, name, addr, size, total, reserved))
        return out


def _replay(tasks: Sequence[str], blocks: Sequence[Any], addrs: list[int],
            times: dict[str, tuple[int, int]], begin: int, end: int
            ) -> Iterator[tuple[int, str, int, int]]:
    """(ts, name, addr, signed size) of one step of a plan, in plan order, times never
    going backwards (module docstring); a block the plan never frees is released at the
    step's end."""
    n = len(tasks)
    allocs: dict[int, list[int]] = {}
    frees: dict[int, list[int]] = {}
    for k, b in enumerate(blocks):
        allocs.setdefault(b.first, []).append(k)
        frees.setdefault(b.last, []).append(k)
    now = begin
    for i in range(-1, n + 2):
        span = times.get(tasks[i]) if 0 <= i < n else None
        if i in allocs:
            t = begin if i < 0 else (span[0] if span is not None else now)
            now = max(now, t)
            for k in allocs[i]:
                b = blocks[k]
                yield now, b.owner, addrs[k], b.nbytes
        if i in frees:
            t = end if i >= n else (span[1] if span is not None else now)
            now = max(now, t)
            for k in frees[i]:
                b = blocks[k]
                yield now, b.owner, addrs[k], -b.nbytes


# -- writing ---------------------------------------------------------------------------------


def _kb(nbytes: float) -> str:
    return fmt(nbytes / 1024.0)


class _Csv:
    """An atomic CSV inside an ExitStack (complete or absent)."""

    def __init__(self, stack: ExitStack, path: str, header: list[str],
                 written: list[str]) -> None:
        self.handle: IO[str] = stack.enter_context(AtomicFile(path, newline=""))
        self.writer = csv.writer(self.handle, lineterminator="\n")
        self.writer.writerow(header)
        written.append(path)


def _op_rows(events: list[MemEvent], dev: str, device: str) -> Iterator[list[str]]:
    """operator_memory rows: each allocation with the release of the same operator and
    address (msprof's pairing); an allocation never released keeps empty Release cells."""
    open_: dict[tuple[str, int], list[MemEvent]] = {}
    rows: list[tuple[int, list[str]]] = []
    pending: dict[int, int] = {}
    for ev in events:
        key = (ev.name, ev.addr)
        if ev.size > 0:
            open_.setdefault(key, []).append(ev)
            pending[id(ev)] = len(rows)
            rows.append((ev.ts_ns, [dev, ev.name, _kb(ev.size), fmt_ns(ev.ts_ns) + "\t", "",
                                    _kb(ev.total_allocated), _kb(ev.total_reserved), "", "",
                                    device]))
        else:
            stack = open_.get(key)
            if not stack:
                continue
            alloc = stack.pop()
            row = rows[pending.pop(id(alloc))][1]
            row[4] = fmt_ns(ev.ts_ns - alloc.ts_ns)
            row[7] = _kb(ev.total_allocated)
            row[8] = _kb(ev.total_reserved)
    for _, row in rows:
        yield row


def write_memory(session: ProfilingSession, stack: ExitStack | None,
                 path: Callable[[str], str], timeline: TimelineWriter | None,
                 db: MsprofDb | None, written: list[str]) -> None:
    """Every memory output of ``session`` (module docstring); nothing when neither
    task_memory nor the memory sampler is on. ``stack`` and ``timeline`` None write only the
    database rows, ``db`` None only the files (the export's database worker and the text
    pass beside it); either way the rows and their strings come in the same order."""
    dev = str(session.device_id)
    device = f"NPU:{session.device_id}"
    collector = session.memory
    if session.eff.task_memory and collector is not None:
        events = collector.events()
        if events and db is not None:
            sid = db.sid
            alloc_id, release_id, ge = sid("allocate"), sid("release"), sid(COMPONENT)
            tid = (session.pid << 32) | 1
            db.add_npu_op_mem(
                (sid(e.name), e.addr, alloc_id if e.size > 0 else release_id, abs(e.size),
                 e.ts_ns, tid, e.total_allocated, e.total_reserved, ge, session.device_id)
                for e in events)
        if events and stack is not None:
            record = _Csv(stack, path("memory_record"), MEMORY_RECORD_HEADER, written)
            record.writer.writerows(
                [dev, COMPONENT, fmt_ns(e.ts_ns) + "\t", _kb(e.total_allocated),
                 _kb(e.total_reserved), device] for e in events)
            op = _Csv(stack, path("operator_memory"), OPERATOR_MEMORY_HEADER, written)
            op.writer.writerows(_op_rows(events, dev, device))
    sampler = next((s for kind, s in session.samplers if kind == "memory"), None)
    if sampler is not None:
        _sampled(session, sampler, stack, path, timeline, db, written)


def _held(session: ProfilingSession) -> tuple[int, int]:
    """(GE bytes, workspace bytes) the device holds for the loaded models."""
    ge = ws = 0
    planned = session.memory.held_bytes() if session.memory is not None else {}
    for model_id, total in session.model_memory.items():
        got = planned.get(model_id)
        if got is None:
            ge += total
        else:
            ge += got[0]
            ws += got[1]
    return ge, ws


def _sampled(session: ProfilingSession, sampler: WindowSampler, stack: ExitStack | None,
             path: Callable[[str], str], timeline: TimelineWriter | None,
             db: MsprofDb | None, written: list[str]) -> None:
    """npu_mem / NPU_MEM / the NPU MEM track and npu_module_mem / NPU_MODULE_MEM at every
    memory-sampler window: the HBM the loaded models hold (the simulated process is the
    device's only one, so the app and device rows agree; DDR is 0 on HBM products)."""
    ge, ws = _held(session)
    if not ge and not ws:
        return
    held = ge + ws
    kb = held / 1024.0
    dev = str(session.device_id)
    device = f"NPU:{session.device_id}"
    npu_mem = module = None
    if stack is not None:
        npu_mem = _Csv(stack, path("npu_mem"), NPU_MEM_HEADER, written)
        module = _Csv(stack, path("npu_module_mem"), NPU_MODULE_MEM_HEADER, written)
    app, dev_type = (db.sid("app"), db.sid("device")) if db is not None else (0, 0)
    mem_rows: list[tuple[Any, ...]] = []
    module_rows: list[tuple[Any, ...]] = []
    parts = [(name, b) for name, b in ((COMPONENT, ge), (WORKSPACE_MODULE, ws)) if b]
    for start, *_ in sampler.windows():
        ts_ns = round(start) * 1000  # window starts are whole µs (float noise dropped)
        if npu_mem is not None:
            for event in ("APP", "Device"):
                npu_mem.writer.writerow([dev, event, fmt(0.0), fmt(kb), fmt(kb), fmt(start)])
        if timeline is not None:
            timeline.counter("NPU_MEM", start, {f"{e}/{k}": v for e in ("APP", "Device")
                                                for k, v in (("DDR", 0.0), ("HBM", kb),
                                                             ("Memory", kb))})
        mem_rows += [(app, 0, held, ts_ns, session.device_id),
                     (dev_type, 0, held, ts_ns, session.device_id)]
        for name, nbytes in parts:
            if module is not None:
                module.writer.writerow([dev, name, fmt_ns(ts_ns) + "\t", _kb(nbytes),
                                        device])
            module_rows.append((MODULES[name], ts_ns, nbytes, session.device_id))
    if db is not None:
        db.add_npu_mem(mem_rows)
        db.add_npu_module_mem(module_rows)
