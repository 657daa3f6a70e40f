"""`geplug dump compare` prints enough digits and aligned columns."""

from __future__ import annotations

from geplug.dump.compare import CompareReport, OpComparison, TensorComparison, cosine_text


def test_cosine_below_one_is_never_printed_as_one() -> None:
    assert cosine_text(0.9999996) == "0.9999996"
    assert cosine_text(0.99999) == "0.999990"
    assert cosine_text(1.0) == "1.000000"
    assert float(cosine_text(1 - 1e-14)) < 1.0


def test_columns_stay_aligned_with_long_names() -> None:
    ops = (
        OpComparison(step=0, op_name="a_very_long_layer_name/with/scopes/MatMul_1",
                     op_type="MatMulV2", task_id=3, timestamp=1, tensors=(
                         TensorComparison(tensor="output.0", cosine=0.9999996, max_abs=1e-3,
                                          max_rel=2e-4),
                         TensorComparison(tensor="input.10", cosine=1.0, max_abs=0.0,
                                          max_rel=0.0))),
        OpComparison(step=0, op_name="relu", op_type="Relu", task_id=4, timestamp=2,
                     tensors=(TensorComparison(tensor="output.0", cosine=0.5, max_abs=1.0,
                                               max_rel=1.0, status="fail"),)),
    )
    text = CompareReport(a="A", b="B", threshold=0.99, rel_threshold=None, ops=ops).render()
    rows = [line for line in text.splitlines() if line.endswith(("pass", "fail", "status"))]
    assert len(rows) == 4
    cosine_ends = {line.index(" cosine") + len(" cosine") for line in rows[:1]}
    for line in rows[1:]:  # every cosine value ends in the header's cosine column
        value = next(v for v in ("0.9999996", "1.000000", "0.500000") if v in line)
        assert line.index(value) + len(value) in cosine_ends, text
    assert "a_very_long_layer_name/with/scopes/MatMul_1" in text  # never cut
