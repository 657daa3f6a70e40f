"""Hostile ONNX models (found by tests/fuzz/test_fuzz_onnx.py after the device-model merge):
negative or huge declared input shapes and non-UTF-8 names get a clear error and exit 1 from
``compile`` and ``run``; neither exhausts the host's memory nor raises a traceback."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("geplug_simulator")
pytestmark = pytest.mark.requires_products("atlas_a2")


def _model(dims: list[int], fc_name: str = "fc1") -> bytes:
    import numpy as np
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    w = helper.make_tensor("w", TensorProto.FLOAT, [3, 3], np.ones(9, np.float32).tolist())
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"], name=fc_name),
         helper.make_node("Relu", ["h"], ["y"], name="act")], "hostile", [x], [y], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]
                             ).SerializeToString()


_RUN_LIMITED = textwrap.dedent("""
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))  # a regression: MemoryError
    from geplug.cli.main import main
    sys.exit(main(sys.argv[1:]))
""")


def _geplug(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``geplug argv`` in a child limited to 3 GiB of address space, so a regression fails
    this test instead of exhausting the machine's memory."""
    return subprocess.run([sys.executable, "-c", _RUN_LIMITED, *argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("command", ["compile", "run"])
def test_a_negative_input_dimension_names_the_input(tmp_path: Path, command: str) -> None:
    (tmp_path / "model.onnx").write_bytes(_model([-3, 3]))
    done = _geplug(tmp_path, command, "--product", "atlas_a2", "model.onnx")
    assert done.returncode == 1, done.stderr
    assert "graph input 'x': dimension 0 is -3" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("command", ["compile", "run"])
def test_an_input_larger_than_the_device_memory_is_error_207001(tmp_path: Path,
                                                                command: str) -> None:
    (tmp_path / "model.onnx").write_bytes(_model([2**40, 3]))
    done = _geplug(tmp_path, command, "--product", "atlas_a2", "model.onnx")
    assert done.returncode == 1, done.stderr
    assert "207001" in done.stderr and "'x'" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_input_too_large_to_generate_compiles_and_run_asks_for_inputs(
        tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(_model([2**28, 3]))  # 3 GiB: fits 64 GiB of HBM
    compiled = _geplug(tmp_path, "compile", "--product", "atlas_a2", "model.onnx")
    assert compiled.returncode == 0, compiled.stderr
    done = _geplug(tmp_path, "run", "--product", "atlas_a2", "model.onnx")
    assert done.returncode == 1, done.stderr
    assert "input 'x'" in done.stderr and "--input NAME=FILE.npy" in done.stderr
    assert "docs/limits.md" in done.stderr and "Traceback" not in done.stderr


def test_a_name_that_is_not_utf8_is_named_by_its_field(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(_model([2, 3]).replace(b"\x03fc1", b"\x03f\xf91"))
    done = _geplug(tmp_path, "compile", "--product", "atlas_a2", "model.onnx")
    assert done.returncode == 1, done.stderr
    assert "model.graph.node[0].name is not UTF-8 text" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_zero_dimension_beside_huge_ones_is_no_traceback(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(_model([0, 2**40, 2**40, 3]))  # numpy: "too big"
    compiled = _geplug(tmp_path, "compile", "--product", "atlas_a2", "model.onnx")
    assert compiled.returncode in (0, 1) and "Traceback" not in compiled.stderr
    done = _geplug(tmp_path, "run", "--product", "atlas_a2", "model.onnx")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "207001" in done.stderr or "input 'x'" in done.stderr
