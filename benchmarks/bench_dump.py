"""Dump speed targets (issue 5), measured against baselines in the same run.

1. Dump write throughput >= 70% of writing the same bytes with plain sequential writes
   (same number of files, same tensor bytes, ``open``/``write``/``close``).
2. A step that is not a dump step costs <= 1.05x the same step without dumping. With the
   simulator installed this runs a real model; otherwise it measures the per-step policy
   check (``wants_tensors``) against a synthetic numpy step and says so.

Run: ``python benchmarks/bench_dump.py``. Always exits 0; prints ratios and PASS/MISS.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
import warnings
from typing import Any

import numpy as np

from geplug.config.model import SessionConfig
from geplug.config.resolve import resolve
from geplug.dump.policy import wants_tensors
from geplug.events import DumpEvent, OpRecord, RunInfo, TensorRecord
from geplug.plugin import PluginManager
from geplug.runtime.system import System

OPS, MIB = 64, 1 << 20


def _system(root: str, **options: Any) -> System:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        manager = PluginManager().load()
    product = _product(manager)
    options.setdefault("enable_exception_dump", 0)
    cfg = SessionConfig(dump_path=root, **options)
    return System(product=product, manager=manager,
                  config=resolve(cfg, product, env={}, cwd=root))


def _product(manager: PluginManager) -> Any:
    """An installed product (atlas_a2 when present), else geplug's minimal sample declaration,
    so the benchmark also runs with only the core installed."""
    registry = manager.products()
    if "atlas_a2" in registry:
        return registry.get("atlas_a2")
    installed = list(registry)
    if installed:
        return installed[0]
    from geplug.products import build_product, read_declaration
    from geplug.testing.samples import minimal_toml

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "capabilities.toml")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(minimal_toml("bench_card"))
        return build_product(read_declaration(path))


def _events(system: System, arrays: list[tuple[np.ndarray, np.ndarray]]) -> list[DumpEvent]:
    record: Any = TensorRecord  # events.py's converter=tuple confuses mypy's attrs plugin
    return [
        DumpEvent(kind="data", run=RunInfo(system=system, model_name="bench", model_id=1, step=0),
                  op=OpRecord(name=f"net/op{i}", op_type="MatMulV2", task_id=i + 1),
                  inputs=(record(name="x", array=x, dtype=x.dtype.name),),
                  outputs=(record(name="y", array=y, dtype=y.dtype.name),),
                  timestamp_us=1700000000000000 + i)
        for i, (x, y) in enumerate(arrays)
    ]


def bench_throughput(repeats: int = 5) -> float:
    """Best-of ratio of dump throughput to plain sequential writes."""
    rng = np.random.default_rng(0)
    arrays = [(rng.standard_normal(MIB // 4).astype(np.float32),
               rng.standard_normal(MIB // 2).astype(np.float16)) for _ in range(OPS)]
    total = sum(x.nbytes + y.nbytes for x, y in arrays)
    base = tempfile.mkdtemp(prefix="geplug-bench-")
    plain_t, dump_t = [], []
    try:
        for r in range(repeats):
            plain_dir = os.path.join(base, f"plain{r}")
            os.makedirs(plain_dir)
            t0 = time.perf_counter()
            for i, (x, y) in enumerate(arrays):
                with open(os.path.join(plain_dir, f"f{i}"), "wb") as fh:
                    fh.write(x.tobytes())
                    fh.write(y.tobytes())
            plain_t.append(time.perf_counter() - t0)

            root = os.path.join(base, f"dump{r}")
            os.makedirs(root)
            system = _system(root, enable_dump=True, dump_mode="all")
            events = _events(system, arrays)
            t0 = time.perf_counter()
            for ev in events:
                system.emit_dump(ev)
            dump_t.append(time.perf_counter() - t0)
            system.shutdown()
            shutil.rmtree(plain_dir)
            shutil.rmtree(root)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    plain, dump = min(plain_t), min(dump_t)
    ratio = plain / dump
    print(f"write throughput: plain {total / plain / MIB:8.1f} MiB/s, dump "
          f"{total / dump / MIB:8.1f} MiB/s over {OPS} files / {total / MIB:.0f} MiB "
          f"-> dump = {ratio:.0%} of plain (target >= 70%): "
          + ("PASS" if ratio >= 0.70 else "MISS"))
    return ratio


def _simulator_overhead() -> float | None:
    try:
        import geplug_simulator  # noqa: F401
        import onnx
        from onnx import TensorProto, helper

        import geplug
    except Exception:
        return None
    w = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)
    nodes, inits = [], []
    prev = "x"
    for i in range(8):
        inits.append(helper.make_tensor(f"w{i}", TensorProto.FLOAT, w.shape, w.reshape(-1)))
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"h{i}"], name=f"mm{i}"))
        prev = f"h{i}"
    graph = helper.make_graph(
        nodes, "bench", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 256])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [64, 256])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    x = np.random.default_rng(1).standard_normal((64, 256)).astype(np.float32) * 0.01
    root = tempfile.mkdtemp(prefix="geplug-bench-")
    systems: dict[str, Any] = {}
    try:
        compiled = {}
        for label, options in (("off", {}), ("on", {"enable_dump": True, "dump_path": root,
                                                    "dump_step": "0"})):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                systems[label] = geplug.initialize_system("atlas_a2", options)
            compiled[label] = systems[label].compile(model)
            compiled[label].run({"x": x}, step=0)
        samples: dict[str, list[float]] = {"off": [], "on": []}
        for step in range(1, 400):  # interleaved, so machine load hits both alike
            for label in ("off", "on") if step % 2 else ("on", "off"):
                t0 = time.perf_counter()
                compiled[label].run({"x": x}, step=step)
                samples[label].append(time.perf_counter() - t0)
        timings = {k: statistics.median(v) for k, v in samples.items()}
    except Exception as exc:
        print(f"simulator run failed ({type(exc).__name__}: {exc}); using synthetic steps")
        return None
    finally:
        for system in systems.values():
            system.shutdown()
        shutil.rmtree(root, ignore_errors=True)
    ratio = timings["on"] / timings["off"]
    print(f"non-dump step (simulator, 8 MatMuls): off {timings['off'] * 1e3:.3f} ms, "
          f"dump on (step 0 only) {timings['on'] * 1e3:.3f} ms -> {ratio:.3f}x "
          "(target <= 1.05x): " + ("PASS" if ratio <= 1.05 else "MISS"))
    return ratio


def bench_non_dump_step() -> float:
    """Ratio of a non-dump step with dumping configured to one without."""
    ratio = _simulator_overhead()
    if ratio is not None:
        return ratio
    root = tempfile.mkdtemp(prefix="geplug-bench-")
    try:
        on = _system(root, enable_dump=True, dump_step="0|100-200")
        off = _system(root)
        w = np.random.default_rng(0).standard_normal((128, 128)).astype(np.float32)

        def step(system: System, n: int) -> None:
            wants_tensors(system.config, n)  # the simulator's per-step question
            h = w
            for _ in range(8):
                h = h @ w * 0.01

        results = {}
        for label, system in (("off", off), ("on", on)):
            samples = []
            for n in range(1, 2000):
                t0 = time.perf_counter()
                step(system, n if n < 100 or n > 200 else 1)
                samples.append(time.perf_counter() - t0)
            results[label] = statistics.median(samples)
        t0 = time.perf_counter()
        for n in range(100000):
            wants_tensors(on.config, 1 + n % 99)
        check_us = (time.perf_counter() - t0) / 100000 * 1e6
    finally:
        shutil.rmtree(root, ignore_errors=True)
    ratio = results["on"] / results["off"]
    print("non-dump step (SYNTHETIC - simulator not available): 8 numpy 128x128 matmuls; "
          f"policy check {check_us:.2f} us/step; off {results['off'] * 1e6:.1f} us, on "
          f"{results['on'] * 1e6:.1f} us -> {ratio:.3f}x (target <= 1.05x): "
          + ("PASS" if ratio <= 1.05 else "MISS"))
    return ratio


if __name__ == "__main__":
    bench_throughput()
    bench_non_dump_step()
