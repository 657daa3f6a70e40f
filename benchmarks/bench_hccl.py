"""The HCCL model against public measurements, and the analytic mode's time and memory.

Run: ``python benchmarks/bench_hccl.py [RANKS]`` (default 1,024; needs the atlas_a2 product
and the simulator). Prints

1. the validation table of docs/distributed.md: predicted / measured algorithm bandwidth
   per row (target 0.75-1.25);
2. the analytic mode on RANKS ranks of a small model (MatMul + AllReduce + Relu, 2 steps,
   profiling on), in a child process: wall time and peak RSS against the targets (60 s and
   4 GB for 1,024 ranks), and against the baseline measured in the same run — one rank of
   the same model in the exact mode (``--ranks 1``) — as a per-rank ratio.

Always exits 0.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time

MB64 = 64 * 2**20
ROWS = [("P2P over HCCS, 2 x 910B", "send", 2, 54.7),
        ("torch all_gather, 2 x 910B", "allgather", 2, 38.0),
        ("torch all_reduce, 2 x 910B", "allreduce", 2, 18.0),
        ("torch all_gather, 4 x 910B", "allgather", 4, 64.0),
        ("torch all_reduce, 4 x 910B", "allreduce", 4, 30.0),
        ("torch all_gather, 8 x 910B (calibration)", "allgather", 8, 149.0),
        ("torch all_reduce, 8 x 910B", "allreduce", 8, 72.0)]
PROFILING = 'profiling_mode = true\n[profiling_options]\noutput = "prof"\ntask_time = "on"\n'


def validation() -> None:
    """Print predicted vs measured bandwidth per row."""
    from geplug.hccl import Topology, read_settings, simulate
    from geplug.plugin import get_manager

    product = get_manager().products().get("atlas_a2")
    print(f"{'row':44} {'measured':>9} {'predicted':>10} {'ratio':>6}")
    for name, kind, n, measured in ROWS:
        cost = simulate(Topology.generated(product, n), kind, MB64, read_settings({}),
                        root=0, peer=1)
        size = MB64 * n if kind == "allgather" else MB64
        predicted = size / cost.duration_us / 1e3
        print(f"{name:44} {measured:9.1f} {predicted:10.1f} {predicted / measured:6.2f}")


def _model(path: str, ranks: int) -> None:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.eye(256, dtype=np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("AllReduce", ["h"], ["s"], domain="com.microsoft", name="ar",
                              group_size=ranks),
             helper.make_node("Relu", ["s"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "bench", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [256, 256])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [256, 256])], [w])
    onnx.save(helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]), path)


def _timed(args: list[str], cwd: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "geplug.cli.main", *args], cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak, before) / 1024


def analytic(ranks: int) -> None:
    """Time the analytic mode and the one-rank baseline."""
    with tempfile.TemporaryDirectory() as tmp:
        _model(os.path.join(tmp, "one.onnx"), 1)
        _model(os.path.join(tmp, "many.onnx"), ranks)
        with open(os.path.join(tmp, "prof.toml"), "w", encoding="utf-8") as fh:
            fh.write(PROFILING)
        common = ["--product", "atlas_a2", "--config", "prof.toml", "--steps", "2"]
        base, _ = _timed(["run", "one.onnx", "--ranks", "1", *common], tmp)
        wall, rss = _timed(["run", "many.onnx", "--ranks", str(ranks), "--analytic",
                            *common], tmp)
    print(f"analytic {ranks} ranks: {wall:.1f} s (target 60 s for 1,024: "
          f"{wall / 60 * 1024 / ranks:.2f}x of the budget scaled), peak RSS {rss:.0f} MB "
          f"(target 4096 MB: {rss / 4096:.3f}x)")
    print(f"baseline (1 rank, exact mode, same run): {base:.2f} s; per rank the analytic "
          f"mode costs {wall / ranks / base:.3f}x of a one-rank run")


if __name__ == "__main__":
    validation()
    analytic(int(sys.argv[1]) if len(sys.argv) > 1 else 1024)
