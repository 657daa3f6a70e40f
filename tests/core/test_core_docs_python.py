"""The Python example of docs/configuration.md runs as written (in a directory with a config)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")


def _python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


def test_configuration_md_first_python_example_runs(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("geplug_simulator")
    from geplug.plugin import reset_manager

    (tmp_path / "session.toml").write_text('precision_mode = "must_keep_origin_dtype"\n')
    monkeypatch.chdir(tmp_path)
    for name in ("RANK_TABLE_FILE", "RANK_ID", "RANK_SIZE", "PROFILING_MODE", "PROFILING_OPTIONS"):
        monkeypatch.delenv(name, raising=False)
    block = _python_blocks(DOCS / "configuration.md")[0]
    reset_manager(None)
    try:
        exec(compile(block, "docs/configuration.md", "exec"), {"__name__": "__doc_example__"})
    finally:
        reset_manager(None)
    assert os.getcwd() == str(tmp_path)


@pytest.mark.geplug_requires_products("atlas_train")
def test_readme_python_api_example_runs(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("geplug_simulator")
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from geplug.plugin import reset_manager

    weight = numpy_helper.from_array(np.full((64, 8), 0.01, np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="fc")], "readme",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], [weight])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              tmp_path / "model.onnx")
    (tmp_path / "session.toml").write_text('precision_mode = "must_keep_origin_dtype"\n')
    monkeypatch.chdir(tmp_path)
    for name in ("RANK_TABLE_FILE", "RANK_ID", "RANK_SIZE", "PROFILING_MODE", "PROFILING_OPTIONS"):
        monkeypatch.delenv(name, raising=False)
    readme = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    block = re.findall(r"```python\n(.*?)```", readme, flags=re.S)[0]
    reset_manager(None)
    try:
        exec(compile(block, "README.md", "exec"), {"__name__": "__doc_example__"})
    finally:
        reset_manager(None)
