"""Fuzz: ONNX models and run inputs - mutated bytes of a valid model, models with hostile
shapes, attributes and op types, damaged ``.npy`` inputs - through ``geplug compile`` and
``geplug run`` on an installed product (needs geplug-simulator and a product package)."""

from __future__ import annotations

import io
import os

import numpy as np
import pytest
from fuzz_support import count, mutate, run_cli, scratch, unchanged
from hypothesis import given
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
pytest.importorskip("geplug_simulator")
from onnx import TensorProto, helper  # noqa: E402


@pytest.fixture(scope="module")
def product_name() -> str:
    import warnings

    import geplug

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        names = [p.name for p in geplug.installed_products()
                 if p.ops and p.name != "fuzzcard"]
    if not names:
        pytest.skip("no installed product declares operators (install a product package)")
    return sorted(names)[0]


def _model(op: str = "Relu", dims: tuple[object, ...] = (2, 3), opset: int = 17,
           attr: dict[str, object] | None = None) -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(dims))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    w = helper.make_tensor("w", TensorProto.FLOAT, [3, 3], np.ones(9, np.float32).tolist())
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="fc1"),
             helper.make_node(op, ["h"], ["y"], name="act", **(attr or {}))]
    graph = helper.make_graph(nodes, "fuzz", [x], [y], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]
                             ).SerializeToString()


_VALID = _model()


@st.composite
def models(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["mutate", "mutate", "shape", "op", "opset"]))
    if kind == "mutate":
        return mutate(_VALID, draw)
    if kind == "shape":
        return _model(dims=tuple(draw(st.lists(st.one_of(
            st.integers(-3, 2**40), st.sampled_from(["N", "", "batch"])), max_size=5))))
    if kind == "op":
        return _model(op=draw(st.sampled_from(["Softmax", "Bogus", "Cast", "Reshape", "",
                                               "If", "LRN", "Sigmoid"])),
                      attr=draw(st.sampled_from([None, {"axis": 99}, {"to": 1000},
                                                 {"size": -1}])))
    return _model(opset=draw(st.integers(-1, 40)))


def _npy(draw: st.DrawFn) -> bytes:
    buf = io.BytesIO()
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
    dtype = draw(st.sampled_from(["float32", "float16", "int64", "bool", "float64"]))
    np.save(buf, np.ones(shape, dtype=dtype))
    raw = buf.getvalue()
    return mutate(raw, draw) if draw(st.booleans()) else raw


@given(model=models(), data=st.data(),
       command=st.sampled_from(["compile", "run", "run-input"]))
def test_any_model_and_input_gets_an_answer(product_name: str, model: bytes,
                                            data: st.DataObject, command: str) -> None:
    count("ONNX model / run input")
    with scratch() as tmp:
        path = os.path.join(tmp, "model.onnx")
        with open(path, "wb") as fh:
            fh.write(model)
        argv = ["compile", "--product", product_name, path] if command == "compile" else [
            "run", "--product", product_name, "--steps", "1", path]
        if command == "run-input":
            npy = os.path.join(tmp, "x.npy")
            with open(npy, "wb") as fh:
                fh.write(_npy(data.draw))
            argv[1:1] = ["--input", f"{data.draw(st.sampled_from(['x', 'y', '']))}={npy}"]
        with unchanged(tmp):
            cwd = os.getcwd()
            os.chdir(tmp)  # kernel_meta and other outputs land in the scratch directory
            try:
                run_cli(argv, names=("model.onnx", "x.npy", "--input", "fc1", "act", "node",
                                     "opset", "error"))
            finally:
                os.chdir(cwd)


def test_the_unmutated_model_compiles_and_runs(product_name: str) -> None:
    """The seed of the mutations is a model the simulator takes (else the fuzzing above
    would only ever exercise the rejection paths)."""
    with scratch() as tmp:
        path = os.path.join(tmp, "model.onnx")
        with open(path, "wb") as fh:
            fh.write(_VALID)
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            assert run_cli(["compile", "--product", product_name, path])[0] == 0
            assert run_cli(["run", "--product", product_name, "--steps", "1", path])[0] == 0
        finally:
            os.chdir(cwd)
