"""Format conversions as the real stack runs them: each TransData GE inserts is a task of its
own, ``trans_TransData_<n>``, in the profiles (op_summary rows with each side's shape and
format, as ``ge_task_data`` shows them), in the data dumps (``TransData.trans_TransData_<n>``
files) and in kernel_meta; on a product that declares no formats there are none
(docs/device-model.md, "Format conversions")."""

from __future__ import annotations

import csv
import glob
import json
import os
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper
from sim_helpers import f32, graph_model

import geplug
from geplug.dump.reader import read_dump
from geplug.errors import ConfigWarning

pytestmark = pytest.mark.requires_products("atlas_infer")


def _shuffle() -> onnx.ModelProto:
    """conv to 58 channels -> Transpose (ND only) -> conv: a TransData on each side of the
    Transpose (58 channels are no whole C0 blocks)."""
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((58, 16, 1, 1)).astype(np.float32) * 0.1
    w2 = rng.standard_normal((16, 58, 1, 1)).astype(np.float32) * 0.1
    return graph_model(
        [helper.make_node("Conv", ["x", "w1"], ["a"], name="c1"),
         helper.make_node("Transpose", ["a"], ["b"], name="tr", perm=[0, 1, 3, 2]),
         helper.make_node("Conv", ["b", "w2"], ["y"], name="c2")],
        [f32("x", [2, 16, 8, 8])], [f32("y", [2, 16, 8, 8])], {"w1": w1, "w2": w2},
        name="shuffle")


