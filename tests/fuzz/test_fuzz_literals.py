"""Fuzz: the Python-literal reader behind TF snippets and ``.npy`` headers
(:mod:`geplug.pyliteral`) - any text ends in a value or one ``LiteralError``, never a warning;
it agrees with ``ast.literal_eval`` wherever Python reads the text without a warning; and a
``.npy`` file with any damage is read equal to what was saved or refused naming the file."""

from __future__ import annotations

import ast
import io
import os
import warnings
from typing import Any

import numpy as np
from fuzz_support import count, mutate, scratch
from hypothesis import assume, given
from hypothesis import strategies as st

from geplug.npy import read_npy
from geplug.pyliteral import LiteralError, literal

_ATOMS = st.one_of(st.text(max_size=20), st.binary(max_size=10), st.booleans(), st.none(),
                   st.integers(-(2**80), 2**80), st.floats(allow_nan=False, allow_infinity=False))
_VALUES = st.recursive(_ATOMS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.lists(inner, max_size=4).map(tuple),
    st.dictionaries(st.one_of(st.text(max_size=8), st.integers()), inner, max_size=4)),
    max_leaves=12)
_PIECES = st.sampled_from(["'", '"', "'''", "\\", "\\d", "\\x4", "\\N{", "b'", "r'", "(", ")",
                           "[", "]", "{", "}", ",", ":", "-", "0", "07", "1e", "_", "True",
                           "\x00", "\n", " ", "é", "\\u12"])
_TEXT = st.one_of(st.text(max_size=60), st.lists(_PIECES, max_size=20).map("".join),
                  _VALUES.map(repr).flatmap(lambda r: st.sampled_from([r, r[:-1], r + ","])))


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, (list, tuple)):
        return 1 + max(map(_depth, value), default=0)
    return 0


@given(value=_VALUES)
def test_the_repr_of_a_value_reads_back_equal(value: Any) -> None:
    count("Python literal")
    assume(_depth(value) <= 32)
    assert literal(repr(value)) == value


@given(text=_TEXT)
def test_any_text_is_a_value_or_one_literal_error_never_a_warning(text: str) -> None:
    count("Python literal")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            mine: Any = literal(text)
        except LiteralError as exc:
            assert str(exc) and "\n" not in str(exc)
            mine = LiteralError
        try:
            python: Any = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError,
                DeprecationWarning, SyntaxWarning):
            python = LiteralError
    if mine is not LiteralError and python is not LiteralError:
        assert mine == python


@given(data=st.data())
def test_a_damaged_npy_file_reads_equal_or_is_refused_naming_it(data: st.DataObject) -> None:
    count(".npy input")
    shape = tuple(data.draw(st.lists(st.integers(0, 4), max_size=3)))
    dtype = data.draw(st.sampled_from(["float32", "float16", "int64", "bool", ">f8", "<U3"]))
    array = np.ones(shape, dtype=dtype)
    buf = io.BytesIO()
    np.save(buf, array)
    raw = mutate(buf.getvalue(), data.draw)
    with scratch() as tmp:
        path = os.path.join(tmp, "x.npy")
        with open(path, "wb") as fh:
            fh.write(raw)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                got = read_npy(path, fail=ValueError)
            except ValueError as exc:
                assert "x.npy" in str(exc)
                return
        if raw == buf.getvalue():
            assert got.dtype == array.dtype and np.array_equal(got, array)
