"""The array passes of the device model (schedule, memory plan) equal the straightforward
step-by-step passes they replaced, kept here as the reference (issue 10, compile speed)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import attrs
import numpy as np
import pytest

from geplug.device import Graph, Node, Tensor, build_device_model, optimize
from geplug.device.memory import plan_memory
from geplug.device.schedule import STREAMS, schedule
from geplug.products.schema import GraphCaps
from geplug.testing.plugin import require_product


def reference_schedule(items: Sequence[tuple[str, str, str, float, Sequence[str]]]
                       ) -> tuple[list[tuple[str, int, int, int]], int]:
    """The list schedule one item at a time, in order."""
    free: dict[int, int] = {}
    end: dict[str, int] = {}
    out = []
    for name, _, stream, duration_us, deps in items:
        sid = STREAMS[stream]
        ready = max((end[d] for d in deps if d in end), default=0)
        start = max(free.get(sid, 0), ready)
        dur = max(round(duration_us * 1000.0), 0)
        free[sid] = end[name] = start + dur
        out.append((name, sid, start, dur))
    return out, max(end.values(), default=0)


def reference_peak(order: Sequence[tuple[str, Sequence[str], Sequence[str]]],
                   sizes: Mapping[str, int], inputs: Sequence[str], outputs: Sequence[str],
                   align: int) -> tuple[int, tuple[tuple[str, int], ...]]:
    """The liveness sweep one step at a time: the peak and its five largest blocks."""
    def aligned(n: int) -> int:
        return -(-max(n, 1) // align) * align if align > 1 else n

    last: dict[str, int] = {}
    first: dict[str, int] = {}
    for i, (_, reads, writes) in enumerate(order):
        for t in writes:
            if t in sizes:
                first.setdefault(t, i)
                last.setdefault(t, i)
        for t in reads:
            if t in sizes:
                last[t] = i
    end = len(order)
    for t in inputs:
        if t in sizes:
            first[t] = -1
            last.setdefault(t, -1)
    for t in outputs:
        if t in sizes:
            last[t] = end
            first.setdefault(t, -1)
    frees: dict[int, list[str]] = {}
    allocs: dict[int, list[str]] = {}
    for t, i in first.items():
        allocs.setdefault(i, []).append(t)
        frees.setdefault(last.get(t, i), []).append(t)
    live: dict[str, int] = {}
    current = peak = 0
    peak_set: dict[str, int] = {}
    for i in range(-1, end + 1):
        for t in allocs.get(i, ()):
            live[t] = aligned(sizes[t])
            current += live[t]
        if current > peak:
            peak, peak_set = current, dict(live)
        for t in frees.get(i, ()):
            current -= live.pop(t, 0)
    return peak, tuple(sorted(peak_set.items(), key=lambda kv: -kv[1])[:5])


def _random_items(rng: random.Random, n: int, aicpu_share: float
                  ) -> list[tuple[str, str, str, float, tuple[str, ...]]]:
    items: list[tuple[str, str, str, float, tuple[str, ...]]] = []
    for i in range(n):
        kind, stream = ("h2d", "copy") if i < 3 else ("d2h", "copy") if i >= n - 2 else (
            "task", "aicpu" if rng.random() < aicpu_share else "compute")
        deps = tuple(f"i{rng.randrange(i)}" for _ in range(rng.randrange(4))) if i else ()
        if rng.random() < 0.1:
            deps += (f"i{i + 5}", "unknown")  # later and unknown names are no dependency
        items.append((f"i{i}", kind, stream, rng.choice([0.0, 0.0015, 2.5, 1e-4, 37.1234]),
                      deps))
    return items


@pytest.mark.parametrize("aicpu_share", [0.0, 0.05, 0.5], ids=["none", "few", "alternating"])
def test_the_array_schedule_equals_the_one_task_at_a_time_schedule(aicpu_share: float
                                                                   ) -> None:
    rng = random.Random(7)
    for n in (1, 2, 5, 40, 300):
        items = _random_items(rng, n, aicpu_share)
        expected, makespan = reference_schedule(items)
        got = schedule(items)
        assert [(t.name, t.stream_id, t.start_ns, t.duration_ns) for t in got.tasks] == expected
        assert got.makespan_ns == makespan


def test_the_array_memory_plan_equals_the_step_by_step_liveness_sweep() -> None:
    product = require_product("atlas_a2")
    rng = random.Random(11)
    for align in (1, 512):
        caps = attrs.evolve(product.memory, alignment_bytes=align)
        prod = attrs.evolve(product, memory=caps)
        for n in (0, 1, 6, 80):
            names = [f"t{k}" for k in range(2 * n + 3)]
            sizes = {t: rng.choice([0, 1, 100, 513, 4096, 4096]) for t in names}
            order = [(f"task{i}", rng.sample(names, rng.randrange(3)),
                      rng.sample(names, rng.randrange(1, 3))) for i in range(n)]
            inputs, outputs = names[:2], [names[-1], names[3 % len(names)]]
            plan = plan_memory(order, sizes, resident={}, graph_inputs=inputs,
                               graph_outputs=outputs, product=prod, soc_version="")
            peak, top = reference_peak(order, sizes, inputs, outputs, align)
            assert (plan.activation_peak_bytes, plan.peak_tensors) == (peak, top)


def test_a_chain_alternating_ai_cpu_and_ai_core_is_scheduled_as_one_task_at_a_time() -> None:
    product = require_product("atlas_a2")
    n = 30
    tensors = {f"t{i}": Tensor(name=f"t{i}", dtype="float32", shape=(64, 64 * (i % 3 + 1)))
               for i in range(n + 1)}
    nodes = [Node(name=f"n{i}", op_type="Exp" if i % 2 else "Relu", inputs=(f"t{i}",),
                  outputs=(f"t{i + 1}",)) for i in range(n)]
    graph = Graph(name="alternating", nodes=nodes, tensors=tensors, inputs=("t0",),
                  outputs=(f"t{n}",))

    @attrs.frozen
    class D:
        engine: str
        dtype: str = "float32"
        op_class: str = "vector"

    decisions = {f"n{i}": D("AI_CPU" if i % 2 else "AI_CORE") for i in range(n)}
    model = build_device_model(optimize(graph, GraphCaps()), product, decisions,
                               fusion=False)
    items = [(t.name, t.kind, {0: "compute", 1: "aicpu", 2: "copy"}[t.stream_id],
              t.duration_ns / 1000.0, ()) for t in model.schedule.tasks]
    # every item depends on the one before (a chain through the copies and both engines)
    items = [(name, kind, stream, dur, (items[i - 1][0],) if i else ())
             for i, (name, kind, stream, dur, _) in enumerate(items)]
    expected, makespan = reference_schedule(items)
    assert [(t.name, t.stream_id, t.start_ns, t.duration_ns)
            for t in model.schedule.tasks] == expected
    assert model.schedule.makespan_ns == makespan
    assert {t.stream_id for t in model.tasks} == {STREAMS["compute"], STREAMS["aicpu"]}
    assert np.all(np.diff([t.start_ns for t in model.schedule.tasks]) > 0)
