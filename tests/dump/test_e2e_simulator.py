"""End to end with the simulator: dump steps, fp16 overflow, exception dumps, compare."""

from __future__ import annotations

import json
import os
import warnings
from typing import Any

import numpy as np
import pytest

pytest.importorskip("geplug_simulator")

import struct

from dump_helpers import all_files, split_dump_file

import geplug
from geplug.dump.compare import compare_trees
from geplug.dump.naming import READER_REGEX
from geplug.dump.overflow import OverflowWarning
from geplug.dump.reader import iter_dump_tree, read_dump
from geplug.errors import AICoreError
from geplug.plugin import PluginManager

a2_only = pytest.mark.geplug_requires_products("atlas_a2")

X = np.random.default_rng(0).standard_normal((4, 32)).astype(np.float32)


def _model() -> Any:
    """x -> fc1 (weights x1e4: overflows float16) -> bias -> relu -> fc2 -> y."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    w1 = (rng.standard_normal((32, 64)) * 10000.0).astype(np.float32)
    w2 = (rng.standard_normal((64, 8)) * 1e-6).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("Add", ["h", "b1"], ["hb"], name="bias1"),
        helper.make_node("Relu", ["hb"], ["r"], name="relu1"),
        helper.make_node("MatMul", ["r", "w2"], ["y"], name="fc2"),
    ]
    graph = helper.make_graph(
        nodes, "e2e_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(np.zeros(64, np.float32), "b1"),
         numpy_helper.from_array(w2, "w2")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture
def fresh() -> PluginManager:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PluginManager().load()


def _system(fresh: PluginManager, options: dict[str, Any],
            env: dict[str, str] | None = None) -> Any:
    return geplug.initialize_system("atlas_a2", options, manager=fresh, env=env or {})


@pytest.mark.geplug_product_capability("runtime.initialize_system")
def test_dump_step_0_3_to_5_over_8_steps(fresh: PluginManager, tmp_path: Any,
                                         geplug_product: Any) -> None:
    options = {"enable_dump": True, "dump_path": str(tmp_path), "dump_step": "0|3-5"}
    with geplug.initialize_system(geplug_product.name, options,
                                  manager=fresh, env={}) as system:
        compiled = system.compile(_model(), fusion=False)
        for step in range(8):
            compiled.run({"x": X}, step=step)
    assert {e.step for e in iter_dump_tree(tmp_path)} == {0, 3, 4, 5}


@a2_only
def test_fp16_overflow_writes_opdebug_the_ops_dump_and_a_summary(fresh: PluginManager,
                                                                 tmp_path: Any) -> None:
    options = {"precision_mode": "allow_fp32_to_fp16", "enable_dump_debug": True,
               "dump_path": str(tmp_path)}
    with _system(fresh, options) as system:
        compiled = system.compile(_model(), fusion=False)
        assert compiled.decision("fc1").dtype == "float16"
        with pytest.warns(OverflowWarning, match="'fc1'"):
            compiled.run({"x": X}, step=0)
    entries = list(iter_dump_tree(tmp_path))
    opdebug = [e for e in entries if e.is_overflow]
    own = [e for e in entries if not e.is_overflow]
    assert len(opdebug) == 1 and [e.read().op_name for e in own] == ["fc1"]
    assert os.path.dirname(opdebug[0].path) == os.path.dirname(own[0].path)
    assert (opdebug[0].parsed.task_id, opdebug[0].parsed.stream_id) == (
        own[0].parsed.task_id, own[0].parsed.stream_id)
    record = opdebug[0].read().overflow_record()
    assert record is not None and record.task_id == own[0].parsed.task_id and record.status
    summary = json.loads((tmp_path / "overflow_summary.json").read_text())
    assert summary["first_overflow"]["op_name"] == "fc1"
    assert "fc1" in (tmp_path / "overflow_summary.txt").read_text()


@a2_only
def test_no_overflow_when_precision_is_kept(fresh: PluginManager, tmp_path: Any) -> None:
    options = {"precision_mode": "must_keep_origin_dtype", "enable_dump_debug": True,
               "dump_path": str(tmp_path)}
    with _system(fresh, options) as system:
        system.compile(_model(), fusion=False).run({"x": X}, step=0)
    assert list(iter_dump_tree(tmp_path)) == []


@a2_only
@pytest.mark.parametrize("level", [1, 2])
def test_injected_fault_writes_the_exception_dump_under_ascend_work_path(
    fresh: PluginManager, tmp_path: Any, level: int
) -> None:
    env = {"ASCEND_WORK_PATH": str(tmp_path / "work")}
    with _system(fresh, {"enable_exception_dump": level}, env) as system:
        compiled = system.compile(_model(), fusion=False)
        compiled.inject_fault("relu1")
        with pytest.raises(AICoreError) as info:
            compiled.run({"x": X}, step=0)
    err = info.value
    assert err.node == "relu1" and len(err.dump_files) == 1 and err.dump_files[0] in str(err)
    expected_dir = tmp_path / "work" / "extra-info" / "data-dump" / "0"
    assert os.path.dirname(err.dump_files[0]) == str(expected_dir)
    dump = read_dump(err.dump_files[0])
    assert dump.op_name == "relu1" and dump.inputs and dump.outputs
    assert len(dump.spaces) == (1 if level == 1 else 2)


@a2_only
@pytest.mark.filterwarnings("ignore::geplug.errors.ConfigWarning")  # the override is warned of
def test_npu_collect_path_wins_and_forces_level_1(fresh: PluginManager, tmp_path: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"NPU_COLLECT_PATH": str(tmp_path / "collect"),
           "ASCEND_WORK_PATH": str(tmp_path / "work")}
    monkeypatch.setenv("GEPLUG_SIM_FAULT_NODE", "fc2")
    with _system(fresh, {"enable_exception_dump": 2}, env) as system:
        compiled = system.compile(_model(), fusion=False)
        with pytest.raises(AICoreError) as info:
            compiled.run({"x": X}, step=0)
    (path,) = info.value.dump_files
    assert path.startswith(str(tmp_path / "collect" / "extra-info" / "data-dump" / "0"))
    assert len(read_dump(path).spaces) == 1


@a2_only
def test_compare_fp16_run_with_fp32_run_points_at_the_overflow(fresh: PluginManager,
                                                               tmp_path: Any) -> None:
    for mode, sub in (("allow_fp32_to_fp16", "fp16"), ("must_keep_origin_dtype", "fp32")):
        (tmp_path / sub).mkdir()
        with _system(fresh, {"precision_mode": mode, "enable_dump": True, "dump_mode": "all",
                             "dump_path": str(tmp_path / sub)}) as system:
            system.compile(_model(), fusion=False).run({"x": X}, step=0)
    report = compare_trees(tmp_path / "fp16", tmp_path / "fp32")
    first = report.first_failure
    assert first is not None and first.op_name == "fc1"
    assert [op.op_name for op in report.ops] == ["fc1", "bias1", "relu1", "fc2"]


def _regex_names(root: Any) -> list[str]:
    return [os.path.basename(p) for p in all_files(str(root))
            if not os.path.basename(p).startswith(("overflow_summary", "mapping.csv"))]


@a2_only
def test_overflow_record_ids_match_the_ops_files_and_directory(fresh: PluginManager,
                                                               tmp_path: Any) -> None:
    options = {"precision_mode": "allow_fp32_to_fp16", "enable_dump_debug": True,
               "dump_path": str(tmp_path)}
    with _system(fresh, options) as system:
        compiled = system.compile(_model(), fusion=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled.run({"x": X}, step=0)
    entries = list(iter_dump_tree(tmp_path))
    opdebug = next(e for e in entries if e.is_overflow)
    own = next(e for e in entries if not e.is_overflow)
    _, _, payload = split_dump_file(opdebug.path)  # independent decode (formats.md §3.1)
    magic, _version, valid, acc, _, data_len = struct.unpack_from("<6I", payload)
    assert (magic, valid, acc, data_len) == (0x5A5A5A5A, 1, 0, 88)  # fc1 runs on the AI Core
    model_id, stream_id, task_id, task_type, ctx, thread, *_, status = struct.unpack_from(
        "<11Q", payload, 24)
    assert status != 0
    assert str(model_id) == own.model_id == opdebug.model_id
    assert (stream_id, task_id) == (own.parsed.stream_id, own.parsed.task_id)
    assert (task_type, ctx, thread) == (own.parsed.task_type, own.parsed.context_id,
                                        own.parsed.thread_id)
    assert all(READER_REGEX.fullmatch(n) for n in _regex_names(tmp_path))


@a2_only
def test_exception_dump_level_1_defaults_to_the_current_directory(
    fresh: PluginManager, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with _system(fresh, {"enable_exception_dump": 1}) as system:
        compiled = system.compile(_model(), fusion=False)
        compiled.inject_fault("fc1")
        with pytest.raises(AICoreError, match="'fc1'") as info:
            compiled.run({"x": X}, step=0)
    (path,) = info.value.dump_files
    assert os.path.dirname(path) == str(tmp_path / "extra-info" / "data-dump" / "0")
    assert READER_REGEX.fullmatch(os.path.basename(path))
    dump = read_dump(path)
    assert [t.shape for t in dump.inputs] == [(4, 32), (32, 64)]
    assert [t.shape for t in dump.outputs] == [(4, 64)] and len(dump.spaces) == 1


@pytest.mark.geplug_product_capability("runtime.initialize_system")
def test_every_product_dumps_readable_files_named_as_it_declares(
    fresh: PluginManager, tmp_path: Any, geplug_product: Any
) -> None:
    with geplug.initialize_system(geplug_product.name, {"enable_dump": True, "dump_mode": "all",
                                                 "dump_path": str(tmp_path)},
                                  manager=fresh, env={}) as system:
        y = system.compile(_model(), fusion=False).run({"x": X}, step=0)["y"]
    names = _regex_names(tmp_path)
    assert len(names) == 4 and all(READER_REGEX.fullmatch(n) for n in names)
    parts = 9 if geplug_product.dump.ffts_plus_names else 5
    assert all(len(n.split(".")) == parts for n in names)
    last = next(e for e in iter_dump_tree(tmp_path) if e.parsed.op_name == "fc2").read()
    out = last.outputs[0].array
    assert out is not None and np.array_equal(out.astype(np.float32), y, equal_nan=True)


def _simulate_in_process(root: str) -> None:
    import warnings

    import geplug

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with geplug.initialize_system("atlas_a2", {"enable_dump": True, "dump_mode": "all",
                                                   "dump_path": root}, env={}) as system:
            compiled = system.compile(_model(), fusion=False)
            for step in range(3):
                compiled.run({"x": X}, step=step)


@a2_only
def test_two_simulator_processes_share_one_dump_path(tmp_path: Any) -> None:
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_simulate_in_process, args=(str(tmp_path),)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    entries = list(iter_dump_tree(tmp_path))
    assert len(entries) == 2 * 3 * 4  # two processes x three steps x four ops
    assert all(e.read().outputs for e in entries)
