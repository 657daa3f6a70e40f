"""Compile and run: decisions, numbers, inputs, timing, events, faults."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnxruntime as ort
import pytest
from geplug_simulator import compiled as compiled_mod
from geplug_simulator.compiled import FAULT_ENV
from geplug_simulator.runtime import loadable_by_onnxruntime, self_check
from onnx import helper
from sim_helpers import any_product, f32, graph_model, make_system, overflow_model

from geplug.errors import AICoreError, CompileError
from geplug.events import ApiCall, DumpEvent, GraphEvent, StepEvent, TaskEvent
from geplug.testing.plugin import require_product

X1 = {"x": np.full((1, 4), 100.0, np.float32)}


def test_self_check_passes_on_this_onnxruntime():
    self_check()


def test_overflow_is_inf_under_allow_fp32_to_fp16_on_atlas_training_series():
    """Done when: a model that overflows in float16 returns inf on the training series."""
    train = require_product("atlas_train")
    system = make_system(train, precision_mode="allow_fp32_to_fp16")
    compiled = system.compile(overflow_model())
    out = compiled.run(X1)["y"]
    assert np.all(np.isposinf(out))
    big = compiled.decision("big")
    assert big.dtype == "float16"
    assert "allow_fp32_to_fp16" in big.reason and "float16" in big.reason


def test_same_model_is_finite_under_must_keep_origin_dtype_on_atlas_a2():
    """Done when: ... and finite values under must_keep_origin_dtype on Atlas A2."""
    a2 = require_product("atlas_a2")
    system = make_system(a2, precision_mode="must_keep_origin_dtype")
    compiled = system.compile(overflow_model())
    out = compiled.run(X1)["y"]
    assert np.allclose(out, 4.0, rtol=1e-5)
    big = compiled.decision("big")
    assert big.dtype == "float32" and "must_keep_origin_dtype" in big.reason


def test_default_mode_of_each_product_applies_when_unset():
    """The seed: training-series default allow_fp32_to_fp16, A2 default must_keep."""
    train, a2 = require_product("atlas_train"), require_product("atlas_a2")
    assert make_system(train).compile(overflow_model()).decision("big").dtype == "float16"
    assert make_system(a2).compile(overflow_model()).decision("big").dtype == "float32"


def _bf16(a: np.ndarray) -> np.ndarray:
    return a.astype(ml_dtypes.bfloat16).astype(np.float64)


def test_bf16_mix_lowers_white_ops_and_matches_a_rounded_float64_reference():
    """Done when: under allow_mix_precision_bf16 on A2 the lowered ops are bfloat16 and the
    results match a float64 reference with the same rounding."""
    a2 = require_product("atlas_a2")
    rng = np.random.default_rng(3)
    w = rng.standard_normal((16, 8)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("Relu", ["h"], ["y"], name="relu")]
    model = graph_model(nodes, [f32("x", [4, 16])], [f32("y", [4, 8])], {"w": w})
    compiled = make_system(a2, precision_mode="allow_mix_precision_bf16").compile(model)
    assert compiled.decision("mm").dtype == "bfloat16"
    assert compiled.decision("relu").dtype == "bfloat16"  # grey: follows the lowered MatMul
    x = rng.standard_normal((4, 16)).astype(np.float32)
    y = compiled.run({"x": x})["y"]
    ref = _bf16(np.maximum(_bf16(_bf16(x) @ _bf16(w)), 0.0))
    assert np.array_equal(_bf16(y), y.astype(np.float64))  # every value is a bfloat16
    mismatch = np.abs(y - ref) > np.abs(ref) * 2.0**-7
    assert not mismatch.any()


def test_float32_model_under_must_keep_equals_plain_onnxruntime():
    a2 = require_product("atlas_a2")
    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 8)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("Tanh", ["h"], ["y"], name="t")]
    model = graph_model(nodes, [f32("x", [2, 8])], [f32("y", [2, 8])], {"w": w})
    compiled = make_system(a2, precision_mode="must_keep_origin_dtype").compile(model)
    assert compiled.rewritten.casts_added == 0
    x = rng.standard_normal((2, 8)).astype(np.float32)
    plain = ort.InferenceSession(loadable_by_onnxruntime(model).SerializeToString(),
                                 providers=["CPUExecutionProvider"])
    assert np.array_equal(compiled.run({"x": x})["y"], plain.run(None, {"x": x})[0])


def _softmax_model() -> object:
    return graph_model([helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=-1)],
                       [f32("x", [64, 256])], [f32("y", [64, 256])])


def test_high_precision_softmax_is_closer_to_float64_than_high_performance():
    """Seed: high_precision - for fp16 inputs, the op's precision is further improved
    (高精度实现算子是指在fp16输入的情况下，通过泰勒展开/牛顿迭代等手段进一步提升算子的精度)."""
    a2 = require_product("atlas_a2")
    x = np.random.default_rng(5).standard_normal((64, 256)).astype(np.float32) * 4
    errors = {}
    for mode in ("high_precision", "high_performance"):
        system = make_system(a2, precision_mode_v2="fp16", resolved__impl_default=mode,
                             resolved__impl_by_op_type={})
        compiled = system.compile(_softmax_model())
        assert compiled.decision("sm").impl_mode == mode
        y = compiled.run({"x": x})["y"].astype(np.float64)
        x16 = x.astype(np.float16).astype(np.float64)
        e = np.exp(x16 - x16.max(axis=-1, keepdims=True))
        ref = e / e.sum(axis=-1, keepdims=True)
        errors[mode] = float(np.mean(np.abs(y - ref)))
    assert errors["high_precision"] < errors["high_performance"]


def test_high_performance_average_pooling_sums_in_float16_and_can_overflow():
    """high_performance accumulates average Pooling in float16: a 4-element sum of 30000
    overflows; high_precision keeps the sum in float32."""
    a2 = require_product("atlas_a2")
    model = graph_model(
        [helper.make_node("AveragePool", ["x"], ["y"], name="pool", kernel_shape=[2, 2])],
        [f32("x", [1, 1, 2, 2])], [f32("y", [1, 1, 1, 1])],
    )
    x = {"x": np.full((1, 1, 2, 2), 30000.0, np.float32)}
    outs = {}
    for mode in ("high_precision", "high_performance"):
        system = make_system(a2, precision_mode_v2="fp16",
                             resolved__impl_by_op_type={"Pooling": mode})
        outs[mode] = system.compile(model).run(x)["y"].item()
    assert outs["high_precision"] == 30000.0
    assert np.isinf(outs["high_performance"])


def test_lrn_implementation_mode_changes_the_numbers():
    a2 = require_product("atlas_a2")
    model = graph_model(
        [helper.make_node("LRN", ["x"], ["y"], name="lrn", size=3, alpha=1e-2)],
        [f32("x", [1, 8, 4, 4])], [f32("y", [1, 8, 4, 4])],
    )
    x = {"x": np.random.default_rng(2).standard_normal((1, 8, 4, 4)).astype(np.float32) * 30}
    outs = {}
    for mode in ("high_precision", "high_performance"):
        system = make_system(a2, precision_mode_v2="fp16",
                             resolved__impl_by_op_type={"LRN": mode})
        outs[mode] = system.compile(model).run(x)["y"]
    plain = ort.InferenceSession(loadable_by_onnxruntime(model).SerializeToString(),
                                 providers=["CPUExecutionProvider"])
    ref = plain.run(None, x)[0]
    assert np.allclose(outs["high_precision"], ref, rtol=2e-3, atol=1e-3)
    assert not np.array_equal(outs["high_precision"], outs["high_performance"])


def test_missing_input_is_named():
    compiled = make_system(any_product()).compile(overflow_model())
    with pytest.raises(CompileError, match=r"'x'.*missing") as info:
        compiled.run({})
    assert info.value.node == "x"


def test_wrong_dtype_input_is_named():
    compiled = make_system(any_product()).compile(overflow_model())
    with pytest.raises(CompileError, match="'x' has dtype float64"):
        compiled.run({"x": np.ones((1, 4), np.float64)})


def test_wrong_shape_input_is_named():
    compiled = make_system(any_product()).compile(overflow_model())
    with pytest.raises(CompileError, match=r"'x' has shape \[2, 4\]"):
        compiled.run({"x": np.ones((2, 4), np.float32)})


def test_unknown_input_is_named():
    compiled = make_system(any_product()).compile(overflow_model())
    with pytest.raises(CompileError, match="no input 'z'"):
        compiled.run({"x": np.ones((1, 4), np.float32), "z": np.ones(1)})


def test_op_times_come_from_the_compute_model_and_fp16_matmul_is_faster():
    a2 = require_product("atlas_a2")
    w = np.ones((1024, 1024), np.float32)
    model = graph_model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                        [f32("x", [1024, 1024])], [f32("y", [1024, 1024])], {"w": w})
    t32 = make_system(a2, precision_mode="must_keep_origin_dtype").compile(model).op_times["mm"]
    t16 = make_system(a2, precision_mode="allow_fp32_to_fp16").compile(model).op_times["mm"]
    assert t32 > t16 > 0


def test_symbolic_batch_times_follow_the_fed_shape():
    a2 = require_product("atlas_a2")
    w = np.ones((256, 256), np.float32)
    model = graph_model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                        [f32("x", ["n", 256])], [f32("y", ["n", 256])], {"w": w})
    compiled = make_system(a2).compile(model)
    compiled.run({"x": np.ones((1, 256), np.float32)})
    small = compiled.op_times["mm"]
    compiled.run({"x": np.ones((4096, 256), np.float32)})
    assert compiled.op_times["mm"] > small


def test_step_counter_and_stable_task_ids(recorder, monkeypatch):
    manager, rec = recorder
    monkeypatch.setattr(compiled_mod, "wants_tensors", lambda system, step: True)
    compiled = make_system(any_product(), manager).compile(overflow_model())
    compiled.run(X1)
    compiled.run(X1)
    steps = [e.run.step for e in rec.dumps]
    assert steps == [0, 0, 1, 1]
    ids = {(e.op.name, e.op.task_id) for e in rec.dumps}
    assert len(ids) == 2


def test_dump_events_carry_device_dtype_tensors(recorder, monkeypatch):
    manager, rec = recorder
    monkeypatch.setattr(compiled_mod, "wants_tensors", lambda system, step: True)
    system = make_system(any_product(), manager, precision_mode="allow_fp32_to_fp16")
    system.compile(overflow_model()).run(X1)
    big = next(e for e in rec.dumps if isinstance(e, DumpEvent) and e.op.name == "big")
    assert big.kind == "data" and big.op.dtype == "float16"
    assert [t.dtype for t in big.inputs] == ["float16", "float16"]
    assert big.outputs[0].array.dtype == np.float16
    assert np.all(np.isinf(big.outputs[0].array))


def test_profiling_events_follow_the_simulated_timeline(recorder):
    manager, rec = recorder
    system = make_system(any_product(), manager, profiling_mode=True)
    compiled = system.compile(overflow_model())
    compiled.run(X1)
    kinds = [type(e).__name__ for e in rec.profiles]
    assert kinds[0] == "GraphEvent" and kinds[1] == "StepEvent" and kinds[-1] == "StepEvent"
    tasks = [e for e in rec.profiles if isinstance(e, TaskEvent)]
    assert [t.op.name for t in tasks] == ["big", "small"]
    ns = [(round(t.start_us * 1000), round(t.duration_us * 1000)) for t in tasks]
    assert ns[1][0] >= ns[0][0] + ns[0][1]  # back to back in exact integer ns
    assert tasks[0].duration_us == pytest.approx(compiled.op_times["big"], abs=1e-3)  # 1 ns
    assert any(isinstance(e, ApiCall) and "H2D" in e.name for e in rec.profiles)
    assert isinstance(rec.profiles[0], GraphEvent) and isinstance(rec.profiles[-1], StepEvent)


def test_no_profiling_events_when_profiling_is_off(recorder):
    manager, rec = recorder
    make_system(any_product(), manager).compile(overflow_model()).run(X1)
    assert rec.profiles == []


def test_injected_fault_dumps_and_raises_naming_node_and_files(recorder):
    manager, rec = recorder
    compiled = make_system(any_product(), manager).compile(overflow_model())
    compiled.inject_fault("small")
    with pytest.raises(AICoreError, match="small") as info:
        compiled.run(X1)
    assert info.value.node == "small" and info.value.op_type == "MatMulV2"
    assert info.value.dump_files == ("/fake/exception/small",)
    event = rec.dumps[-1]
    assert event.kind == "exception" and event.workspace and event.tiling


def test_fault_from_environment_variable(recorder, monkeypatch):
    manager, _ = recorder
    monkeypatch.setenv(FAULT_ENV, "big")
    compiled = make_system(any_product(), manager).compile(overflow_model())
    with pytest.raises(AICoreError, match="'big'"):
        compiled.run(X1)


def test_inject_fault_on_unknown_node_is_an_error():
    compiled = make_system(any_product()).compile(overflow_model())
    with pytest.raises(CompileError, match="no node 'nope'"):
        compiled.inject_fault("nope")


def test_unsupported_dtype_is_a_compile_error_naming_node_and_product():
    a2 = require_product("atlas_a2")
    import attrs

    from geplug.products.schema import OpSupport

    only16 = OpSupport(op_type="MatMulV2", op_class="matrix", aicore_dtypes=["float16"],
                       aicpu_dtypes=[])
    product = attrs.evolve(a2, ops={**a2.ops, "MatMulV2": only16})
    system = make_system(product, precision_mode="must_keep_origin_dtype")
    with pytest.raises(CompileError, match=r"'big'.*MatMulV2.*atlas_a2") as info:
        system.compile(overflow_model())
    assert "AI CPU float32" in str(info.value)


def test_a_hifloat8_decision_is_a_clear_compile_error():
    """hifloat8 decisions are made (cube_hif8 on the 950 family) but not simulated."""
    p350 = require_product("atlas_350")
    with pytest.raises(CompileError, match=r"'big'.*hifloat8.*not simulated") as info:
        make_system(p350, precision_mode_v2="cube_hif8").compile(overflow_model())
    assert info.value.node == "big"
