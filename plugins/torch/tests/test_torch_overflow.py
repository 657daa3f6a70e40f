"""Loss scaling on a simulated product: a float16 gradient overflow in the backward pass."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

import geplug_torch  # noqa: E402
from torch_helpers import LargeWeightMLP  # noqa: E402

from geplug.dump.overflow import OverflowWarning  # noqa: E402

pytestmark = pytest.mark.geplug_requires_products("atlas_train")


def _run(tmp_path, steps=2, init_scale=2.0 ** 15):
    cfg = {"precision_mode": "allow_fp32_to_fp16", "enable_dump_debug": True,
           "dump_path": str(tmp_path)}
    be = geplug_torch.backend(product="atlas_train", config=cfg)
    model = LargeWeightMLP()
    compiled = torch.compile(model, backend=be)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale)
    x = torch.rand(8, 64)
    history = []
    for _ in range(steps):
        before = model.fc2.weight.detach().clone()
        out = compiled(x)
        assert torch.isfinite(out).all()  # the forward pass does not overflow
        scaler.scale(out.sum()).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
        history.append((torch.equal(before, model.fc2.weight), scaler.get_scale()))
    be.shutdown()
    return be, history


def test_backward_overflow_is_dumped_naming_the_gradient_op(tmp_path):
    with pytest.warns(OverflowWarning, match="gradients/mm"):
        _run(tmp_path)
    summary = json.loads((tmp_path / "overflow_summary.json").read_text())
    first = summary["first_overflow"]
    assert first["op_name"].startswith("gradients/") and first["op_type"] == "MatMulV2"
    assert list(tmp_path.rglob("Opdebug.Node_OpDebug.*"))


def test_grad_scaler_skips_the_overflowing_step_and_lowers_the_scale(tmp_path):
    with pytest.warns(OverflowWarning):
        _, history = _run(tmp_path, init_scale=2.0 ** 15)
    (unchanged1, scale1), (unchanged2, scale2) = history
    assert unchanged1 and unchanged2  # the optimizer step was skipped both times
    assert scale1 == 2.0 ** 14 and scale2 == 2.0 ** 13


def test_matmul_runs_in_float16_under_allow_fp32_to_fp16(tmp_path):
    with pytest.warns(OverflowWarning):
        be, _ = _run(tmp_path, steps=1)
    mm = [d for d in be.decisions() if d.op_type == "MatMulV2"]
    assert mm and {d.dtype for d in mm} == {"float16"}
