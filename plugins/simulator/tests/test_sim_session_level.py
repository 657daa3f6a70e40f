"""onnxruntime's full optimisation keeps the Cast pairs that emulate reduced precision."""

from __future__ import annotations

import collections

import onnx
import onnxruntime as ort
import pytest
from geplug_simulator import netbuild as nb
from geplug_simulator.runtime import loadable_by_onnxruntime, session_options

import geplug

pytestmark = pytest.mark.requires_products("atlas_a2")


@pytest.mark.parametrize("build", [lambda: nb.resnet18(batch=1, res=32),
                                   lambda: nb.bert(layers=1, hidden=64, heads=4, seq=8,
                                                   batch=1)], ids=["resnet18", "bert"])
def test_every_cast_pair_survives_the_sessions_graph_optimisation(build, tmp_path) -> None:
    with geplug.initialize_system("atlas_a2", {"precision_mode": "allow_fp32_to_fp16"}) as s:
        rewritten = s.compile(build()).rewritten.model
    so = session_options()
    assert so.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(loadable_by_onnxruntime(rewritten).SerializeToString(), so,
                         providers=["CPUExecutionProvider"])
    before = collections.Counter(n.op_type for n in rewritten.graph.node)["Cast"]
    after = collections.Counter(
        n.op_type for n in onnx.load(so.optimized_model_filepath).graph.node)["Cast"]
    assert before > 10 and after == before
