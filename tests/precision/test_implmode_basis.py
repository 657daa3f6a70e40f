"""Why an op got its implementation mode, in a few words (``ImplChoice.basis``): what
``geplug compile`` prints beside each mode, so a user sees which list or rule decided it."""

from __future__ import annotations

import pytest

from geplug.config.model import SessionConfig
from geplug.config.resolved import ResolvedConfig
from geplug.precision import NodeInfo, choose_impl, decide
from geplug.products.schema import OpSupport
from geplug.testing.plugin import require_product

TWO = OpSupport(op_type="SoftmaxV2", op_class="vector", aicore_dtypes=["float16", "float32"],
                aicpu_dtypes=[], impl_modes=["high_precision", "high_performance"],
                impl_modes_by_dtype={"float32": ["high_precision"]})
NONE = OpSupport(op_type="Relu", op_class="vector", aicore_dtypes=["float16"], aicpu_dtypes=[])


def _cfg(**kw: object) -> ResolvedConfig:
    return ResolvedConfig(product="p", config=SessionConfig(), **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("config", "dtype", "mode", "basis"), [
    (_cfg(impl_default="high_performance"), "float16", "high_performance", "default"),
    (_cfg(impl_by_op_type={"SoftmaxV2": "high_precision"}), "float16", "high_precision",
     "op type listed"),
    (_cfg(impl_by_node={"n": "high_precision"},
          impl_by_op_type={"SoftmaxV2": "high_performance"}), "float16", "high_precision",
     "node listed"),
    (_cfg(impl_by_node={"n": "keep_fp16"}), "float16", "high_performance",
     "fallback: keep_fp16 n/a"),
    (_cfg(impl_default="high_performance"), "float32", "high_precision", "only mode in float32"),
], ids=["default", "op-type", "node", "fallback", "only-mode-in-dtype"])
def test_the_basis_names_the_rule_that_chose_the_mode(
        config: ResolvedConfig, dtype: str, mode: str, basis: str) -> None:
    choice = choose_impl("n", TWO, config, dtype)
    assert (choice.mode, choice.basis) == (mode, basis)


def test_an_op_without_implementation_modes_has_no_basis() -> None:
    choice = choose_impl("n", NONE, _cfg(impl_default="high_performance"), "float16")
    assert (choice.mode, choice.basis) == ("", "")


def test_decisions_carry_the_basis_beside_the_full_reason() -> None:
    from geplug.config import resolve

    product = require_product("atlas_a2")
    config = resolve(SessionConfig(precision_mode="must_keep_origin_dtype",
                                   op_select_implmode="high_precision"), product)
    node = NodeInfo(name="sm", onnx_op="Softmax", op_type="SoftmaxV2", original_dtype="float16")
    [decision] = decide([node], product, config)
    assert decision.impl_mode == "high_precision"
    assert decision.impl_basis == "op type listed"
    assert "SoftmaxV2 is listed" in decision.impl_reason
    assert decision.to_json()["impl_basis"] == "op type listed"
