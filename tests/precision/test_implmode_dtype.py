"""Implementation modes are told apart by the op's dtype (seed 004, op_select_implmode).

Seed 004: "上述实现模式根据算子的dtype进行区分。" - the modes above are told apart by the op's
dtype. A product declares the modes an op has per dtype (``impl_modes_by_dtype``); the choice
made from op_select_implmode, optypelist_for_implmode or an op_precision_mode ini applies only
where the op has that mode in the dtype it computes in.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from geplug.config.model import SessionConfig
from geplug.config.resolved import ResolvedConfig
from geplug.precision import NodeInfo, choose_impl_mode, decide
from geplug.products.schema import OpSupport
from geplug.testing.plugin import require_product

SEED = "上述实现模式根据算子的dtype进行区分。"

BY_DTYPE = OpSupport(op_type="Sigmoid", op_class="vector",
                     aicore_dtypes=["float16", "float32"], aicpu_dtypes=[],
                     impl_modes=["high_precision", "high_performance"],
                     impl_modes_by_dtype={"float32": ["high_precision"]})


def _cfg(**kw: object) -> ResolvedConfig:
    return ResolvedConfig(product="p", config=SessionConfig(), **kw)  # type: ignore[arg-type]


def _decisions(product: object, **options: object) -> dict[str, str]:
    from geplug.config import resolve

    config = resolve(SessionConfig(precision_mode="must_keep_origin_dtype", **options),
                     product)  # type: ignore[arg-type]
    nodes = [NodeInfo(name="s16", onnx_op="Sigmoid", op_type="Sigmoid", original_dtype="float16"),
             NodeInfo(name="s32", onnx_op="Sigmoid", op_type="Sigmoid", original_dtype="float32")]
    return {d.node: d.impl_mode for d in decide(nodes, product, config)}  # type: ignore[arg-type]


def test_the_chosen_mode_depends_on_the_dtype_the_op_computes_in() -> None:
    """Seed 004: "上述实现模式根据算子的dtype进行区分。" """
    config = _cfg(impl_default="high_performance")
    assert choose_impl_mode("n", BY_DTYPE, config, "float16")[0] == "high_performance"
    mode, reason = choose_impl_mode("n", BY_DTYPE, config, "float32")
    assert mode == "high_precision"
    assert "only high_precision in float32" in reason and "dtype" in reason


def test_a_dtype_the_declaration_does_not_name_has_every_mode() -> None:
    """Seed 004 (the sentence above): only a declared dtype narrows the op's modes."""
    assert BY_DTYPE.modes_for("float16") == ("high_precision", "high_performance")
    assert BY_DTYPE.modes_for("") == ("high_precision", "high_performance")
    assert BY_DTYPE.modes_for("float32") == ("high_precision",)


@pytest.mark.geplug_requires_products("atlas_a2")
def test_op_select_implmode_reaches_only_the_float16_instances_of_an_op() -> None:
    """Seed 004: "上述实现模式根据算子的dtype进行区分。" with high_performance_for_all, a float16
    Sigmoid runs high_performance while a float32 Sigmoid keeps its one implementation."""
    a2 = require_product("atlas_a2")
    assert _decisions(a2, op_select_implmode="high_performance_for_all") == {
        "s16": "high_performance", "s32": "high_precision"}


@pytest.mark.geplug_requires_products("atlas_a2")
def test_an_op_precision_mode_ini_line_applies_per_dtype(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 004 (the sentence above), through op_precision_mode: ``Sigmoid=high_performance``
    changes the float16 Sigmoid only."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "net.ini").write_text("Sigmoid=high_performance\n")
    a2 = require_product("atlas_a2")
    assert _decisions(a2, op_precision_mode="net.ini") == {
        "s16": "high_performance", "s32": "high_precision"}


@pytest.mark.geplug_requires_products("atlas_a2")
def test_per_dtype_modes_outside_the_ops_modes_or_dtypes_are_refused_by_validate_card(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A declaration's per-dtype modes must be modes the op has, keyed by a known dtype (one
    truth for a card: refused before install, at load, by every command)."""
    from geplug.cli.main import main

    card = tmp_path / "capabilities.toml"
    card.write_text('schema_version = 1\n[product]\nname = "acme_dt"\nextends = "atlas_a2"\n'
                    'display_name = "Acme DT"\nsoc_versions = ["Ascend910B9-AcmeDt"]\n'
                    'description = "Acme DT card"\n[ops.Sigmoid]\n'
                    'impl_modes_by_dtype = { floatt32 = ["high_precision"], '
                    'float16 = ["keep_fp16"] }\n', encoding="utf-8")
    assert main(["validate-card", str(card)]) == 1
    out = "".join(capsys.readouterr())
    assert "ops.Sigmoid.impl_modes_by_dtype.floatt32" in out and "did you mean 'float32'" in out
    assert "ops.Sigmoid.impl_modes_by_dtype.float16" in out and "'keep_fp16'" in out


@pytest.mark.geplug_requires_products("atlas_a2")
def test_describe_shows_the_modes_per_dtype(capsys: pytest.CaptureFixture[str]) -> None:
    from geplug.cli.main import main

    assert main(["describe", "atlas_a2"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines()
               if line.strip().startswith("Sigmoid "))
    assert "high_precision high_performance (fp32 bf16: high_precision)" in row


@pytest.mark.geplug_requires_products("atlas_a2")
def test_check_says_an_ini_line_reaches_only_the_dtypes_that_have_the_mode(
        tmp_path: Path) -> None:
    """Seed 004 (the sentence above): ``geplug check`` tells that ``Sigmoid=high_performance``
    leaves float32/bfloat16 Sigmoid ops on their one implementation."""
    from geplug.config import check

    ini = tmp_path / "net.ini"
    ini.write_text("Sigmoid=high_performance\nSoftmaxV2=high_precision\n")
    a2 = require_product("atlas_a2")
    warnings = [p for p in check(SessionConfig(op_precision_mode=str(ini)), a2, env={})
                if p.option == "op_precision_mode" and "told apart by the op's dtype"
                in p.message]
    assert len(warnings) == 1 and "Sigmoid = high_performance" in warnings[0].message
    assert "float32, bfloat16" in warnings[0].message
