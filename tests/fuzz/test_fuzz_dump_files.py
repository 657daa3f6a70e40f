"""Fuzz: dump files and dump trees - bit flips, truncation and extension of real dump files,
damaged ``mapping.csv`` and ``statistic.csv`` - through the reader and ``geplug dump
ls/show/convert/compare``. The dump tree a user gave is never changed."""

from __future__ import annotations

import os

import numpy as np
from fuzz_support import count, mutate, run_cli, scratch, unchanged
from hypothesis import given
from hypothesis import strategies as st

from geplug.dump.encode import TensorPayload, encode_dump
from geplug.dump.reader import read_dump
from geplug.errors import DumpError

_NAME = "MatMulV2.layer1_MatMul.3.1.1700000000000000"


def _valid_file() -> bytes:
    chunks = encode_dump(op_name="layer1/MatMul", dump_time=1700000000000000,
                         inputs=[TensorPayload(array=np.arange(6, dtype=np.float32)
                                               .reshape(2, 3))],
                         outputs=[TensorPayload(array=np.ones((2, 2), dtype=np.float16))])
    return b"".join(bytes(memoryview(c).cast("B")) for c in chunks)


_VALID = _valid_file()
_STATS = (b"Op Type,Op Name,Task ID,Stream ID,Timestamp,Input/Output,Slot,Data Size,"
          b"Data Type,Format,Shape,Max Value,Min Value,Avg Value,Count,Nan Count,"
          b"Negative Inf Count,Positive Inf Count\n"
          b"MatMulV2,fc1,3,1,1700000000000000,Input,0,24,DT_FLOAT,ND,(2 3),5,0,2.5,6,0,0,0\n")


def _tree(tmp: str, data: bytes, stats: bytes, mapping: bytes) -> str:
    step = os.path.join(tmp, "dump", "20260101000000", "0", "model", "1", "0")
    os.makedirs(step)
    with open(os.path.join(step, _NAME), "wb") as fh:
        fh.write(data)
    with open(os.path.join(step, "statistic.csv"), "wb") as fh:
        fh.write(stats)
    with open(os.path.join(step, "mapping.csv"), "wb") as fh:
        fh.write(mapping)
    return os.path.join(tmp, "dump")


@given(data=st.data())
def test_a_damaged_dump_file_is_read_or_refused(data: st.DataObject) -> None:
    count("dump file")
    blob = mutate(_VALID, data.draw)
    with scratch() as tmp:
        path = os.path.join(tmp, _NAME)
        with open(path, "wb") as fh:
            fh.write(blob)
        try:
            read_dump(path)
        except DumpError as exc:
            assert _NAME in str(exc)


@given(data=st.data(), command=st.sampled_from(["ls", "ls-json", "show", "convert",
                                                 "compare"]))
def test_every_dump_command_answers_on_a_damaged_tree(data: st.DataObject,
                                                      command: str) -> None:
    count("dump tree")
    blob = mutate(_VALID, data.draw)
    stats = mutate(_STATS, data.draw) if data.draw(st.booleans()) else _STATS
    mapping = mutate(b"1," + _NAME.encode() + b"\n", data.draw)
    with scratch() as tmp:
        root = _tree(tmp, blob, stats, mapping)
        step = os.path.join(root, "20260101000000", "0", "model", "1", "0")
        argv = {"ls": ["dump", "ls", root], "ls-json": ["dump", "ls", root, "--format", "json"],
                "show": ["dump", "show", os.path.join(step, _NAME)],
                "convert": ["dump", "convert", root, "--out", os.path.join(tmp, "npy")],
                "compare": ["dump", "compare", root, root]}[command]
        with unchanged(root):
            run_cli(argv, names=(root, _NAME, "statistic", "mapping", "dump"))
