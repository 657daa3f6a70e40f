"""Format conversions on the torch backend: each TransData the device model inserts
(``trans_TransData_<n>``, docs/device-model.md "Format conversions") is a kernel of its own,
launched inside the aten call that first reads the converted tensor - as torch_npu casts a
tensor's format inside the op that needs it - so profiles show it as one more kernel of that
call's ``aten::`` framework op, never as a framework op of its own.

atlas_infer (Ascend 310P) does not train (no ``initialize_system``), so its graphs are
compiled through the backend contract (``open_device`` + ``TorchModel``); training graphs
and the torch profiler are exercised on atlas_a2, which declares the same formats (its
910B op-info configuration). A product that declares none (a card that drops them) runs
no TransData.
"""

from __future__ import annotations

import csv
import glob
import json
import os
import re
import sqlite3
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import attrs  # noqa: E402
import geplug_torch  # noqa: E402
from geplug_torch import profiler as P  # noqa: E402
from torch_helpers import Shuffle  # noqa: E402

import geplug  # noqa: E402
from geplug.dump.reader import read_dump  # noqa: E402
from geplug.errors import ConfigWarning  # noqa: E402
from geplug.testing.plugin import require_product  # noqa: E402

pytestmark = pytest.mark.geplug_requires_products("atlas_infer", "atlas_a2")

KEEP = {"precision_mode": "must_keep_origin_dtype"}
SHAPE = (2, 16, 8, 8)
TRANS = re.compile(r"(gradients/)?trans_TransData_\d+")


def _module() -> Shuffle:
    torch.manual_seed(0)
    return Shuffle()


def _batch() -> torch.Tensor:
    return torch.randn(SHAPE, generator=torch.Generator().manual_seed(1))


def _formats_on_a2() -> Any:
    """atlas_a2 as declared: a product that trains and converts formats."""
    a2 = require_product("atlas_a2")
    assert a2.graph.five_hd_op_types and a2.graph.nd_op_types
    return a2


def _no_formats_a2() -> Any:
    """atlas_a2 with no format declared (a card that drops the three lists)."""
    a2 = require_product("atlas_a2")
    return attrs.evolve(a2, graph=attrs.evolve(
        a2.graph, five_hd_op_types=(), nd_op_types=(), channel_aligned_op_types=()))


def _transdata(graph: Any) -> list[Any]:
    return [op for op in graph.ops if op.record.op_type == "TransData"]


def _check_calls(graph: Any) -> None:
    """Every TransData op runs no fx node and belongs to the aten call of the task that
    first reads the converted tensor, right before that task's op."""
    device = graph.device
    ops = list(graph.ops)
    by_name = {op.record.name: op for op in ops}
    prefix = "gradients/" if graph.phase == "backward" else ""
    trans = _transdata(graph)
    assert [op.record.name for op in trans] == [prefix + c.name for c in device.conversions]
    for op in trans:
        conv = op.conversion
        assert TRANS.fullmatch(op.record.name) and op.members == ()
        assert op.decision.op_type == "TransData" and op.decision.node == op.record.name
        assert op.record.engine == "AI_CORE" and op.record.dtype == conv.dtype
        reader = by_name[prefix + device.node_task[conv.consumer]]
        assert (op.call, op.aten, op.call_inputs) == (reader.call, reader.aten,
                                                     reader.call_inputs)
        assert ops.index(op) < ops.index(reader)
        assert [m.name for m in op.inputs] == [conv.tensor]
        assert [m.name for m in op.outputs] == [conv.output]
    assert all(op.call for op in ops)


# -- atlas_infer: the inference graph -------------------------------------------------------

