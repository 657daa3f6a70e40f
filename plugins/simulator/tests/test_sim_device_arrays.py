"""On real-network shapes, the device model's array schedule, memory plan and on-chip reuse
(L2) pass equal the straightforward task-by-task passes they replaced (kept here as the
reference)."""

from __future__ import annotations

from collections.abc import Callable

import onnx
import pytest
from geplug_simulator import netbuild as nb

import geplug
from geplug.device import DeviceModel, copy_us
from geplug.device.ir import dtype_bytes, numel
from geplug.device.model import _device_dtypes, _leading_dim
from geplug.device.schedule import STREAMS
from geplug.products.schema import Product

NETWORKS: dict[str, Callable[[], onnx.ModelProto]] = {
    "bert": lambda: nb.bert(layers=2, hidden=128, heads=4, seq=32, batch=2),
    "resnet18": lambda: nb.resnet18(batch=1, res=64),
    "mobilenet_v2": lambda: nb.mobilenet_v2(batch=1, res=64, style="torchscript"),
    "lstm": lambda: nb.lstm(seq=10, batch=2, inputs=32, hidden=32),
}


def _reference(device: DeviceModel, product: Product, decisions: dict[str, object]
               ) -> tuple[dict[str, tuple[int, int, int]], int, dict[str, object]]:
    """Schedule and memory plan of ``device``'s tasks recomputed one task at a time, as
    ``build_device_model`` did before its passes became array passes."""
    opt, graph = device.graph, device.graph.graph
    held = _device_dtypes(graph, opt, decisions)

    def nbytes(name: str, dtypes: dict[str, str]) -> int:
        t = graph.tensor(name)
        return 0 if t is None else numel(t.shape) * dtype_bytes(dtypes.get(name, t.dtype))

    producer = {t: p.name for p in device.tasks for t in p.task.outputs}
    nodes = {n.name: n for n in graph.nodes}
    for p in device.tasks:
        for m in p.task.members:
            for t in nodes[m].outputs:
                if t:
                    producer.setdefault(t, p.name)
    feeds = [t for t in graph.inputs if graph.tensor(t) is not None]
    items = [(f"h2d:{t}", "copy", copy_us(nbytes(t, {}), product), ()) for t in feeds]
    items += [(p.name, "aicpu" if p.engine == "AI_CPU" else "compute", p.cost.duration_us,
               [producer.get(t, f"h2d:{t}") for t in p.task.inputs]) for p in device.tasks]
    items += [(f"d2h:{t}", "copy", copy_us(nbytes(t, held), product),
               (producer.get(opt.root(t), f"h2d:{opt.root(t)}"),)) for t in graph.outputs]
    free: dict[int, int] = {}
    end: dict[str, int] = {}
    timeline: dict[str, tuple[int, int, int]] = {}
    for name, stream, duration_us, deps in items:
        sid = STREAMS[stream]
        start = max(free.get(sid, 0), max((end[d] for d in deps if d in end), default=0))
        dur = max(round(duration_us * 1000.0), 0)
        free[sid] = end[name] = start + dur
        timeline[name] = (sid, start, dur)
    # memory: tasks in start order, liveness step by step
    ordered = sorted(device.tasks, key=lambda p: (timeline[p.name][1], timeline[p.name][0]))
    align = max(product.memory.alignment_bytes, 1)

    def aligned(n: int) -> int:
        return -(-max(n, 1) // align) * align if align > 1 else n

    sizes: dict[str, int] = {}
    resident: dict[str, int] = {}
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for i, p in enumerate(ordered):
        for t in p.task.inputs:
            if t in opt.known:
                resident[t] = nbytes(t, held)
            else:
                sizes.setdefault(t, nbytes(t, held))
                last[t] = i
        for t in p.task.outputs:
            sizes.setdefault(t, nbytes(t, held))
            first.setdefault(t, i)
            last.setdefault(t, i)
    for t in feeds:
        sizes.setdefault(t, nbytes(t, {}))
        first[t] = -1
        last.setdefault(t, -1)
    for t in (opt.root(t) for t in graph.outputs):
        if t not in opt.known and t in sizes:
            last[t] = len(ordered)
            first.setdefault(t, -1)
    live: dict[str, int] = {}
    current = peak = 0
    peak_set: dict[str, int] = {}
    for i in range(-1, len(ordered) + 1):
        for t, f in first.items():
            if f == i:
                live[t] = aligned(sizes[t])
                current += live[t]
        if current > peak:
            peak, peak_set = current, dict(live)
        for t, f in first.items():
            if last.get(t, f) == i:
                current -= live.pop(t, 0)
    memory = {"weights_bytes": sum(aligned(b) for b in resident.values()),
              "activation_peak_bytes": peak,
              "largest_live_tensors": [{"name": n, "bytes": b} for n, b in
                                       sorted(peak_set.items(), key=lambda kv: -kv[1])[:5]]}
    return timeline, max(end.values(), default=0), memory


@pytest.mark.requires_products("atlas_a2")
@pytest.mark.parametrize(("network", "fusion"), [
    *((name, True) for name in sorted(NETWORKS)), ("bert", False), ("mobilenet_v2", False)])
def test_real_network_timeline_and_memory_equal_the_task_by_task_reference(
        network: str, fusion: bool) -> None:
    with geplug.initialize_system("atlas_a2",
                                  {"precision_mode": "allow_fp32_to_fp16"}) as system:
        compiled = system.compile(NETWORKS[network](), fusion=fusion)
        device = compiled.device
        timeline, makespan, memory = _reference(
            device, system.product, {d.node: d for d in compiled.decisions})
    assert {t.name: (t.stream_id, t.start_ns, t.duration_ns)
            for t in device.schedule.tasks} == timeline
    assert device.schedule.makespan_ns == makespan
    assert {k: device.memory.to_json()[k] for k in memory} == memory
    assert len(device.tasks) > 1 and device.memory.activation_peak_bytes > 0


def _reference_l2(device: DeviceModel, product: Product, decisions: dict[str, object]
                  ) -> list[float]:
    """Per task, the bytes L2 serves, by the window rule one task at a time (as
    ``build_device_model`` computed them before the pass became an array pass); over the
    tasks of graph nodes: a format conversion GE inserts (``Task.inserted``) takes no part
    in the on-chip reuse and is served nothing."""
    opt, graph = device.graph, device.graph.graph
    held = _device_dtypes(graph, opt, decisions)

    def size(name: str) -> float:
        t = graph.tensor(name) if name else None
        return 0.0 if t is None else float(numel(t.shape) * dtype_bytes(
            held.get(name, t.dtype)))

    capacity = product.compute.l2_cache_mib * (1 << 20)
    outputs = {opt.root(t) for t in graph.outputs}
    plans = [p for p in device.tasks if not p.task.inserted]
    tasks = [p.task for p in plans]
    eligible = {t for task in tasks for t in task.outputs
                if t and t not in outputs and t not in opt.known}
    moved = [p.cost.bytes_moved for p in plans]
    n = len(tasks)
    out, prefix, fixed_prefix = [0.0] * n, [0.0] * (n + 1), [0.0] * (n + 1)
    written: dict[str, int] = {}
    touched: dict[str, list[int]] = {}
    for i, task in enumerate(tasks):
        here = pinned = 0.0
        for t in task.inputs:
            here += size(t)
            if t in eligible:
                touched.setdefault(t, []).append(i)
            elif t in opt.known:
                pinned += size(t)
        for t in task.outputs:
            here += size(t)
            if t in eligible:
                written.setdefault(t, i)
        if moved[i] < here:
            pinned, here = max(pinned - (here - moved[i]), 0.0), moved[i]
        prefix[i + 1] = prefix[i] + here
        fixed_prefix[i + 1] = fixed_prefix[i] + pinned
    for t, i in written.items():
        readers = touched.get(t, [])
        if not readers or readers[-1] <= i:
            continue
        j = readers[-1]
        pinned = fixed_prefix[j + 1] - fixed_prefix[i]
        active = prefix[j + 1] - prefix[i] - pinned - size(t) * len(readers)
        if pinned + active > capacity and (
                _leading_dim(graph, t) <= 1
                or pinned + active / _leading_dim(graph, t) > capacity):
            continue
        for k in (i, *readers):
            out[k] += size(t)
    served = iter([min(b, m) for b, m in zip(out, moved, strict=True)])
    return [0.0 if p.task.inserted else next(served) for p in device.tasks]


@pytest.mark.requires_products("atlas_a2")
@pytest.mark.parametrize(("network", "fusion"), [
    *((name, True) for name in sorted(NETWORKS)), ("bert", False), ("mobilenet_v2", False)])
def test_real_network_l2_bytes_equal_the_task_by_task_reference(
        network: str, fusion: bool) -> None:
    with geplug.initialize_system("atlas_a2",
                                  {"precision_mode": "allow_fp32_to_fp16"}) as system:
        compiled = system.compile(NETWORKS[network](), fusion=fusion)
        device = compiled.device
        expected = _reference_l2(device, system.product,
                                 {d.node: d for d in compiled.decisions})
    assert [p.cost.l2_bytes for p in device.tasks] == expected
    assert any(expected)  # atlas_a2 declares L2: some intermediates are served from it
