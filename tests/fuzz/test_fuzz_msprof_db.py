"""Fuzz: the msprof database of a profiling directory (``PROF_*/msprof_{ts14}.db`` and
``analyze/communication_analyzer.db``, written by geplug/profiling) - bit flips, truncation,
extension, SQL-level damage (dropped tables, wrong types, garbage rows), a hot journal or WAL
beside it, the file replaced by a directory or an empty file, the CSV summaries gone (a
db-only directory) - through every command that reads a profiling directory (``geplug
profile summary`` as text and JSON, ``plot``) and through a new profiled run into the same
output directory. Each: exit status 0, 1 or 2, no traceback, a failure names the input, and
the directory the user had is byte-for-byte unchanged (SQLite never rolls a hot journal back
into it: no reader opens the database read-write)."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Iterator

import pytest
from fuzz_support import SLOW_EXAMPLES, count, mutate, profile_argv, run_cli, scratch, unchanged
from hypothesis import given, settings
from hypothesis import strategies as st

_SQL_DAMAGE = [
    "DROP TABLE TASK", "DROP TABLE STRING_IDS", "DELETE FROM STRING_IDS",
    "UPDATE TASK SET endNs = 'x'", "UPDATE TASK SET startNs = NULL",
    "INSERT INTO TASK (startNs) VALUES (X'00ff')", "ALTER TABLE TASK RENAME TO TASK_OLD",
    "UPDATE META_DATA SET value = '99.0.0'", "DROP TABLE META_DATA",
    "CREATE TABLE TASK_PMU_INFO_X (a)", "UPDATE STRING_IDS SET value = X'fffe'",
    "PRAGMA journal_mode = WAL",
]


def _model() -> bytes:
    import numpy as np
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    w = helper.make_tensor("w", TensorProto.FLOAT, [3, 3], np.ones(9, np.float32).tolist())
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"], name="fc1"),
         helper.make_node("Relu", ["h"], ["y"], name="act")], "fuzzdb", [x], [y], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]
                             ).SerializeToString()


def _profiled_run(product: str, work: str) -> int:
    """``geplug run`` with profiling on into ``work/prof``; returns the exit status."""
    with open(os.path.join(work, "model.onnx"), "wb") as fh:
        fh.write(_model())
    with open(os.path.join(work, "prof.toml"), "w", encoding="utf-8") as fh:
        fh.write('profiling_mode = true\n[profiling_options]\noutput = "prof"\n'
                 'task_time = "on"\n')
    cwd = os.getcwd()
    os.chdir(work)
    try:
        return run_cli(["run", "--product", product, "--config", "prof.toml", "--steps", "2",
                        "model.onnx"], names=("model.onnx", "prof.toml"))[0]
    finally:
        os.chdir(cwd)


@pytest.fixture(scope="module")
def product_name() -> str:
    import warnings

    pytest.importorskip("onnx")
    pytest.importorskip("geplug_simulator")
    import geplug

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        names = sorted(p.name for p in geplug.installed_products()
                       if p.ops and p.name != "fuzzcard")
    if not names:
        pytest.skip("no installed product declares operators (install a product package)")
    return names[0]


@pytest.fixture(scope="module")
def template(product_name: str, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[tuple[str, dict[str, bytes]]]:
    """A real profiling directory (name, {relative path: bytes}) holding msprof_*.db."""
    work = str(tmp_path_factory.mktemp("fuzzdb"))
    assert _profiled_run(product_name, work) == 0
    prof = os.path.join(work, "prof")
    (name,) = [n for n in os.listdir(prof) if n.startswith("PROF_")]
    files: dict[str, bytes] = {}
    for directory, _, names in os.walk(os.path.join(prof, name)):
        for n in names:
            path = os.path.join(directory, n)
            with open(path, "rb") as fh:
                files[os.path.relpath(path, os.path.join(prof, name))] = fh.read()
    assert [r for r in files if os.path.basename(r).startswith("msprof_")
            and r.endswith(".db")], sorted(files)
    yield name, files


def _write(root: str, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data)


def _damage(db: str, data: st.DataObject) -> None:
    """Damage the database file ``db`` in one of the ways of the module docstring."""
    kind = data.draw(st.sampled_from(["bytes", "bytes", "sql", "sql", "journal", "directory",
                                      "empty"]))
    if kind == "bytes":
        with open(db, "rb") as fh:
            raw = fh.read()
        with open(db, "wb") as fh:
            fh.write(mutate(raw, data.draw))
    elif kind == "sql":
        conn = sqlite3.connect(db)
        try:
            for sql in data.draw(st.lists(st.sampled_from(_SQL_DAMAGE), min_size=1,
                                          max_size=3)):
                try:
                    conn.execute(sql)
                    conn.commit()
                except sqlite3.Error:
                    pass
        finally:
            conn.close()
    elif kind == "journal":  # a hot journal / WAL a killed writer of the user's left behind
        suffix = data.draw(st.sampled_from(["-journal", "-wal", "-shm"]))
        with open(db + suffix, "wb") as fh:
            fh.write(data.draw(st.binary(min_size=0, max_size=4096)))
    elif kind == "directory":
        os.remove(db)
        os.makedirs(db)
    else:
        with open(db, "wb"):
            pass


@given(data=st.data(), command=st.sampled_from(["summary", "json", "plot"]))
def test_profile_commands_answer_on_a_damaged_database(
        template: tuple[str, dict[str, bytes]], data: st.DataObject, command: str) -> None:
    count("msprof database")
    name, files = template
    with scratch() as tmp:
        prof = os.path.join(tmp, name)
        chosen = dict(files)
        if data.draw(st.integers(0, 4)) == 0:  # a db-only directory (msprof --type=db)
            chosen = {r: b for r, b in files.items()
                      if not r.startswith("mindstudio_profiler_output")}
        _write(prof, chosen)
        for rel in sorted(chosen):
            if rel.endswith(".db") and data.draw(st.booleans()):
                _damage(os.path.join(prof, rel), data)
        argv = profile_argv(command, prof, os.path.join(tmp, "plot.png"))
        with unchanged(prof):
            run_cli(argv, names=(name, "op_summary", "msprof_", "matplotlib"))
        assert not [n for n in os.listdir(tmp) if ".tmp" in n]


@settings(max_examples=SLOW_EXAMPLES)
@given(data=st.data())
def test_a_new_profiled_run_leaves_a_damaged_database_alone(
        product_name: str, template: tuple[str, dict[str, bytes]],
        data: st.DataObject) -> None:
    count("msprof database")
    name, files = template
    with scratch() as tmp:
        old = os.path.join(tmp, "prof", name)
        _write(old, files)
        for rel in sorted(files):
            if rel.endswith(".db"):
                _damage(os.path.join(old, rel), data)
        with unchanged(old):
            assert _profiled_run(product_name, tmp) == 0
        new = [n for n in os.listdir(os.path.join(tmp, "prof"))
               if n.startswith("PROF_") and os.path.join(tmp, "prof", n) != old]
        assert len(new) == 1
        for directory, _, names in os.walk(os.path.join(tmp, "prof", new[0])):
            assert not [n for n in names if ".tmp" in n], (directory, names)
        shutil.rmtree(os.path.join(tmp, "prof", new[0]))
