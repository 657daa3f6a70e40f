"""Simulated op times: the product's compute model (FLOPs and bytes over declared peaks plus
the declared launch overhead), never CPU time and never a clamp."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from sim_helpers import any_product, f32, graph_model, make_system, overflow_model

from geplug.products.schema import Product
from geplug.testing.plugin import installed_products, require_product


def _matmul(n: int, name: str = "mm") -> object:
    w = np.ones((n, n), np.float32)
    return graph_model([helper.make_node("MatMul", ["x", "w"], ["y"], name=name)],
                       [f32("x", [n, n])], [f32("y", [n, n])], {"w": w})


def _cube_time(product: Product, n: int, dtype: str) -> float:
    """2n³ at the declared achieved rate: a big square MatMul is compute-bound on all cores."""
    c = product.compute
    rate = c.cube_tflops[dtype] * c.cube_efficiency.get(dtype, 1.0)
    return 2.0 * n**3 / (rate * 1e12) * 1e6


def test_a_tiny_op_costs_about_the_graph_task_overhead():
    product = any_product()
    model = graph_model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                        [f32("x", [4])], [f32("y", [4])])
    compiled = make_system(product, precision_mode="must_keep_origin_dtype").compile(model)
    overhead = product.compute.task_overhead_us["graph"]
    assert overhead < compiled.op_times["relu"] < overhead + 0.1


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
    # an aligned 2048³ GEMM runs within 25% of the declared achieved rate: 128 output blocks
    # over 24 or 32 cores leave the last wave partly idle, plus pipeline fill and overhead
    assert got["atlas_a2"] == pytest.approx(_cube_time(a2, n, "float16"), rel=0.25)
    assert got["atlas_train"] == pytest.approx(_cube_time(train, n, "float16"), rel=0.25)
    assert got["atlas_a2"] < got["atlas_train"]


def test_an_ai_cpu_fallback_is_much_slower_than_the_ai_core():
    train = require_product("atlas_train")  # its cube takes no float32: AI CPU fallback
    model = _matmul(256)
    cpu = make_system(train, precision_mode="must_keep_origin_dtype").compile(model)
    aic = make_system(train, precision_mode="allow_fp32_to_fp16").compile(model)
    assert cpu.decision("mm").engine == "AI_CPU" and aic.decision("mm").engine == "AI_CORE"
    assert cpu.op_times["mm"] > 10 * aic.op_times["mm"]


def test_no_task_templates_are_built_while_profiling_is_off():
    compiled = make_system(any_product()).compile(overflow_model())
    compiled.run({"x": np.ones((1, 4), np.float32)})
    assert compiled._emitter._plans is None

