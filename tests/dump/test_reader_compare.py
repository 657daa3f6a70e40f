"""The tree reader and the two-run comparison (first op over the threshold)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from geplug.dump.compare import compare_arrays, compare_trees
from geplug.dump.reader import iter_dump_tree
from geplug.errors import DumpError


def _run(system: Any, make_event: Any, dtype: Any, overflow_at: int | None,
         steps: int = 1) -> None:
    """A 4-op chain; in the "fp16" run the op ``overflow_at`` overflows."""
    x = np.linspace(1, 2, 16).astype(np.float32)
    for step in range(steps):
        for i, name in enumerate(["embed", "matmul1", "matmul2", "softmax"]):
            y = (x * 1.001).astype(np.float32)
            if overflow_at is not None and i >= overflow_at:
                y = np.full_like(y, np.inf)
            system.emit_dump(make_event(system, op=f"net/{name}", op_type="MatMulV2", step=step,
                                        task_id=i + 1, inputs=[x.astype(dtype)],
                                        outputs=[y.astype(dtype)]))
            x = y


def test_tree_iteration_yields_layout_levels_in_execution_order(make_system: Any,
                                                                make_event: Any) -> None:
    system = make_system(enable_dump=True, dump_mode="all")
    _run(system, make_event, np.float32, None, steps=2)
    entries = list(iter_dump_tree(system.config.dump_root))
    assert [(e.step, e.parsed.task_id) for e in entries] == [(s, t) for s in (0, 1)
                                                             for t in (1, 2, 3, 4)]
    assert {(e.model_name, e.model_id, e.device_id) for e in entries} == {
        ("ge_default_20240125153322_41", "6", "0")}


def test_tree_reader_skips_summaries_and_temporary_files(make_system: Any, make_event: Any,
                                                         tmp_path: Any) -> None:
    system = make_system(enable_dump=True)
    _run(system, make_event, np.float32, None)
    root = system.config.dump_root
    (tmp_path / "dump" / ".geplug.1.2.tmp").write_bytes(b"junk")
    (tmp_path / "dump" / "overflow_summary.json").write_text("{}")
    assert len(list(iter_dump_tree(root))) == 4


def test_missing_tree_is_a_clear_error(tmp_path: Any) -> None:
    with pytest.raises(DumpError, match="does not exist"):
        list(iter_dump_tree(str(tmp_path / "nope")))


def test_compare_points_at_the_op_where_the_overflow_starts(
    make_system: Any, make_event: Any, tmp_path: Any
) -> None:
    half = make_system(enable_dump=True, dump_mode="all", dump_path=str(tmp_path),
                       resolved={"dump_root": str(tmp_path / "fp16")})
    full = make_system(enable_dump=True, dump_mode="all", dump_path=str(tmp_path),
                       resolved={"dump_root": str(tmp_path / "fp32")})
    _run(half, make_event, np.float16, overflow_at=2)
    _run(full, make_event, np.float32, overflow_at=None)
    report = compare_trees(tmp_path / "fp16", tmp_path / "fp32")
    first = report.first_failure
    assert first is not None and first.op_name == "net/matmul2"
    assert [op.failed for op in report.ops] == [False, False, True, True]
    bad = next(t for t in first.tensors if t.failed)
    assert bad.tensor == "output.0" and math.isnan(bad.cosine) and bad.nonfinite_mismatch == 16
    assert ">> first op over the threshold: 'net/matmul2'" in report.render()
    assert report.to_json()["first_failure"]["op_name"] == "net/matmul2"


def test_identical_runs_compare_clean(make_system: Any, make_event: Any, tmp_path: Any) -> None:
    a = make_system(enable_dump=True, resolved={"dump_root": str(tmp_path / "a")})
    b = make_system(enable_dump=True, resolved={"dump_root": str(tmp_path / "b")})
    _run(a, make_event, np.float32, None)
    _run(b, make_event, np.float32, None)
    report = compare_trees(tmp_path / "a", tmp_path / "b")
    assert report.first_failure is None and len(report.ops) == 4
    assert all(t.cosine == pytest.approx(1.0) and t.max_abs == 0 for op in report.ops
               for t in op.tensors)


def test_compare_arrays_metrics() -> None:
    result = compare_arrays(np.array([1.0, 2.0]), np.array([1.0, 4.0]), label="output.0")
    assert result.max_abs == 2.0 and result.max_rel == 0.5
    assert result.cosine == pytest.approx((1 + 8) / (math.sqrt(5) * math.sqrt(17)))
    assert result.status == "fail"


def test_compare_arrays_threshold_and_relative_limit() -> None:
    a, b = np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 3.03])
    assert compare_arrays(a, b, threshold=0.99).status == "pass"
    assert compare_arrays(a, b, threshold=0.99, rel_threshold=0.001).status == "fail"


def test_compare_arrays_same_infinities_are_not_a_mismatch() -> None:
    x = np.array([np.inf, 1.0, np.nan])
    assert compare_arrays(x, x.copy()).nonfinite_mismatch == 0


def test_compare_arrays_size_mismatch() -> None:
    assert compare_arrays(np.ones(3), np.ones(4)).status == "shape mismatch"


def test_ops_only_in_one_run_are_listed(make_system: Any, make_event: Any,
                                        tmp_path: Any) -> None:
    a = make_system(enable_dump=True, resolved={"dump_root": str(tmp_path / "a")})
    b = make_system(enable_dump=True, resolved={"dump_root": str(tmp_path / "b")})
    _run(a, make_event, np.float32, None)
    b.emit_dump(make_event(b, op="net/embed", outputs=[np.ones(2, np.float32)]))
    report = compare_trees(tmp_path / "a", tmp_path / "b")
    assert len(report.ops) == 1 and len(report.only_in_a) == 3 and report.only_in_b == ()
