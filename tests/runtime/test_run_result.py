"""Run results carry their findings: `not result.overflows` is the test a user writes."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

pytest.importorskip("geplug_simulator")

import geplug
from geplug.errors import OverflowWarning
from geplug.plugin import PluginManager
from geplug.runtime.result import FIND_THE_OP, RunResult

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")

X = np.random.default_rng(0).standard_normal((4, 32)).astype(np.float32)


def _model() -> Any:
    """x -> fc1 (weights x1e4: overflows float16) -> relu -> fc2 -> y."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    w1 = (rng.standard_normal((32, 64)) * 10000.0).astype(np.float32)
    w2 = (rng.standard_normal((64, 8)) * 1e-6).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
             helper.make_node("Relu", ["h"], ["r"], name="relu1"),
             helper.make_node("MatMul", ["r", "w2"], ["y"], name="fc2")]
    graph = helper.make_graph(
        nodes, "rr_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture
def manager() -> PluginManager:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PluginManager().load()


def _run(manager: PluginManager, options: dict[str, Any]) -> RunResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with geplug.initialize_system("atlas_a2", options, manager=manager, env={}) as system:
            return system.compile(_model()).run({"x": X}, step=0)


def test_result_is_still_the_outputs_dict(manager: PluginManager) -> None:
    result = _run(manager, {"precision_mode": "must_keep_origin_dtype"})
    assert isinstance(result, dict) and list(result) == ["y"]
    assert result["y"].shape == (4, 8) and result.step == 0


def test_clean_run_has_no_findings(manager: PluginManager) -> None:
    result = _run(manager, {"precision_mode": "must_keep_origin_dtype"})
    assert not result.overflows and not result.nonfinite_outputs


def test_overflow_names_the_op_where_it_starts_with_dump_debug(manager: PluginManager,
                                                               tmp_path: Any) -> None:
    result = _run(manager, {"precision_mode": "allow_fp32_to_fp16", "enable_dump_debug": True,
                            "dump_path": str(tmp_path)})
    assert [o.op_name for o in result.overflows] == ["fc1relu1"]  # one fused task
    assert result.overflows[0].pos_inf + result.overflows[0].neg_inf > 0
    assert "step 0: overflow at op 'fc1relu1' (MatMulV2)" in str(result.overflows[0])
    assert result.nonfinite_outputs == ("y",)


def test_without_dump_debug_nonfinite_outputs_still_count_as_overflows(
        manager: PluginManager) -> None:
    result = _run(manager, {"precision_mode": "allow_fp32_to_fp16"})
    assert result.nonfinite_outputs == ("y",)
    assert [o.output for o in result.overflows] == ["y"] and result.overflows[0].op_name == ""
    assert FIND_THE_OP in str(result.overflows[0])


def test_aicpu_fallbacks_list_nodes_running_on_ai_cpu(manager: PluginManager) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with geplug.initialize_system("atlas_a2", {"precision_mode": "must_keep_origin_dtype"},
                                      manager=manager, env={}) as system:
            compiled = system.compile(_model())
            result = compiled.run({"x": X})
    expected = [d.node for d in compiled.decisions if d.engine == "AI_CPU"]
    assert list(result.aicpu_fallbacks) == expected


def test_overflow_warning_is_importable_from_errors_with_one_line(
        manager: PluginManager, tmp_path: Any) -> None:
    from geplug.dump import overflow

    assert overflow.OverflowWarning is OverflowWarning
    with pytest.warns(OverflowWarning) as caught:
        with geplug.initialize_system("atlas_a2", {"precision_mode": "allow_fp32_to_fp16",
                                                   "enable_dump_debug": True,
                                                   "dump_path": str(tmp_path)},
                                      manager=manager, env={}) as system:
            system.compile(_model()).run({"x": X}, step=0)
    messages = [str(w.message) for w in caught if w.category is OverflowWarning]
    assert messages and all("\n" not in m for m in messages)


def _cli_run(tmp_path: Any, options: str, capsys: pytest.CaptureFixture[str]) -> str:
    import onnx

    from geplug.cli.main import main

    model = tmp_path / "m.onnx"
    onnx.save(_model(), str(model))
    cfg = tmp_path / "c.toml"
    cfg.write_text(options)
    assert main(["run", str(model), "--product", "atlas_a2", "--config", str(cfg)]) == 0
    return capsys.readouterr().out


def test_run_says_outputs_are_nonfinite_and_how_to_find_the_op(
        tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    out = _cli_run(tmp_path, 'precision_mode = "allow_fp32_to_fp16"\n', capsys)
    assert "non-finite outputs y: set enable_dump_debug = true" in out


def test_run_with_dump_debug_names_the_op_where_it_starts(
        tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "d").mkdir()
    out = _cli_run(tmp_path, f'precision_mode = "allow_fp32_to_fp16"\nenable_dump_debug = true\n'
                             f'dump_path = "{tmp_path / "d"}"\n', capsys)
    assert "non-finite outputs y: the overflow starts at fc1relu1 (MatMulV2)" in out


def test_run_says_its_time_is_device_time(tmp_path: Any,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = _cli_run(tmp_path, 'precision_mode = "must_keep_origin_dtype"\n', capsys)
    assert "us per step (device only;" in out and "non-finite" not in out


def test_sequence_outputs_of_different_shapes_are_checked_element_by_element() -> None:
    seq = [np.ones((2, 3), np.float32), np.array([np.inf, 1.0], np.float32)]
    result = RunResult({"seq": seq, "ok": [np.ones(4, np.float32)], "none": None}, step=3)
    assert result.nonfinite_outputs == ("seq",)
    (overflow,) = result.overflows
    assert (overflow.output, overflow.pos_inf, overflow.nan) == ("seq", 1, 0)
