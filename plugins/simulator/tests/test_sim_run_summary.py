"""``geplug run`` says where its dumps, profiling output and kernel_meta went (only those
produced); ``geplug demo`` states its batch sizes; run-time kernel failures are RunErrors."""

from __future__ import annotations

import io
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from sim_helpers import any_product, graph_model, make_system, overflow_model

from geplug.cli.main import main
from geplug.errors import RunError

LOCATION_LABELS = ("dump:", "overflow summary:", "exception dump:", "profiling:",
                   "kernel_meta:")


@pytest.fixture
def model_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "m.onnx"
    onnx.save(overflow_model(), path)
    return str(path)


def _run(model_path, tmp_path, toml: str, capsys) -> list[str]:
    config = tmp_path / "session.toml"
    config.write_text(toml)
    assert main(["run", model_path, "--product", any_product().name,
                 "--config", str(config)]) == 0
    return capsys.readouterr().out.splitlines()


def _located(lines: list[str]) -> dict[str, str]:
    found = {}
    for line in lines:
        for label in LOCATION_LABELS:
            if line.startswith(label):
                found[label.rstrip(":")] = line[len(label):].strip()
    return found


def test_run_prints_the_dump_directory_and_nothing_it_did_not_produce(
        model_path, tmp_path, capsys):
    (tmp_path / "d").mkdir()
    found = _located(_run(model_path, tmp_path, 'enable_dump = true\ndump_path = "d"\n', capsys))
    assert list(found) == ["dump"]
    assert os.path.dirname(found["dump"]) == str(tmp_path / "d")
    assert os.listdir(found["dump"])  # the {time} directory holds the dump tree


def test_run_prints_the_profiling_directory(model_path, tmp_path, capsys):
    found = _located(_run(model_path, tmp_path, "profiling_mode = true\n", capsys))
    assert list(found) == ["profiling"]
    assert os.path.basename(found["profiling"]).startswith("PROF_")
    assert os.path.isdir(found["profiling"])


def test_run_prints_the_kernel_meta_directory_and_file_count(model_path, tmp_path, capsys):
    found = _located(_run(model_path, tmp_path, "op_debug_level = 3\n", capsys))
    assert list(found) == ["kernel_meta"]
    directory, _, count = found["kernel_meta"].partition(" (")
    assert directory == str(tmp_path / "kernel_meta")
    assert count == f"{len(os.listdir(directory))} files)"


def test_run_without_outputs_prints_no_locations(model_path, tmp_path, capsys):
    assert _located(_run(model_path, tmp_path, "", capsys)) == {}


def test_demo_states_the_batch_size_of_each_model():
    from geplug_simulator.demo import run_demo

    from geplug.cli.sim_cmds import open_system

    stream = io.StringIO()
    assert run_demo(open_system, product=any_product().name, modes=("force_fp32",
                    "must_keep_origin_dtype"), stream=stream) == 0
    out = stream.getvalue()
    assert "MLP (batch size 4, input x[4, 64])" in out
    assert "CNN (batch size 16, input image[16, 3, 64, 64])" in out


def test_a_kernel_failure_at_run_time_is_a_run_error_naming_the_node():
    model = graph_model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("shape", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None])],
    )
    compiled = make_system(any_product()).compile(model)
    with pytest.raises(RunError, match="failed to run at node 'reshape'"):
        compiled.run({"x": np.ones(4, np.float32), "shape": np.array([3], np.int64)})
