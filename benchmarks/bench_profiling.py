"""Profiling benchmarks: collection overhead (l0 / l1 vs no profiling) and bounded memory.

Run: ``python benchmarks/bench_profiling.py [--tasks 1000000] [--steps 200]``. Prints ratios
measured in the same run and exits 0. Targets (issue 6): l0 <= 1.05x, l1 <= 1.15x the same
simulated run without profiling; a 1,000,000-task run grows peak memory by < 100 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
import warnings
from typing import Any


def _rss_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _system(out: str, **options: str):  # type: ignore[no-untyped-def]
    from geplug.config.model import ProfilingOptions, SessionConfig
    from geplug.config.resolved import ResolvedConfig
    from geplug.plugin import PluginManager
    from geplug.runtime.system import System

    manager = PluginManager().load()
    prod = manager.products().get("atlas_a2")
    opts = ProfilingOptions(output=out, **options)
    cfg = ResolvedConfig(product=prod.name, profiling_output=out,
                         config=SessionConfig(profiling_mode=True, profiling_options=opts))
    return System(product=prod, config=cfg, manager=manager)


def bench_memory(n_tasks: int) -> None:
    """Stream ``n_tasks`` synthetic TaskEvents (l1, PipeUtilization) and report peak growth."""
    from geplug.events import GraphEvent, OpRecord, RunInfo, StepEvent, TaskEvent

    with tempfile.TemporaryDirectory() as out:
        system = _system(out, task_time="l1", training_trace="on")
        ops = [OpRecord(name=f"op{i}", op_type="MatMulV2" if i % 2 else "Add", task_id=i + 1,
                        block_dim=8) for i in range(50)]
        work: dict[str, Any] = {
            "flops": 1e6, "bytes_moved": 1e4, "cube_fraction": 0.5,
            "input_shapes": ((16, 16),), "input_dtypes": ("float16",), "input_formats": ("ND",),
            "output_shapes": ((16, 16),), "output_dtypes": ("float16",),
            "output_formats": ("ND",),
        }
        graph_run = RunInfo(system=system, model_name="m", model_id=1, step=-1)
        graph_ops: Any = ops  # the core's converter=tuple confuses mypy's attrs plugin
        system.emit_profile(GraphEvent(run=graph_run, ops=graph_ops))
        base = _rss_peak_mb()
        t0 = time.perf_counter()
        t = 1.7e15
        steps = n_tasks // len(ops)
        for step in range(steps):
            run = RunInfo(system=system, model_name="m", model_id=1, step=step)
            system.emit_profile(StepEvent(run=run, phase="begin", time_us=t))
            for op in ops:
                system.emit_profile(TaskEvent(run=run, op=op, start_us=t, duration_us=3.0,
                                              **work))
                t += 4.0
            system.emit_profile(StepEvent(run=run, phase="end", time_us=t))
        t_collect = time.perf_counter() - t0
        t1 = time.perf_counter()
        system.shutdown()
        t_export = time.perf_counter() - t1
        grown = _rss_peak_mb() - base
        size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(out) for f in fs)
    n = steps * len(ops)
    print(f"memory: {n} tasks, collect {t_collect:.1f} s ({1e6 * t_collect / n:.2f} us/task incl. "
          f"event creation), export {t_export:.1f} s, output {size / 2**20:.0f} MB, "
          f"peak RSS growth {grown:.1f} MB (target < 100 MB): "
          f"{'OK' if grown < 100 else 'OVER'}")


def _run_sim(options: dict[str, str] | None, steps: int, model,  # type: ignore[no-untyped-def]
             collector: bool = True) -> float:
    import numpy as np

    import geplug
    from geplug.plugin import PluginManager

    old = os.environ.get("GEPLUG_DISABLE_PLUGINS")
    if not collector:
        os.environ["GEPLUG_DISABLE_PLUGINS"] = "profiling"
    try:
        manager = PluginManager().load()
    finally:
        if old is None:
            os.environ.pop("GEPLUG_DISABLE_PLUGINS", None)
        else:
            os.environ["GEPLUG_DISABLE_PLUGINS"] = old

    with tempfile.TemporaryDirectory() as out:
        cfg: dict[str, object] = {}
        if options is not None:
            cfg = {"profiling_mode": True,
                   "profiling_options": json.dumps({"output": out, **options})}
        with geplug.initialize_system("atlas_a2", cfg, manager=manager) as system:
            compiled = system.compile(model)
            x = {i.name: np.random.default_rng(0).standard_normal(
                [d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
                for i in model.graph.input if i.name not in {t.name for t in
                                                           model.graph.initializer}}
            compiled.run(x)
            t0 = time.perf_counter()
            for _ in range(steps):
                compiled.run(x)
            elapsed = time.perf_counter() - t0
    return elapsed


def _mlp(batch: int = 256, width: int = 1024, layers: int = 4):  # type: ignore[no-untyped-def]
    """A compute-realistic MLP (each MatMul ~0.5 GFLOP), built with onnx.helper."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits, nodes, x = [], [], "x"
    for i in range(layers):
        w = numpy_helper.from_array(
            (rng.standard_normal((width, width)) / width**0.5).astype(np.float32), f"W{i}")
        inits.append(w)
        nodes.append(helper.make_node("MatMul", [x, f"W{i}"], [f"h{i}"], name=f"fc{i}"))
        nodes.append(helper.make_node("Relu", [f"h{i}"], [f"r{i}"], name=f"relu{i}"))
        x = f"r{i}"
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, width])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [batch, width])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def bench_overhead(steps: int, repeat: int = 5) -> None:
    """Simulated runs with profiling off, l0 and l1 (interleaved, best of ``repeat``), on a
    compute-realistic MLP and on the tiny demo CNN."""
    try:
        from geplug_simulator.demo import build_cnn
    except ImportError:
        print("overhead: geplug_simulator not installed - skipped")
        return
    for label, model, n in (("realistic MLP 4x(1024x1024), batch 256", _mlp(), steps // 4),
                            ("demo CNN (tiny)", build_cnn(), steps)):
        runs: dict[str, list[float]] = {"off": [], "events": [], "l0": [], "l1": []}
        for _ in range(repeat):  # interleaved, best of N: robust to a busy machine
            runs["off"].append(_run_sim(None, n, model))
            runs["events"].append(_run_sim({"task_time": "l0"}, n, model, collector=False))
            runs["l0"].append(_run_sim({"task_time": "l0"}, n, model))
            runs["l1"].append(_run_sim({"task_time": "l1", "training_trace": "on"}, n, model))
        off, events, l0, l1 = (min(runs[k]) for k in ("off", "events", "l0", "l1"))
        print(f"overhead: {label}, {len(model.graph.node)} nodes, {n} steps: "
              f"off {1e3 * off / n:.3f} ms/step")
        print(f"  l0 {l0 / off:.3f}x (target <= 1.05x), l1 {l1 / off:.3f}x (target <= 1.15x); "
              f"events emitted with the collector disabled: {events / off:.3f}x "
              f"(collector share at l0: {(l0 - events) / off:+.3f}x)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=1_000_000)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5, help="interleaved repetitions (5)")
    parser.add_argument("--skip-memory", action="store_true", help="only the overhead part")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if not args.skip_memory:
        bench_memory(args.tasks)  # first: ru_maxrss is a process-wide peak
    bench_overhead(args.steps, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
