"""Simulated op times: the product's compute model (FLOPs and bytes over declared peaks plus
the declared launch overhead), never CPU time and never a clamp."""

from __future__ import annotations

import numpy as np
import pytest
from geplug_simulator.emit import stamp, task_fields
from onnx import helper
from sim_helpers import any_product, f32, graph_model, make_system, overflow_model

from geplug.events import TaskEvent
from geplug.products.schema import Product
from geplug.testing.plugin import installed_products, require_product


def _matmul(n: int, name: str = "mm") -> object:
    w = np.ones((n, n), np.float32)
    return graph_model([helper.make_node("MatMul", ["x", "w"], ["y"], name=name)],
                       [f32("x", [n, n])], [f32("y", [n, n])], {"w": w})


def _cube_time(product: Product, n: int, dtype: str) -> float:
    """launch + 2n³ / peak: a big square MatMul is compute-bound and uses every core."""
    c = product.compute
    return c.launch_overhead_us + 2.0 * n**3 / (c.cube_tflops[dtype] * 1e12) * 1e6


def test_a_tiny_op_costs_launch_overhead_plus_its_roofline_time():
    product = any_product()
    model = graph_model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                        [f32("x", [4])], [f32("y", [4])])
    compiled = make_system(product, precision_mode="must_keep_origin_dtype").compile(model)
    c = product.compute
    memory_us = 32 / (c.memory_bandwidth_gbps * 1e9) * 1e6  # 4 floats in, 4 out
    assert compiled.op_times["relu"] > c.launch_overhead_us
    assert compiled.op_times["relu"] == pytest.approx(c.launch_overhead_us + memory_us,
                                                      rel=0.5)


def test_the_same_model_is_faster_in_float16_where_the_cube_is_faster_in_float16():
    products = [p for p in installed_products()
                if p.compute.cube_tflops.get("float16", 0) > p.compute.cube_tflops.get(
                    "float32", 0) > 0 and "float32" in p.op("MatMulV2").aicore_dtypes]
    if not products:
        pytest.skip("no installed product has a float32 cube slower than its float16 cube")
    product = products[0]
    model = _matmul(1024)
    t32 = make_system(product, precision_mode="must_keep_origin_dtype").compile(model)
    t16 = make_system(product, precision_mode="allow_fp32_to_fp16").compile(model)
    assert t16.decision("mm").dtype == "float16" and t32.decision("mm").dtype == "float32"
    assert t16.simulated_time_us < t32.simulated_time_us


def test_a_bigger_matmul_takes_longer():
    product = any_product()
    times = [make_system(product).compile(_matmul(n)).op_times["mm"] for n in (64, 256, 1024)]
    assert times[0] < times[1] < times[2]


def test_atlas_a2_and_the_training_series_differ_as_their_compute_models_say():
    a2, train = require_product("atlas_a2"), require_product("atlas_train")
    n = 2048
    model = _matmul(n)
    got = {p.name: make_system(p, precision_mode="allow_fp32_to_fp16").compile(model)
           .op_times["mm"] for p in (a2, train)}
    assert got["atlas_a2"] == pytest.approx(_cube_time(a2, n, "float16"), rel=1e-6)
    assert got["atlas_train"] == pytest.approx(_cube_time(train, n, "float16"), rel=1e-6)
    assert got["atlas_a2"] < got["atlas_train"]  # 313 vs 256 declared float16 TFLOP/s


def test_an_ai_cpu_fallback_is_much_slower_than_the_ai_core():
    train = require_product("atlas_train")  # its cube takes no float32: AI CPU fallback
    model = _matmul(256)
    cpu = make_system(train, precision_mode="must_keep_origin_dtype").compile(model)
    aic = make_system(train, precision_mode="allow_fp32_to_fp16").compile(model)
    assert cpu.decision("mm").engine == "AI_CPU" and aic.decision("mm").engine == "AI_CORE"
    assert cpu.op_times["mm"] > 10 * aic.op_times["mm"]


def test_profiled_tasks_run_back_to_back_and_sum_to_the_step_time(recorder):
    manager, rec = recorder
    compiled = make_system(any_product(), manager, profiling_mode=True).compile(overflow_model())
    compiled.run({"x": np.ones((1, 4), np.float32)})
    tasks = [e for e in rec.profiles if isinstance(e, TaskEvent)]
    assert [t.wait_us for t in tasks] == [0.0, 0.0]
    assert tasks[1].start_us == pytest.approx(tasks[0].start_us + tasks[0].duration_us)
    # durations travel as integer ns: exact to 1 ns per task
    assert sum(t.duration_us for t in tasks) == pytest.approx(compiled.simulated_time_us,
                                                              abs=1e-3 * len(tasks))


def test_a_stamped_task_event_equals_one_built_by_its_constructor(recorder):
    manager, rec = recorder
    compiled = make_system(any_product(), manager, profiling_mode=True).compile(overflow_model())
    compiled.run({"x": np.ones((1, 4), np.float32)})
    event = next(e for e in rec.profiles if isinstance(e, TaskEvent))
    fields = {a: getattr(event, a) for a in ("run", "op", "start_us", "duration_us", "wait_us",
                                             "flops", "bytes_moved", "input_shapes",
                                             "input_dtypes", "input_formats", "output_shapes",
                                             "output_dtypes", "output_formats",
                                             "cube_fraction", "in_batch")}
    assert stamp(task_fields(event), event.run, event.start_us) == TaskEvent(**fields)
    assert event.input_shapes == ((1, 4), (4, 4)) and event.flops == 2 * 1 * 4 * 4


def test_no_task_templates_are_built_while_profiling_is_off():
    compiled = make_system(any_product()).compile(overflow_model())
    compiled.run({"x": np.ones((1, 4), np.float32)})
    assert compiled._emitter._plans is None

