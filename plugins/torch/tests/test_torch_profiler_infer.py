"""geplug_torch.profiler on an inference product (atlas_infer, Ascend 310P).

torch_npu profiles the Atlas inference series too. Such a product has no TF
``initialize_system`` (``runtime.initialize_system = false``): its torch models run on a
device opened through the ACL path (``geplug.open_device`` + ``TorchModel``), and the
profiler opens its own system of the product through the same path, on the same device, in
online inference (no ``training_trace``: GE refuses it there). The collection has the
``*_ascend_pt`` layout of a training product: kernel details listing the model's kernels
(the TransData format conversions atlas_infer inserts among them), the framework ops of
the trace and the database export, and with ``profile_memory`` the operator memory. A
product with ``initialize_system`` (atlas_a2) keeps opening the profiler's system through
it.
"""

from __future__ import annotations

import csv
import json
import os
import re
import sqlite3
import warnings
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import geplug_torch  # noqa: E402
from geplug_torch import profiler as P  # noqa: E402
from torch_helpers import Shuffle  # noqa: E402

import geplug  # noqa: E402
from geplug.errors import ConfigWarning  # noqa: E402
from geplug.plugin import get_manager  # noqa: E402
from geplug.profiling.reader import find_prof_dirs  # noqa: E402

pytestmark = pytest.mark.geplug_requires_products("atlas_infer")

SHAPE = (2, 16, 8, 8)
TRANS = re.compile(r"trans_TransData_\d+")
FILES = ("trace_view.json", "kernel_details.csv", "operator_details.csv", "op_statistic.csv",
         "step_trace_time.csv", "api_statistic.csv", "ascend_pytorch_profiler_0.db")


def _batch() -> np.ndarray:
    return torch.randn(SHAPE, generator=torch.Generator().manual_seed(1)).numpy()


def _model() -> geplug_torch.TorchModel:
    torch.manual_seed(0)
    return geplug_torch.TorchModel(module=Shuffle(), inputs={"x": _batch()}, outputs=("y",),
                                   name="shuffle")


def _open_infer(**kwargs: Any) -> geplug.System:
    return geplug.open_device("atlas_infer", {}, backend="torch", **kwargs)


class _Spy:
    """Records which geplug API opened a system, and with what (the real one still runs)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, Any, dict[str, Any]]] = []
        for api in ("initialize_system", "open_device"):
            monkeypatch.setattr(geplug, api, self._wrap(api, getattr(geplug, api)))

    def _wrap(self, api: str, real: Any) -> Any:
        def opened(product: Any, config: Any = None, **kwargs: Any) -> geplug.System:
            system = real(product, config, **kwargs)
            self.calls.append((api, system, kwargs))
            return system
        return opened

    def apis(self) -> list[str]:
        return [api for api, _, _ in self.calls]


def _profile(out: str, **kwargs: Any) -> P.profile:
    exp = P._ExperimentalConfig(profiler_level=P.ProfilerLevel.Level1,  # kernels' op types
                                export_type=[P.ExportType.Text, P.ExportType.Db])
    return P.profile(activities=[P.ProfilerActivity.CPU, P.ProfilerActivity.NPU],
                     schedule=P.schedule(wait=0, warmup=0, active=1, repeat=1),
                     on_trace_ready=P.tensorboard_trace_handler(out, "infer"),
                     record_shapes=True, experimental_config=exp, **kwargs)


def _rows(path: str) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _output(root: str, name: str) -> str:
    return os.path.join(root, "ASCEND_PROFILER_OUTPUT", name)


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One step of the model on atlas_infer's device 1, profiled with the profiler's
    system opened through a spy."""
    out = tmp_path_factory.mktemp("prof_infer")
    with pytest.MonkeyPatch.context() as mp:
        spy = _Spy(mp)
        system = _open_infer(device_id=1)
        try:
            compiled = system.compile(_model())
            with _profile(str(out), profile_memory=True) as prof:
                result = compiled.run({"x": _batch()}, step=0)
                prof.step()
        finally:
            system.shutdown()
    (root,) = prof.outputs
    return root, compiled, spy, result


def test_the_profilers_system_is_opened_through_open_device_on_the_models_device(
        collected) -> None:
    _, _, spy, _ = collected
    # the model's own device, then the profiler's: both on the ACL path
    assert spy.apis() == ["open_device", "open_device"]
    _, own, _ = spy.calls[0]
    _, prof_system, kwargs = spy.calls[1]
    assert (kwargs["device_id"], kwargs["backend"]) == (1, "torch")
    assert prof_system.product.name == "atlas_infer" and prof_system.device_id == 1
    assert kwargs["manager"] is own.manager
    assert prof_system.profiling_enabled and prof_system.closed
    # online inference: no iteration trace asked for (GE refuses training_trace there)
    assert prof_system.config.run_mode == "inference"
    assert not prof_system.config.config.profiling_options.training_trace


def test_the_collection_has_the_ascend_pt_layout(collected) -> None:
    root, _, _, _ = collected
    name = os.path.basename(root)
    assert name.startswith("infer_") and name.endswith("_ascend_pt")
    for f in FILES:
        assert os.path.isfile(_output(root, f)), f
    (prof_dir,) = find_prof_dirs(root)
    assert os.path.isdir(os.path.join(prof_dir, "device_1"))
    assert os.path.isdir(os.path.join(prof_dir, "mindstudio_profiler_output"))