def _open(tmp_path: str, product: str = "atlas_infer") -> geplug.System:
    """A device profiling every task, dumping every op and keeping kernel_meta (through the
    deprecated ``op_debug_level``, whose warning is not this test's subject)."""
    os.makedirs(os.path.join(tmp_path, "dump"), exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        return geplug.open_device(product, {
            "profiling_mode": True,
            "profiling_options": json.dumps({"output": os.path.join(tmp_path, "prof"),
                                             "task_trace": "on"}),
            "enable_dump": True, "dump_path": os.path.join(tmp_path, "dump"),
            "dump_mode": "all", "op_debug_level": 3, "debug_dir": tmp_path})


def _op_summary(tmp_path: str) -> list[dict[str, str]]:
    (path,) = glob.glob(os.path.join(tmp_path, "prof", "PROF_*", "mindstudio_profiler_output",
                                     "op_summary_*.csv"))
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_each_transdata_is_a_profiled_task_with_each_side_in_its_format(tmp_path) -> None:
    system = _open(str(tmp_path))
    try:
        compiled = system.compile(_shuffle())
        compiled.run({"x": np.ones((2, 16, 8, 8), np.float32)})
        device = compiled.device
    finally:
        system.shutdown()
    names = [c.name for c in device.conversions]
    assert names == ["trans_TransData_0", "trans_TransData_1"]
    rows = _op_summary(str(tmp_path))
    assert [r["Op Name"] for r in rows] == ["c1", "trans_TransData_0", "tr",
                                           "trans_TransData_1", "c2"]
    first, second = (r for r in rows if r["OP Type"] == "TransData")
    # 5HD -> plain before the Transpose, plain -> 5HD after it (58 channels = 4 C0 blocks)
    assert (first["Input Formats"], first["Output Formats"]) == ("FORMAT_NC1HWC0",
                                                                  "FORMAT_NCHW")
    assert first["Input Shapes"].strip('"') == "2,4,8,8,16"
    assert first["Output Shapes"].strip('"') == "2,58,8,8"
    assert (second["Input Formats"], second["Output Formats"]) == ("FORMAT_NCHW",
                                                                    "FORMAT_NC1HWC0")
    assert first["Task Type"] == "AI_CORE" and first["Input Data Types"] == "DT_FLOAT16"
    # the task's time is the device model's, and it runs before its reader
    plans = {p.name: p for p in device.tasks}
    assert float(first["Task Duration(us)"]) == pytest.approx(
        plans["trans_TransData_0"].duration_ns / 1000, abs=1e-3)
    assert float(rows[2]["Task Start Time(us)"]) >= float(first["Task Start Time(us)"]) + \
        float(first["Task Duration(us)"]) - 1e-3


def test_ops_computing_in_5hd_report_their_tensors_as_the_device_holds_them(tmp_path
                                                                          ) -> None:
    """A convolution's row shows its data input and output in NC1HWC0 with the 5-D shape
    and its filter in FRACTAL_Z, as the real op_summary does; the ND Transpose keeps its
    logical shapes (a product that declares no formats: the next test)."""
    system = _open(str(tmp_path))
    try:
        system.compile(_shuffle()).run({"x": np.ones((2, 16, 8, 8), np.float32)})
    finally:
        system.shutdown()
    rows = {r["Op Name"]: r for r in _op_summary(str(tmp_path))}
    c1, tr, c2 = rows["c1"], rows["tr"], rows["c2"]
    # x: 16 channels = one C0 block; w1 (58, 16, 1, 1): C1*H*W = 1, ceil(58/16) = 4
    assert c1["Input Formats"] == "FORMAT_NC1HWC0;FORMAT_FRACTAL_Z"
    assert c1["Input Shapes"].strip('"') == "2,1,8,8,16;1,4,16,16"
    assert (c1["Output Formats"], c1["Output Shapes"].strip('"')) == ("FORMAT_NC1HWC0",
                                                                      "2,4,8,8,16")
    assert (tr["Input Formats"], tr["Input Shapes"].strip('"')) == ("FORMAT_ND", "2,58,8,8")
    # w2 (16, 58, 1, 1): C1 = ceil(58/16) = 4 -> 4*1*1, ceil(16/16) = 1
    assert c2["Input Shapes"].strip('"') == "2,4,8,8,16;4,1,16,16"


def test_an_ai_cpu_op_reading_a_5hd_tensor_gets_it_converted_to_nd(tmp_path) -> None:
    """A float64 ReduceMax (AI CPU on the 310P) reads a convolution's output: its AI CPU
    kernel takes plain formats (not format-agnostic in the AI CPU op-info), so a TransData
    rewrites the 5HD tensor to ND before it, and its row reports ND."""
    rng = np.random.default_rng(0)
    model = graph_model(
        [helper.make_node("Conv", ["x", "w"], ["a"], name="c1"),
         helper.make_node("Cast", ["a"], ["d"], name="cast", to=onnx.TensorProto.DOUBLE),
         helper.make_node("ReduceMax", ["d"], ["m"], name="rmax", axes=[1], keepdims=1),
         helper.make_node("Cast", ["m"], ["y"], name="back", to=onnx.TensorProto.FLOAT)],
        [f32("x", [2, 16, 8, 8])], [f32("y", [2, 1, 8, 8])],
        {"w": rng.standard_normal((32, 16, 1, 1)).astype(np.float32)}, name="cpu_reader")
    system = _open(str(tmp_path))
    try:
        compiled = system.compile(model)
        x = rng.standard_normal((2, 16, 8, 8)).astype(np.float32)
        got = compiled.run({"x": x})["y"]
        device = compiled.device
    finally:
        system.shutdown()
    assert {d.node: d.engine for d in compiled.decisions}["rmax"] == "AI_CPU"
    assert [(c.tensor, c.source, c.target, c.consumer) for c in device.conversions] == [
        ("d", "NC1HWC0", "ND", "rmax")]
    rows = _op_summary(str(tmp_path))
    names = [r["Op Name"] for r in rows]
    assert names.index("trans_TransData_0") == names.index("rmax") - 1
    rmax = rows[names.index("rmax")]
    assert rmax["Input Formats"] == "FORMAT_ND" and rmax["Task Type"] == "AI_CPU"
    # the conversion changes no value: the channel maximum of the (float16) convolution
    w = compiled.imported.model.graph.initializer[0]
    conv = np.einsum("oc,nchw->nohw", onnx.numpy_helper.to_array(w)[:, :, 0, 0], x)
    np.testing.assert_allclose(got, conv.max(axis=1, keepdims=True), rtol=1e-2, atol=1e-2)


def test_each_transdata_is_dumped_with_the_tensor_it_converts(tmp_path) -> None:
    system = _open(str(tmp_path))
    try:
        compiled = system.compile(_shuffle())
        compiled.run({"x": np.ones((2, 16, 8, 8), np.float32)})
    finally:
        system.shutdown()
    files = sorted(glob.glob(os.path.join(str(tmp_path), "dump", "**", "TransData.*"),
                             recursive=True))
    assert [os.path.basename(f).split(".")[1] for f in files] == [
        "trans_TransData_0", "trans_TransData_1"]
    (conv,) = glob.glob(os.path.join(str(tmp_path), "dump", "**", "Conv2D.c1.*"),
                        recursive=True)
    produced = read_dump(conv).outputs[0].array
    t0 = read_dump(files[0])
    # the dump holds the logical array (docs/dump.md): the conversion changes no value
    np.testing.assert_array_equal(t0.inputs[0].array, produced)
    np.testing.assert_array_equal(t0.outputs[0].array, produced)
    kernels = [json.loads(Path(p).read_text()) for p in glob.glob(
        os.path.join(str(tmp_path), "kernel_meta", "*.json"))]
    trans = [k for k in kernels if k.get("opType") == "TransData"]
    assert {k["nodeName"] for k in trans} == {"trans_TransData_0", "trans_TransData_1"}


def test_a_product_without_formats_runs_no_transdata(tmp_path) -> None:
    from geplug.testing.plugin import installed_products

    bare = next((p.name for p in installed_products() if not (
        p.graph.five_hd_op_types or p.graph.nd_op_types)), None)
    if bare is None:
        pytest.skip("every installed product declares formats")
    system = _open(str(tmp_path), bare)
    try:
        compiled = system.compile(_shuffle())
        compiled.run({"x": np.ones((2, 16, 8, 8), np.float32)})
    finally:
        system.shutdown()
    assert compiled.device.conversions == ()
    rows = _op_summary(str(tmp_path))
    assert not any(r["OP Type"] == "TransData" for r in rows)
    # and every tensor is reported in its logical shape: the convolutions' in NCHW
    c1 = {r["Op Name"]: r for r in rows}["c1"]
    assert (c1["Input Formats"], c1["Input Shapes"].strip('"')) == (
        "FORMAT_NCHW;FORMAT_NCHW", "2,16,8,8;58,16,1,1")


def test_a_conversion_that_run_time_shapes_add_is_profiled(tmp_path) -> None:
    # the channel count is open at compile: the Reshape after the pooling looks like it
    # keeps the channels; with 16 channels fed it folds them into 2 x 8 - a reshaping view
    # of a 5HD tensor, read through a TransData that exists only for the run's shapes
    model = graph_model(
        [helper.make_node("MaxPool", ["x"], ["a"], name="mp", kernel_shape=[1, 1]),
         helper.make_node("Reshape", ["a", "s"], ["b"], name="rs"),
         helper.make_node("Relu", ["b"], ["y"], name="re")],
        [f32("x", [1, "c", 8, 8])], [f32("y", [2, None, 8, 8])],
        {"s": np.array([2, -1, 8, 8], np.int64)}, name="dyn")
    system = _open(str(tmp_path))
    try:
        compiled = system.compile(model)
        assert compiled.device.conversions == ()
        compiled.run({"x": np.ones((1, 16, 8, 8), np.float32)})
        (conv,) = compiled.device.conversions
        assert [r.name for r in compiled.ops] == ["mp", conv.name, "re"]
        assert set(compiled.op_times) == {"mp", conv.name, "re"}
        span = compiled.simulated_time_us
    finally:
        system.shutdown()
    rows = _op_summary(str(tmp_path))
    assert [r["Op Name"] for r in rows] == ["mp", conv.name, "re"]
    assert sum(float(r["Task Duration(us)"]) for r in rows) <= span


def test_a_conversion_that_run_time_shapes_remove_leaves_no_stale_op(tmp_path) -> None:
    # at compile the batch is open and the Reshape to [1, -1, 8, 8] looks like it folds
    # it into the channels (the Softmax reads a conversion); fed batch 1 it changes
    # nothing: no conversion, and no record of it left behind
    rng = np.random.default_rng(0)
    model = graph_model(
        [helper.make_node("Conv", ["x", "w"], ["a"], name="cv"),
         helper.make_node("Reshape", ["a", "s"], ["b"], name="rs"),
         helper.make_node("Softmax", ["b"], ["y"], name="sm", axis=3)],
        [f32("x", ["n", 16, 8, 8])], [f32("y", [1, None, 8, 8])],
        {"w": (rng.standard_normal((16, 16, 1, 1)) * 0.1).astype(np.float32),
         "s": np.array([1, -1, 8, 8], np.int64)}, name="dyn2")
    system = _open(str(tmp_path))
    try:
        compiled = system.compile(model)
        assert [r.op_type for r in compiled.ops] == ["Conv2D", "TransData", "SoftmaxV2"]
        compiled.run({"x": np.ones((1, 16, 8, 8), np.float32)})
        names = [r.name for r in compiled.ops]
        assert names == ["cv", "sm"] == [p.name for p in compiled.device.tasks]
        assert set(compiled.op_times) == set(names)
    finally:
        system.shutdown()
    assert [r["Op Name"] for r in _op_summary(str(tmp_path))] == names