def _open_infer(**config: Any) -> geplug.System:
    """atlas_infer with ``config`` (``op_debug_level``'s deprecation warning is not this
    test's subject)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        return geplug.open_device("atlas_infer", config, backend="torch")


def _compile_infer(system: geplug.System) -> Any:
    model = geplug_torch.TorchModel(module=_module(), inputs={"x": _batch().numpy()},
                                    outputs=("y",), name="shuffle")
    return system.compile(model)


def test_atlas_infer_runs_each_transdata_inside_its_readers_aten_call() -> None:
    with _open_infer() as system:
        compiled = _compile_infer(system)
        out = compiled.run({"x": _batch().numpy()}, step=0)["y"]
    graph = compiled.graph
    convs = graph.device.conversions
    # the input (plain -> 5HD), the convolution's output before the Transpose (5HD ->
    # plain) and the Transpose's output before the transposed convolution (plain -> 5HD)
    assert [(c.source, c.target) for c in convs] == [("ND", "NC1HWC0"), ("NC1HWC0", "ND"),
                                                      ("ND", "NC1HWC0")]
    _check_calls(graph)
    assert [op.aten for op in _transdata(graph)] == ["convolution", "permute", "convolution"]
    assert _transdata(graph)[0].record.data_inputs == ("x",)
    # a conversion has a time of its own; the graph's ops decide as before
    assert all(compiled.op_times[c.name] > 0 for c in convs)
    assert not any(d.op_type == "TransData" for d in compiled.decisions)
    # atlas_infer computes the convolutions in float16: the result is torch's within it
    with torch.no_grad():
        want = _module()(_batch()).numpy()
    np.testing.assert_allclose(out, want, rtol=2e-2, atol=2e-2)


def _op_summary(root: Path) -> list[dict[str, str]]:
    (path,) = glob.glob(str(root / "PROF_*" / "mindstudio_profiler_output" /
                            "op_summary_*.csv"))
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_atlas_infer_profiles_dumps_and_kernel_meta_show_each_side_of_a_transdata(
        tmp_path) -> None:
    (tmp_path / "dump").mkdir()
    system = _open_infer(
        profiling_mode=True,
        profiling_options=json.dumps({"output": str(tmp_path / "prof"), "task_trace": "on"}),
        enable_dump=True, dump_path=str(tmp_path / "dump"), dump_mode="all",
        op_debug_level=3, debug_dir=str(tmp_path))
    try:
        compiled = _compile_infer(system)
        compiled.run({"x": _batch().numpy()}, step=0)
    finally:
        system.shutdown()
    rows = _op_summary(tmp_path / "prof")
    assert [r["Op Name"] for r in rows] == [op.record.name for op in compiled.graph.ops]
    first, second, third = (r for r in rows if r["OP Type"] == "TransData")
    # the input arrives plain (NCHW) and is read in 5HD; 58 channels are 4 C0 blocks
    assert (first["Input Formats"], first["Output Formats"]) == ("FORMAT_NCHW",
                                                                  "FORMAT_NC1HWC0")
    assert first["Input Shapes"].strip('"') == "2,16,8,8"
    assert first["Output Shapes"].strip('"') == "2,1,8,8,16"
    assert (second["Input Formats"], second["Output Formats"]) == ("FORMAT_NC1HWC0",
                                                                    "FORMAT_NCHW")
    assert second["Input Shapes"].strip('"') == "2,4,8,8,16"
    assert second["Output Shapes"].strip('"') == "2,58,8,8"
    assert (third["Input Formats"], third["Output Formats"]) == ("FORMAT_NCHW",
                                                                  "FORMAT_NC1HWC0")
    assert second["Input Data Types"] == second["Output Data Types"] == "DT_FLOAT16"
    assert second["Task Type"] == "AI_CORE"
    # the convolution's own row: data in and out in NC1HWC0 (5-D), its (58, 16, 3, 3) filter
    # in FRACTAL_Z (C1*H*W = 9, ceil(58/16) = 4), the bias plain
    conv = next(r for r in rows if r["OP Type"] == "Conv2D")
    assert conv["Input Formats"] == "FORMAT_NC1HWC0;FORMAT_FRACTAL_Z;FORMAT_ND"
    assert conv["Input Shapes"].strip('"') == "2,1,8,8,16;9,4,16,16;58"
    assert (conv["Output Formats"], conv["Output Shapes"].strip('"')) == (
        "FORMAT_NC1HWC0", "2,4,8,8,16")
    (transpose,) = (r for r in rows if r["OP Type"] == "Transpose")
    assert transpose["Input Formats"] == "FORMAT_ND"
    # the dump holds the logical array: the conversion changes no value
    files = sorted(glob.glob(str(tmp_path / "dump" / "**" / "TransData.*"), recursive=True))
    assert [os.path.basename(f).split(".")[1] for f in files] == [
        "trans_TransData_0", "trans_TransData_1", "trans_TransData_2"]
    (conv,) = glob.glob(str(tmp_path / "dump" / "**" / "Conv2D.convolution.*"),
                        recursive=True)
    produced = read_dump(conv).outputs[0].array
    dumped = read_dump(files[1])
    np.testing.assert_array_equal(dumped.inputs[0].array, produced)
    np.testing.assert_array_equal(dumped.outputs[0].array, produced)
    kernels = [json.loads(Path(p).read_text())
               for p in glob.glob(str(tmp_path / "kernel_meta" / "*.json"))]
    trans = {k["nodeName"] for k in kernels if k.get("opType") == "TransData"}
    assert trans == {"trans_TransData_0", "trans_TransData_1", "trans_TransData_2"}


# -- training: forward and backward graphs, the torch profiler ------------------------------

def _train_step(compiled: Any, net: torch.nn.Module) -> tuple[torch.Tensor, list[Any]]:
    x = _batch()
    y = compiled(x)
    y.square().sum().backward()
    grads = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    return y.detach(), grads


@pytest.fixture
def formats_backend():
    be = geplug_torch.backend(product=_formats_on_a2(), config=KEEP)
    yield be
    be.shutdown()


def test_forward_and_backward_graphs_run_their_transdata_in_their_readers_calls(
        formats_backend) -> None:
    net = _module()
    y, grads = _train_step(torch.compile(net, backend=formats_backend), net)
    (model,) = formats_backend.models
    fw, bw = model.graphs["forward"], model.graphs["backward"]
    for graph in (fw, bw):
        assert graph.device.conversions
        _check_calls(graph)
    # the backward converts the output gradient for the transposed convolution's input
    # gradient (a Conv2D): a kernel of the convolution_backward call
    first = _transdata(bw)[0]
    assert first.record.name == "gradients/trans_TransData_0"
    assert (first.aten, first.inputs[0].name) == ("convolution_backward", "tangents_1")
    # the conversions change no value: the step is torch's own
    ref = _module()
    want_y, want_grads = _train_step(ref, ref)
    torch.testing.assert_close(y, want_y)
    for got, want in zip(grads, want_grads, strict=True):
        torch.testing.assert_close(got, want)


def _trace_and_kernels(root: str) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    out = os.path.join(root, "ASCEND_PROFILER_OUTPUT")
    with open(os.path.join(out, "trace_view.json"), encoding="utf-8") as fh:
        events = json.load(fh)
    with open(os.path.join(out, "kernel_details.csv"), encoding="utf-8", newline="") as fh:
        kernels = list(csv.DictReader(fh))
    return events, kernels


def test_the_profiler_shows_each_transdata_as_a_kernel_of_its_readers_framework_op(
        formats_backend, tmp_path) -> None:
    net = _module()
    compiled = torch.compile(net, backend=formats_backend)
    exp = P._ExperimentalConfig(profiler_level=P.ProfilerLevel.Level1,  # kernels' op types
                                export_type=[P.ExportType.Text, P.ExportType.Db])
    with P.profile(activities=[P.ProfilerActivity.CPU, P.ProfilerActivity.NPU],
                   schedule=P.schedule(wait=0, warmup=0, active=1, repeat=1),
                   on_trace_ready=P.tensorboard_trace_handler(str(tmp_path), "w"),
                   record_shapes=True, profile_memory=True, experimental_config=exp) as prof:
        _train_step(compiled, net)
        prof.step()
    formats_backend.shutdown()
    (model,) = formats_backend.models
    graphs = list(model.graphs.values())
    (root,) = prof.outputs
    events, kernels = _trace_and_kernels(root)
    trans = [op.record.name for g in graphs for op in _transdata(g)]
    assert [k["Name"] for k in kernels if k["Type"] == "TransData"] == trans
    # the forward convolution's kernel row shows its tensors as the device holds them:
    # data in and out NC1HWC0 (5-D), its (58, 16, 3, 3) filter FRACTAL_Z, its bias ND
    conv = next(k for k in kernels if k["Type"] == "Conv2D")
    assert conv["Input Formats"] == "NC1HWC0;FRACTAL_Z;ND"
    assert conv["Input Shapes"].strip('"') == "2,1,8,8,16;9,4,16,16;58"
    assert conv["Output Formats"] == "NC1HWC0"
    # one framework op per aten call: the TransData kernels add none
    framework = [e for e in events if e.get("cat") == "cpu_op"
                 and str(e.get("name", "")).startswith("aten::")]
    calls = [(g.phase, op.call) for g in graphs for op in g.ops]
    assert len(framework) == len(set(calls))
    assert {e["name"] for e in framework} == {f"aten::{op.aten}" for g in graphs
                                                for op in g.ops}
    # the call's framework op starts at its first kernel, the TransData, which its flow
    # reaches; it shows the call's own arguments
    hardware = {e["name"]: e for e in events if e.get("ph") == "X"
                and e.get("name") in set(trans)}
    flows = {(e["pid"], e["tid"], e["ts"]) for e in events if e.get("ph") == "f"}
    transpose = next(op for op in _transdata(model.graphs["forward"])
                     if op.aten == "transpose")
    kernel = hardware[transpose.record.name]
    (host,) = [e for e in framework if e["name"] == "aten::transpose"
               and e["ts"] == kernel["ts"]]
    assert (kernel["pid"], kernel["tid"], kernel["ts"]) in flows
    assert host["args"]["Input Dims"] == [[2, 58, 8, 8]]
    # the database export has the same framework ops, each linked to its first kernel
    db = os.path.join(root, "ASCEND_PROFILER_OUTPUT", "ascend_pytorch_profiler_0.db")
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT s.value, p.connectionId FROM PYTORCH_API p "
            "JOIN STRING_IDS s ON s.id = p.name WHERE s.value LIKE 'aten::%'").fetchall()
    assert len(rows) == len(set(calls)) and all(cid is not None for _, cid in rows)


def test_a_product_declaring_no_formats_runs_no_transdata() -> None:
    be = geplug_torch.backend(product=_no_formats_a2(), config=KEEP)
    try:
        net = _module()
        _train_step(torch.compile(net, backend=be), net)
        (model,) = be.models
    finally:
        be.shutdown()
    for graph in model.graphs.values():
        assert graph.device.conversions == ()
        assert not _transdata(graph)
        assert all(op.members for op in graph.ops)