def test_kernel_details_list_the_models_kernels_with_its_transdata(collected) -> None:
    root, compiled, _, _ = collected
    rows = _rows(_output(root, "kernel_details.csv"))
    graph = compiled.graph
    assert [r["Name"] for r in rows] == [op.record.name for op in graph.ops]
    assert {r["Device_id"] for r in rows} == {"1"} and {r["Step Id"] for r in rows} == {"0"}
    trans = [r for r in rows if r["Type"] == "TransData"]
    assert [r["Name"] for r in trans] == [c.name for c in graph.device.conversions]
    assert len(trans) == 3 and all(TRANS.fullmatch(r["Name"]) for r in trans)
    assert [r["Type"] for r in rows if r["Type"].startswith("Conv")] == [
        "Conv2D", "Conv2DTranspose"]
    # 58 channels in 5HD: four C0 blocks of 16
    second = trans[1]
    assert (second["Input Formats"], second["Output Formats"]) == ("NC1HWC0", "NCHW")
    assert second["Input Shapes"].strip('"') == "2,4,8,8,16"
    assert all(float(r["Duration(us)"]) > 0 for r in rows)


def test_framework_ops_are_the_models_aten_calls_in_trace_and_database(collected) -> None:
    root, compiled, _, _ = collected
    ops = compiled.graph.ops
    calls = {op.call for op in ops}
    with open(_output(root, "trace_view.json"), encoding="utf-8") as fh:
        events = json.load(fh)
    framework = [e for e in events if e.get("cat") == "cpu_op"
                 and str(e.get("name", "")).startswith("aten::")]
    # one framework op per aten call: the TransData kernels run inside their readers' calls
    assert len(framework) == len(calls) == 3
    assert [e["name"] for e in framework] == ["aten::convolution", "aten::permute",
                                              "aten::convolution"]
    assert {e["name"] for e in framework} == {f"aten::{op.aten}" for op in ops}
    assert framework[0]["args"]["Input Dims"] == [[2, 16, 8, 8], [58, 16, 3, 3], [58]]
    kernels = {e["name"] for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"}
    assert kernels == {op.record.name for op in ops}
    assert any(e.get("name") == "ProfilerStep#0" for e in events)
    with sqlite3.connect(_output(root, "ascend_pytorch_profiler_0.db")) as conn:
        rows = conn.execute(
            "SELECT s.value, p.connectionId FROM PYTORCH_API p "
            "JOIN STRING_IDS s ON s.id = p.name WHERE s.value LIKE 'aten::%'").fetchall()
    assert sorted(v for v, _ in rows) == sorted(e["name"] for e in framework)
    assert all(cid is not None for _, cid in rows)


def test_profile_memory_lists_the_models_constants(collected) -> None:
    root, _, _, _ = collected
    names = {r["Name"] for r in _rows(_output(root, "operator_memory.csv"))}
    assert {"cann::conv_weight", "cann::conv_bias", "cann::up_weight"} <= names
    assert _rows(_output(root, "memory_record.csv"))


def test_profiling_changes_no_result(collected) -> None:
    _, _, _, result = collected
    with torch.no_grad():
        want = _model().module(torch.from_numpy(_batch())).numpy()
    np.testing.assert_allclose(result["y"], want, rtol=2e-2, atol=2e-2)


def test_a_model_compiled_while_profiling_is_in_the_collection(tmp_path) -> None:
    with _open_infer() as system, _profile(str(tmp_path)) as prof:
        compiled = system.compile(_model())
        compiled.run({"x": _batch()})
        prof.step()
    (root,) = prof.outputs
    rows = _rows(_output(root, "kernel_details.csv"))
    assert [r["Name"] for r in rows] == [op.record.name for op in compiled.graph.ops]
    assert sum(1 for r in rows if r["Type"] == "TransData") == 3


def test_an_eager_hccl_jobs_clock_opens_an_inference_product_through_open_device(
        monkeypatch) -> None:
    from geplug_torch.distributed.rankenv import read_job_env
    from geplug_torch.distributed.timing import CommClock

    spy = _Spy(monkeypatch)
    product = get_manager().products().get("atlas_infer")
    clock = CommClock(read_job_env(product, 0, 1, {}), lambda t: [t])
    runtime = clock.runtime()
    try:
        assert spy.apis() == ["open_device"]
        assert runtime.system.product.name == "atlas_infer"
    finally:
        runtime.system.shutdown()


@pytest.mark.geplug_requires_products("atlas_a2")
def test_a_product_with_initialize_system_opens_the_profilers_system_through_it(
        monkeypatch, tmp_path) -> None:
    spy = _Spy(monkeypatch)
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        be = geplug_torch.backend(product="atlas_a2",
                                  config={"precision_mode": "must_keep_origin_dtype"})
    try:
        compiled = torch.compile(net, backend=be)
        with _profile(str(tmp_path)) as prof:
            compiled(torch.randn(4, 8)).square().sum().backward()
            prof.step()
    finally:
        be.shutdown()
    assert spy.apis() == ["initialize_system", "initialize_system"]
    _, prof_system, kwargs = spy.calls[1]
    assert "device_id" not in kwargs and kwargs["backend"] == "torch"
    assert prof_system.product.name == "atlas_a2"
    assert prof_system.config.config.profiling_options.training_trace == "on"
    (root,) = prof.outputs
    assert _rows(_output(root, "kernel_details.csv"))
