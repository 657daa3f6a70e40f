"""Python literals and ``.npy`` files a user gives are read without Python's compiler or
``numpy.load``: a clear error naming the input, never a warning or a traceback."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np
import pytest

from geplug.config.parse_tf import parse_tf_snippet
from geplug.npy import read_npy
from geplug.pyliteral import LiteralError, literal


def test_an_invalid_escape_in_a_tf_snippet_is_a_problem_not_a_warning() -> None:
    line = r'custom_op.parameter_map["dump_path"].s = tf.compat.as_bytes("C:\dir")'
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a DeprecationWarning/SyntaxWarning would raise here
        _config, problems = parse_tf_snippet(line)
    assert [p.option for p in problems] == ["line 1"]
    assert "invalid escape sequence '\\d'" in problems[0].message
    assert "raw string" in problems[0].message


def test_a_tf_snippet_with_escaped_backslashes_is_read() -> None:
    line = r'custom_op.parameter_map["dump_path"].s = tf.compat.as_bytes("C:\\dir")'
    config, problems = parse_tf_snippet(line)
    assert not [p for p in problems if p.severity == "error"]
    assert config.dump_path == "C:\\dir"


@pytest.mark.parametrize(("text", "value"), [
    ("'x'", "x"), ('b"\\x00a"', b"\x00a"), (r"r'\d'", "\\d"), ("1_000", 1000), ("-5", -5),
    ("(1,)", (1,)), ("(1)", 1), ("()", ()), ('"a" "b"', "ab"), ('"\\u00e9"', "é"),
    ("{'a': [1, 2.5, None, True]}", {"a": [1, 2.5, None, True]}), ("0x1F", 31),
])
def test_literals_read_as_python_reads_them(text: str, value: object) -> None:
    assert literal(text) == value


@pytest.mark.parametrize(("text", "why"), [
    ("'abc", "unterminated string"), ("0777", "leading zeros"), ("1 2", "unexpected text"),
    ("[" * 40 + "]" * 40, "deeper than 32"), ("inf", "not a literal"),
    ("__import__('os')", "not a literal"), ("'\\N{NO SUCH NAME}'", "names no Unicode"),
    ("'a\x00", "unterminated"), ("9" * 5000, "5000 digits"),
])
def test_what_is_not_a_literal_is_one_clear_error(text: str, why: str) -> None:
    with pytest.raises(LiteralError, match=why):
        literal(text)


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


@pytest.mark.parametrize("array", [
    np.ones((2, 3), np.float32), np.arange(6, dtype=">i8").reshape(3, 2).T, np.array(True),
    np.zeros((0, 3)), np.array(["ab", "c"]), np.array([1, 2], dtype="M8[ns]"),
], ids=["f32", "fortran-big-endian", "bool-scalar", "empty", "unicode", "datetime"])
def test_a_file_numpy_saved_reads_back_equal(tmp_path: Path, array: np.ndarray) -> None:
    path = tmp_path / "x.npy"
    path.write_bytes(_npy(array))
    got = read_npy(str(path), fail=ValueError)
    assert got.dtype == array.dtype and got.shape == array.shape
    assert np.array_equal(got, array)


_GOOD = _npy(np.ones((2, 3), np.float32))


@pytest.mark.parametrize(("data", "why"), [
    (b"", "magic string"),
    (_GOOD[:9], "ends inside the header"),
    (_GOOD[:-4], "declares 24 bytes of data.*holds 20"),
    (_GOOD + b"\x00", "holds 25"),
    (_GOOD[:25] + _GOOD[:25] + _GOOD[25:], "not a Python dict literal"),  # numpy: TokenError
    (_GOOD.replace(b"(2, 3)", b"(2**9)"), "not a Python dict literal"),
    (_GOOD.replace(b"(2, 3)", b"(9, 99999999999999)").replace(b"     \n", b"\n"),
     "declares"),  # numpy would try to allocate ~4 PB
    (_GOOD.replace(b"'<f4'", b"'|O8'"), "not the dtype of a plain"),
    (_GOOD.replace(b"'<f4'", b"'\\d4'"), "invalid escape"),  # numpy: a DeprecationWarning
])
def test_a_damaged_npy_file_is_one_clear_error(tmp_path: Path, data: bytes, why: str) -> None:
    path = tmp_path / "x.npy"
    path.write_bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=why) as info:
            read_npy(str(path), fail=ValueError)
    assert "x.npy" in str(info.value)


def test_a_directory_given_as_npy_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"x\.npy.*is a directory"):
        (tmp_path / "x.npy").mkdir()
        read_npy(str(tmp_path / "x.npy"), fail=ValueError)


@pytest.mark.requires_products("atlas_a2")
def test_run_with_a_damaged_npy_input_exits_1_naming_the_option_and_file(
        tmp_path: Path, cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("geplug_simulator")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="act")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = tmp_path / "model.onnx"
    model.write_bytes(helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    npy = tmp_path / "x.npy"
    npy.write_bytes(_GOOD[:25] + _GOOD[:25] + _GOOD[25:])
    monkeypatch.chdir(tmp_path)
    code, _out, err = cli("run", "--product", "atlas_a2", "--input", f"x={npy}", str(model))
    assert code == 1
    assert "--input" in err and "x.npy" in err and "Traceback" not in err
