"""``geplug.open_device``: the ATC/ACL path on every product, inference products included."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import geplug
from geplug.errors import ConfigError, GeplugError

pytest.importorskip("geplug_simulator")
onnx = pytest.importorskip("onnx")

REPO = Path(__file__).resolve().parents[2]


def _model() -> object:
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.full((8, 4), 0.5, np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"], name="fc"),
         helper.make_node("Relu", ["h"], ["y"], name="relu")],
        "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.geplug_requires_products("atlas_infer")
def test_open_device_compiles_and_runs_on_atlas_infer(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = {"precision_mode": "force_fp16", "graph_run_mode": 0}
    with geplug.open_device(product="atlas_infer", config=config) as device:
        assert isinstance(device, geplug.System) and device.product.name == "atlas_infer"
        compiled = device.compile(_model())
        assert {d.dtype for d in compiled.decisions} == {"float16"}
        out = compiled.run({"x": np.ones((2, 8), np.float32)})
    np.testing.assert_allclose(out["y"], np.full((2, 4), 4.0, np.float32))
    assert device.closed


@pytest.mark.geplug_requires_products("atlas_200i_a2")
def test_open_device_compiles_and_runs_on_atlas_200i_a2(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = {"precision_mode": "force_fp16", "graph_run_mode": 0}
    with geplug.open_device(product="atlas_200i_a2", config=config) as device:
        out = device.compile(_model()).run({"x": np.ones((2, 8), np.float32)})
    np.testing.assert_allclose(out["y"], np.full((2, 4), 4.0, np.float32))


@pytest.mark.geplug_requires_products("atlas_infer")
def test_initialize_system_still_refuses_atlas_infer() -> None:
    with pytest.raises(ConfigError, match="initialize_system is not supported"):
        geplug.initialize_system(product="atlas_infer", config={"graph_run_mode": 0})


@pytest.mark.geplug_requires_products("atlas_infer")
def test_open_device_applies_every_other_rule() -> None:
    with pytest.raises(ConfigError, match="open_device") as info:
        geplug.open_device(product="atlas_infer", config={"precision_mode": "no_such_mode"})
    assert "precision_mode" in str(info.value)


def test_open_device_takes_the_device_id(geplug_product, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with geplug.open_device(product=geplug_product.name, device_id=3, env={}) as device:
        assert device.device_id == 3


def test_open_device_refuses_a_bad_device_id(geplug_product) -> None:
    with pytest.raises(GeplugError, match="device_id=-1"):
        geplug.open_device(product=geplug_product.name, device_id=-1)


KNOWN_BACKEND_IMPORTS: set[str] = set()
"""None left: the multi-rank command moved into the simulator (``geplug cluster``, offered
through ``geplug_subcommands`` like ``demo``)."""


def test_the_core_never_imports_a_backend() -> None:
    offenders = []
    for path in (REPO / "geplug").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.relative_to(REPO)}: {n}" for n in names
                          if n.split(".")[0] in ("geplug_simulator", "geplug_torch")]
    assert set(offenders) - KNOWN_BACKEND_IMPORTS == set()
