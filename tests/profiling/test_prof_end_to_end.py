"""End to end with the simulator: initialize_system -> compile -> run -> PROF_* files."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from prof_helpers import read_csv, timeline

pytest.importorskip("geplug_simulator")
onnx = pytest.importorskip("onnx")


def _mlp():
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((16, 32)).astype(np.float32), "W1")
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"], name="fc1"),
             helper.make_node("Relu", ["h"], ["y"], name="relu1")]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 32])], [w1])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _options(out, **extra):
    opts = {"output": str(out), "task_time": "on", "training_trace": "on",
            "runtime_api": "on", "msproftx": "on", **extra}
    return {"profiling_mode": True, "profiling_options": json.dumps(opts)}


@pytest.mark.geplug_product_capability("runtime.initialize_system")
def test_simulated_run_writes_op_summary_step_trace_and_markers(tmp_path, geplug_fresh_manager,
                                                                geplug_product):
    import geplug

    x = np.ones((4, 16), np.float32)
    with geplug.initialize_system(geplug_product.name, _options(tmp_path)) as system:
        compiled = system.compile(_mlp())
        for _ in range(2):
            with geplug.mstx.range("step"):
                compiled.run({"x": x})
    header, rows = read_csv(tmp_path, "op_summary")
    assert [r[header.index("Op Name")] for r in rows] == ["fc1", "relu1"] * 2
    assert rows[0][header.index("OP Type")] == "MatMulV2"
    assert len(read_csv(tmp_path, "step_trace")[1]) == 2
    assert read_csv(tmp_path, "api_statistic")[1]
    assert {e["name"] for e in timeline(tmp_path) if e.get("cat") == "MsTx"} == {"step"}
    durations = [float(r[header.index("Task Duration(us)")]) for r in rows]
    assert all(d > 0 for d in durations)


@pytest.mark.geplug_product_capability("runtime.initialize_system")
def test_simulated_run_rejects_a_bp_point_outside_the_graph(
        tmp_path, geplug_fresh_manager, geplug_product):
    import geplug
    from geplug.errors import ProfilingError

    options = _options(tmp_path, bp_point="fc9")
    with geplug.initialize_system(geplug_product.name, options) as system:
        with pytest.raises(ProfilingError, match="bp_point = 'fc9'"):
            system.compile(_mlp())


@pytest.mark.geplug_product_capability("runtime.initialize_system")
def test_compiling_without_running_leaves_no_profiling_directory(tmp_path, geplug_fresh_manager,
                                                                 geplug_product):
    import geplug

    with geplug.initialize_system(geplug_product.name, _options(tmp_path)) as system:
        system.compile(_mlp())
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("PROF_")]


@pytest.mark.geplug_product_capability("runtime.initialize_system")
def test_simulated_tasks_on_a_stream_never_overlap(tmp_path, geplug_fresh_manager, geplug_product):
    """Task times come from the simulator relative to an integer base: no float rounding."""
    from onnx import TensorProto, helper

    import geplug

    nodes = [helper.make_node("Relu" if i % 2 else "Sigmoid", [f"t{i}"], [f"t{i + 1}"],
                              name=f"op{i}") for i in range(24)]
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [64, 96])],
        [helper.make_tensor_value_info("t24", TensorProto.FLOAT, [64, 96])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.ones((64, 96), np.float32)
    with geplug.initialize_system(geplug_product.name, _options(tmp_path)) as system:
        compiled = system.compile(model)
        for _ in range(4):
            compiled.run({"t0": x})
    header, rows = read_csv(tmp_path, "task_time")
    start_i, stop_i = header.index("task_start(us)"), header.index("task_stop(us)")
    from decimal import Decimal  # the values are µs since the epoch: floats would round them

    spans = sorted((Decimal(r[start_i].strip()), Decimal(r[stop_i].strip())) for r in rows)
    assert len(spans) == 96
    for (_, stop), (start, _) in itertools.pairwise(spans):
        assert start >= stop - Decimal("0.001")  # at most the printed ns rounding
