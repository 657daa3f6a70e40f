"""Dumps of training iterations: dump_step selects iterations, forward and backward ops."""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")

import geplug_torch  # noqa: E402
from torch_helpers import GPT, train  # noqa: E402

from geplug.cli.main import main  # noqa: E402
from geplug.dump.reader import read_dump  # noqa: E402

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")


def _step_dirs(root):
    found = {}
    for dirpath, _dirs, files in os.walk(root):
        if files and os.path.basename(dirpath).isdigit():
            found[int(os.path.basename(dirpath))] = (dirpath, files)
    return found


@pytest.fixture
def dumped(tmp_path):
    cfg = {"precision_mode": "must_keep_origin_dtype", "enable_dump": True,
           "dump_path": str(tmp_path), "dump_step": "1|3", "dump_mode": "all"}
    be = geplug_torch.backend(product="atlas_a2", config=cfg)
    train(torch.compile(GPT(layers=1), backend=be), 5)
    be.shutdown()
    return tmp_path, be


def test_dump_step_selects_training_iterations_1_and_3(dumped):
    root, _ = dumped
    assert sorted(_step_dirs(root)) == [1, 3]


def test_forward_and_backward_ops_are_dumped(dumped):
    root, be = dumped
    (model,) = be.models
    expected = {op.record.name.replace("/", "_") for g in model.graphs.values() for op in g.ops}
    for _step, (_d, files) in _step_dirs(root).items():
        names = {f.split(".")[1] for f in files}
        assert names == expected
        assert any(n.startswith("gradients_") for n in names)


def test_dumped_tensors_are_the_ops_values(dumped):
    root, _ = dumped
    d, files = _step_dirs(root)[1]
    mm = sorted(f for f in files if f.startswith("MatMulV2.gradients_mm"))[0]
    dump = read_dump(os.path.join(d, mm))
    a, b = (t.array for t in dump.inputs)
    (out,) = (t.array for t in dump.outputs)
    assert out.shape == (a @ b).shape
    assert abs(out - a @ b).max() <= 1e-4 * max(1.0, abs(out).max())


def test_geplug_dump_ls_and_show_read_the_dumps(dumped, capsys):
    root, _ = dumped
    d, files = _step_dirs(root)[3]
    assert main(["dump", "ls", str(d)]) == 0
    listing = capsys.readouterr().out
    assert "gradients/mm" in listing or "gradients_mm" in listing
    target = os.path.join(d, sorted(f for f in files if f.startswith("LayerNormGrad."))[0])
    assert main(["dump", "show", target]) == 0
    assert "LayerNormGrad" in capsys.readouterr().out
