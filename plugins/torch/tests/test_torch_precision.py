"""Precision resolution decides each aten op's dtype; the op runs with that rounding."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import geplug_torch  # noqa: E402
from torch import nn  # noqa: E402


@pytest.mark.geplug_requires_products("atlas_train")
def test_allow_fp32_to_fp16_rounds_the_matmul_as_float16():
    be = geplug_torch.backend(product="atlas_train",
                              config={"precision_mode": "allow_fp32_to_fp16"})
    try:
        lin = nn.Linear(32, 16)
        x = torch.randn(8, 32) * 3
        with torch.no_grad():
            got = torch.compile(lin, backend=be)(x)
            want = torch.addmm(lin.bias.half(), x.half(), lin.weight.half().t()).float()
            exact = lin(x)
        assert torch.equal(got, want)
        assert not torch.equal(got, exact)  # the rounding is visible
        (d,) = [d for d in be.decisions() if d.op_type == "MatMulV2"]
        assert (d.dtype, d.lowered) == ("float16", True)
    finally:
        be.shutdown()


@pytest.mark.geplug_requires_products("atlas_a2")
def test_allow_mix_precision_bf16_lowers_white_list_ops_to_bfloat16():
    be = geplug_torch.backend(product="atlas_a2",
                              config={"precision_mode": "allow_mix_precision_bf16"})
    try:
        lin = nn.Linear(32, 16)
        x = torch.randn(8, 32)
        with torch.no_grad():
            got = torch.compile(lin, backend=be)(x)
            want = torch.addmm(lin.bias.bfloat16(), x.bfloat16(),
                               lin.weight.bfloat16().t()).float()
        assert torch.equal(got, want)
    finally:
        be.shutdown()


@pytest.mark.geplug_requires_products("atlas_train")
def test_an_unsupported_dtype_is_a_clear_error_naming_the_op_and_graph():
    be = geplug_torch.backend(product="atlas_train",
                              config={"precision_mode": "must_keep_origin_dtype"})
    try:
        lin = nn.Linear(8, 8).to(torch.bfloat16)  # the 910 family has no bfloat16
        with pytest.raises(Exception) as info:
            torch.compile(lin, backend=be)(torch.randn(2, 8, dtype=torch.bfloat16))
        text = str(info.value)
        assert "addmm" in text and "graph_1" in text and "atlas_train" in text
    finally:
        be.shutdown()
