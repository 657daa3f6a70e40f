"""The profiling timeline follows the device model's stream schedule (issue 10, streams)."""

from __future__ import annotations

import glob
import json
import os
from decimal import Decimal

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import geplug

pytestmark = pytest.mark.requires_products("atlas_a2")


def _model():  # type: ignore[no-untyped-def]
    """Two dependent MatMuls on AI Core beside an independent float64 CumSum (AI CPU)."""
    w = np.full((256, 256), 0.01, np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm1"),
             helper.make_node("MatMul", ["h", "w"], ["y"], name="mm2"),
             helper.make_node("CumSum", ["d", "axis"], ["c"], name="cumsum")]
    graph = helper.make_graph(
        nodes, "streams",
        [helper.make_tensor_value_info("d", TensorProto.DOUBLE, [64, 64]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [256, 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [256, 256]),
         helper.make_tensor_value_info("c", TensorProto.DOUBLE, [64, 64])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array(1, np.int64), "axis")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_an_ai_cpu_task_overlaps_compute_on_its_own_stream_in_the_timeline(tmp_path) -> None:
    cfg = {"precision_mode": "must_keep_origin_dtype", "profiling_mode": True,
           "profiling_options": json.dumps({"output": str(tmp_path), "task_time": "l1"})}
    with geplug.initialize_system("atlas_a2", cfg) as system:
        compiled = system.compile(_model())
        compiled.run({"d": np.ones((64, 64)), "x": np.ones((256, 256), np.float32)})
    plan = {t.name: t for t in compiled.device.tasks}
    (path,) = glob.glob(os.path.join(str(tmp_path), "PROF_*", "mindstudio_profiler_output",
                                     "msprof_*.json"))
    with open(path) as f:
        kernels = {e["name"]: e for e in json.load(f) if e.get("cat") == "kernel"}
    assert {kernels[n]["tid"] for n in ("mm1", "mm2")} == {plan["mm1"].stream_id} == {0}
    assert kernels["cumsum"]["tid"] == plan["cumsum"].stream_id == 1

    def span(name: str) -> tuple[Decimal, Decimal]:
        start = Decimal(kernels[name]["ts"])
        return start, start + Decimal(str(kernels[name]["dur"]))

    # the schedule's relative starts, exactly; the AI CPU task runs while mm1 does
    first = min(span(n)[0] for n in kernels)
    for name in ("mm1", "mm2", "cumsum"):
        rel_ns = (span(name)[0] - first) * 1000
        assert rel_ns == plan[name].start_ns - min(p.start_ns for p in plan.values())
    (c0, c1), (m0, m1) = span("cumsum"), span("mm1")
    assert c0 < m1 and m0 < c1
