"""The model name (dump directory, events) is the ONNX graph name, else the file stem."""

from __future__ import annotations

import os

import numpy as np
import onnx
from sim_helpers import any_product, make_system, overflow_model


def _saved(tmp_path, graph_name: str, file_name: str = "exported_v3.onnx") -> str:
    model = overflow_model()
    model.graph.name = graph_name
    path = tmp_path / file_name
    onnx.save(model, path)
    return str(path)


def test_model_from_a_path_is_named_after_its_graph(tmp_path):
    compiled = make_system(any_product()).compile(_saved(tmp_path, "resnet block"))
    assert compiled.name == "resnet block"


def test_model_without_a_graph_name_is_named_after_the_file_stem(tmp_path):
    compiled = make_system(any_product()).compile(_saved(tmp_path, ""))
    assert compiled.name == "exported_v3"


def test_name_argument_wins_over_the_graph_name(tmp_path):
    compiled = make_system(any_product()).compile(_saved(tmp_path, "g"), name="mine")
    assert compiled.name == "mine"


def test_dump_directory_uses_the_sanitised_graph_name(tmp_path):
    root = tmp_path / "dump"
    root.mkdir()
    system = make_system(any_product(), enable_dump=True, dump_path=str(root),
                         resolved__dump_root=str(root))
    with system:
        system.compile(_saved(tmp_path, "net v1.2/main")).run({"x": np.ones((1, 4),
                                                                          np.float32)})
    (time_dir,) = os.listdir(root)
    (device,) = os.listdir(root / time_dir)
    assert os.listdir(root / time_dir / device) == ["net_v1_2_main"]
