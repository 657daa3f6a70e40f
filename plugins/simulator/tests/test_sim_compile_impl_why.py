"""``geplug compile`` shows, beside each op's implementation mode, why it got it (compactly;
the whole sentence is ``impl_reason`` in ``--format json``)."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import helper
from sim_helpers import f32, graph_model

from geplug.cli.main import main

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")


def _rows(tmp_path: Path, capsys: pytest.CaptureFixture[str], config: str) -> dict[str, str]:
    """node -> its text row of ``geplug compile`` (Softmax, Tanh, Relu)."""
    nodes = [helper.make_node("Softmax", ["x"], ["s1"], name="sm1", axis=-1),
             helper.make_node("Tanh", ["s1"], ["s2"], name="tanh"),
             helper.make_node("Relu", ["s2"], ["y"], name="relu")]
    model = tmp_path / "m.onnx"
    onnx.save(graph_model(nodes, [f32("x", [8, 64])], [f32("y", [8, 64])]), model)
    session = tmp_path / "s.toml"
    session.write_text(config, encoding="utf-8")
    assert main(["compile", str(model), "--product", "atlas_a2", "--config", str(session)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "impl_mode (why)" in lines[1]
    return {line.split()[0]: line for line in lines[2:5]}


def test_compile_text_shows_which_list_or_default_chose_each_impl_mode(tmp_path, capsys):
    ini = tmp_path / "modes.ini"
    ini.write_text("[ByOpType]\nSoftmaxV2=high_precision\n", encoding="utf-8")
    rows = _rows(tmp_path, capsys,
                 f'precision_mode_v2 = "fp16"\nop_precision_mode = "{ini.as_posix()}"\n')
    assert "high_precision (op type listed)" in rows["sm1"]
    assert "high_performance (default)" in rows["tanh"]
    assert rows["relu"].split()[6] == "-"  # Relu has no implementation mode


def test_compile_text_says_when_the_dtype_leaves_one_mode(tmp_path, capsys):
    rows = _rows(tmp_path, capsys, 'precision_mode = "must_keep_origin_dtype"\n')
    assert "high_precision (only mode in float32)" in rows["tanh"]
