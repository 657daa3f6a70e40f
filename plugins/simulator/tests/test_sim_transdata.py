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
    assert not any(r["OP Type"] == "TransData" for r in _op_summary(str(tmp_path)))
