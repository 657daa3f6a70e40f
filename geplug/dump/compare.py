"""Compare two dump trees op by op and find the first op where precision is lost.

Ops are matched by step and op name (the names in the dump file names, formats.md §2.6), so
two runs of one model with different model names or ids still line up. Each tensor pair gets
the cosine similarity, the largest absolute error and the largest relative error (relative to
``B``, the reference), computed in float64. A pair fails when the cosine similarity is below
the threshold, when one side has inf/NaN where the other has not (an overflow: the cosine is
reported as NaN), when the shapes hold different element counts, or when a relative-error
limit is given and exceeded. The first failing op in execution order (step, task id,
timestamp of run ``A``) is highlighted: with an fp16 run against an fp32 run it is the op
where the overflow starts.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from typing import Any

import attrs
import numpy as np

from geplug.dump.reader import DumpEntry, DumpTensor, iter_dump_tree

__all__ = [
    "CompareReport",
    "OpComparison",
    "TensorComparison",
    "check_thresholds",
    "compare_arrays",
    "compare_trees",
    "cosine_text",
]

_REL_FLOOR = 1e-7
"""Denominator floor of the relative error (|b| below it counts as this)."""


@attrs.frozen(kw_only=True)
class TensorComparison:
    """One tensor of one op in both runs."""

    tensor: str
    """``input.0``, ``output.0``, ..."""
    dtype_a: str = ""
    dtype_b: str = ""
    shape_a: tuple[int, ...] = ()
    shape_b: tuple[int, ...] = ()
    cosine: float = math.nan
    max_abs: float = math.nan
    max_rel: float = math.nan
    nonfinite_mismatch: int = 0
    """Elements where one side is inf/NaN and the other is not (or a different inf)."""
    status: str = "pass"
    """``pass``, ``fail``, ``shape mismatch``, ``only in A``, ``only in B``."""

    @property
    def failed(self) -> bool:
        """Whether this tensor is over the threshold."""
        return self.status in ("fail", "shape mismatch")

    def to_json(self) -> dict[str, Any]:
        """JSON-ready mapping (NaN and inf as strings, so strict JSON parsers accept it)."""
        data = attrs.asdict(self)
        for key in ("cosine", "max_abs", "max_rel"):
            value = data[key]
            if not math.isfinite(value):
                data[key] = str(value)
        data["shape_a"], data["shape_b"] = list(self.shape_a), list(self.shape_b)
        return data


@attrs.frozen(kw_only=True)
class OpComparison:
    """One op (at one step) in both runs."""

    step: int
    op_name: str
    op_type: str
    task_id: int
    timestamp: int
    tensors: tuple[TensorComparison, ...]

    @property
    def failed(self) -> bool:
        """Whether any tensor is over the threshold."""
        return any(t.failed for t in self.tensors)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {
            "step": self.step, "op_name": self.op_name, "op_type": self.op_type,
            "task_id": self.task_id, "timestamp": self.timestamp, "failed": self.failed,
            "tensors": [t.to_json() for t in self.tensors],
        }


@attrs.frozen(kw_only=True)
class CompareReport:
    """The result of :func:`compare_trees`."""

    a: str
    b: str
    threshold: float
    rel_threshold: float | None
    ops: tuple[OpComparison, ...]
    only_in_a: tuple[tuple[int, str], ...] = ()
    only_in_b: tuple[tuple[int, str], ...] = ()

    @property
    def first_failure(self) -> OpComparison | None:
        """The first op over the threshold in execution order, or ``None``."""
        return next((op for op in self.ops if op.failed), None)

    @property
    def no_match(self) -> str | None:
        """Why no op was compared (which side has no dump files), or ``None`` when some
        were. Zero matched ops is a failure, not a pass: a mistyped directory must not pass
        a CI gate."""
        if self.ops:
            return None
        count_a = len(self.ops) + len(self.only_in_a)
        count_b = len(self.ops) + len(self.only_in_b)
        if not count_a and not count_b:
            return f"no ops matched: neither A {self.a!r} nor B {self.b!r} holds dump files"
        if not count_a:
            return f"no ops matched: A {self.a!r} holds no dump files (B has {count_b} ops)"
        if not count_b:
            return f"no ops matched: B {self.b!r} holds no dump files (A has {count_a} ops)"
        return (f"no ops matched: none of A's {count_a} ops shares a step and op name with "
                f"B's {count_b}; are they dumps of the same model?")

    @property
    def passed(self) -> bool:
        """At least one op matched and none is over the threshold."""
        return bool(self.ops) and self.first_failure is None

    def to_json(self) -> dict[str, Any]:
        """JSON-ready mapping (``geplug dump compare --format json``)."""
        first = self.first_failure
        return {
            "a": self.a, "b": self.b, "threshold": self.threshold,
            "rel_threshold": self.rel_threshold, "passed": self.passed,
            "matched": len(self.ops), "no_match": self.no_match,
            "first_failure": first.to_json() if first is not None else None,
            "ops": [op.to_json() for op in self.ops],
            "only_in_a": [{"step": s, "op_name": n} for s, n in self.only_in_a],
            "only_in_b": [{"step": s, "op_name": n} for s, n in self.only_in_b],
        }

    def render(self) -> str:
        """A text table; the first failing op is marked ``>>``, other failures ``!``."""
        first = self.first_failure
        lines = [
            f"A: {self.a}",
            f"B: {self.b} (reference)",
            f"threshold: cosine similarity >= {self.threshold:g}"
            + (f", max relative error <= {self.rel_threshold:g}" if self.rel_threshold else ""),
            "",
        ]
        rows = [(op, t) for op in self.ops for t in op.tensors]
        w_type = max([len("op type"), *(len(op.op_type) for op, _ in rows)])
        w_name = max([len("op name"), *(len(op.op_name) for op, _ in rows)])
        w_tensor = max([len("tensor"), *(len(t.tensor) for _, t in rows)])
        w_cos = max([len("cosine"), *(len(cosine_text(t.cosine)) for _, t in rows)])
        if self.ops:
            lines.append(f"   {'step':>4} {'task':>5}  {'op type':<{w_type}} "
                         f"{'op name':<{w_name}} {'tensor':<{w_tensor}} {'cosine':>{w_cos}} "
                         f"{'max abs':>12} {'max rel':>12}  status")
        for op in self.ops:
            mark = ">>" if op is first else (" !" if op.failed else "  ")
            first_head = (f"{mark} {op.step:>4} {op.task_id:>5}  {op.op_type:<{w_type}} "
                          f"{op.op_name:<{w_name}}")
            for i, t in enumerate(op.tensors):
                head = first_head if i == 0 else " " * len(first_head)
                lines.append(
                    f"{head} {t.tensor:<{w_tensor}} {cosine_text(t.cosine):>{w_cos}} "
                    f"{_num(t.max_abs):>12} {_num(t.max_rel):>12}  {t.status}"
                    + (f" ({t.nonfinite_mismatch} inf/nan mismatches)"
                       if t.nonfinite_mismatch else "")
                )
        if self.ops:
            lines.append("")
        if not self.ops:
            lines.append(str(self.no_match))
        elif first is None:
            lines.append(f"all {len(self.ops)} matched ops are within the threshold")
        else:
            bad = next(t for t in first.tensors if t.failed)
            lines.append(
                f">> first op over the threshold: {first.op_name!r} ({first.op_type}) at step "
                f"{first.step}, task {first.task_id}: {bad.tensor} cosine "
                f"{cosine_text(bad.cosine)}, "
                f"max abs {_num(bad.max_abs)}"
                + (f", {bad.nonfinite_mismatch} inf/nan mismatches (overflow)"
                   if bad.nonfinite_mismatch else "")
            )
        if self.only_in_a or self.only_in_b:
            lines.append(f"unmatched ops: {len(self.only_in_a)} only in A, "
                         f"{len(self.only_in_b)} only in B")
        return "\n".join(lines) + "\n"


def cosine_text(value: float) -> str:
    """A cosine similarity with six decimals, or as many more (up to 12) as it takes never
    to print a value below 1 as ``1`` (0.9999996 -> ``0.9999996``, not ``1.000000``)."""
    if math.isnan(value) or math.isinf(value):
        return _num(value)
    for decimals in range(6, 13):
        text = f"{value:.{decimals}f}"
        if value >= 1.0 or float(text) < 1.0:
            return text
    return f"{math.floor(value * 1e12) / 1e12:.12f}"  # below 1 by less than 1e-12


def _num(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf"
    return f"{value:.6g}"


def compare_arrays(
    a: np.ndarray,
    b: np.ndarray,
    *,
    label: str = "",
    threshold: float = 0.99,
    rel_threshold: float | None = None,
) -> TensorComparison:
    """Compare one tensor of run A with the same tensor of reference run B."""
    base = TensorComparison(tensor=label, dtype_a=a.dtype.name, dtype_b=b.dtype.name,
                            shape_a=tuple(a.shape), shape_b=tuple(b.shape))
    if a.size != b.size:
        return attrs.evolve(base, status="shape mismatch")
    x = np.asarray(a).astype(np.float64).reshape(-1)
    y = np.asarray(b).astype(np.float64).reshape(-1)
    fx, fy = np.isfinite(x), np.isfinite(y)
    both = fx & fy
    same_special = (~fx & ~fy) & ((x == y) | (np.isnan(x) & np.isnan(y)))
    mismatch = int((~both & ~same_special).sum())
    xs, ys = x[both], y[both]
    if xs.size:
        diff = np.abs(xs - ys)
        max_abs = float(diff.max())
        max_rel = float((diff / np.maximum(np.abs(ys), _REL_FLOOR)).max())
        nx, ny = float(np.linalg.norm(xs)), float(np.linalg.norm(ys))
        if nx == 0.0 and ny == 0.0:
            cosine = 1.0
        elif nx == 0.0 or ny == 0.0:
            cosine = 0.0
        else:
            cosine = float(np.clip(np.dot(xs, ys) / (nx * ny), -1.0, 1.0))
    else:
        max_abs = max_rel = 0.0
        cosine = 1.0
    if mismatch:
        cosine, max_abs, max_rel = math.nan, math.inf, math.inf
    failed = (
        mismatch > 0 or math.isnan(cosine) or cosine < threshold
        or (rel_threshold is not None and max_rel > rel_threshold)
    )
    return attrs.evolve(base, cosine=cosine, max_abs=max_abs, max_rel=max_rel,
                        nonfinite_mismatch=mismatch, status="fail" if failed else "pass")


_Key = tuple[int, str]


def _index(root: str) -> dict[_Key, list[DumpEntry]]:
    groups: dict[_Key, list[DumpEntry]] = {}
    for entry in iter_dump_tree(root):
        if entry.is_overflow:
            continue
        key = (entry.step if entry.step is not None else -1, entry.parsed.op_name)
        groups.setdefault(key, []).append(entry)
    return groups


def _tensors(entries: Iterable[DumpEntry]) -> tuple[dict[str, DumpTensor], str, str]:
    tensors: dict[str, DumpTensor] = {}
    op_name = op_type = ""
    for entry in sorted(entries, key=lambda e: e.parsed.timestamp):
        dump = entry.read()
        op_name, op_type = dump.op_name or entry.parsed.op_name, entry.parsed.op_type
        for t in dump.tensors:
            if t.kind in ("input", "output") and t.array is not None:
                tensors[t.label] = t
    return tensors, op_name, op_type


def compare_trees(
    a: str | os.PathLike[str],
    b: str | os.PathLike[str],
    *,
    threshold: float = 0.99,
    rel_threshold: float | None = None,
) -> CompareReport:
    """Compare dump tree (or file) ``a`` with reference ``b``; see the module docstring.

    ``threshold`` is a cosine similarity, so it must lie in [-1, 1]; ``rel_threshold``
    must be >= 0 (a ``ValueError`` names the argument otherwise). A report with no matched
    op is not a pass (:attr:`CompareReport.no_match` says which side has none).
    """
    check_thresholds(threshold, rel_threshold)
    a, b = os.fspath(a), os.fspath(b)
    index_a, index_b = _index(a), _index(b)

    def order(key: _Key) -> tuple[int, int, int]:
        first = min(index_a[key], key=lambda e: (e.parsed.task_id, e.parsed.timestamp))
        return (key[0], first.parsed.task_id, first.parsed.timestamp)

    ops = []
    for key in sorted((k for k in index_a if k in index_b), key=order):
        ta, name, op_type = _tensors(index_a[key])
        tb, _, _ = _tensors(index_b[key])
        results = []
        for label in sorted(set(ta) | set(tb), key=_label_order):
            if label not in tb:
                results.append(TensorComparison(tensor=label, dtype_a=ta[label].dtype,
                                                shape_a=ta[label].shape, status="only in A"))
            elif label not in ta:
                results.append(TensorComparison(tensor=label, dtype_b=tb[label].dtype,
                                                shape_b=tb[label].shape, status="only in B"))
            else:
                arr_a, arr_b = ta[label].array, tb[label].array
                assert arr_a is not None and arr_b is not None
                results.append(compare_arrays(arr_a, arr_b, label=label, threshold=threshold,
                                              rel_threshold=rel_threshold))
        first = min(index_a[key], key=lambda e: (e.parsed.task_id, e.parsed.timestamp))
        ops.append(OpComparison(step=key[0], op_name=name, op_type=op_type,
                                task_id=first.parsed.task_id,
                                timestamp=first.parsed.timestamp, tensors=tuple(results)))
    return CompareReport(
        a=a, b=b, threshold=threshold, rel_threshold=rel_threshold, ops=tuple(ops),
        only_in_a=tuple(sorted(k for k in index_a if k not in index_b)),
        only_in_b=tuple(sorted(k for k in index_b if k not in index_a)),
    )


def check_thresholds(threshold: float, rel_threshold: float | None = None) -> None:
    """Raise ``ValueError`` naming the argument when ``threshold`` is outside [-1, 1] (the
    range of a cosine similarity) or ``rel_threshold`` is negative or NaN."""
    if not -1.0 <= threshold <= 1.0:
        raise ValueError(f"threshold {threshold!r} is outside [-1, 1]: it is a cosine "
                         "similarity, which ranges from -1 to 1 (default 0.99)")
    if rel_threshold is not None and not rel_threshold >= 0.0:
        raise ValueError(f"rel_threshold {rel_threshold!r} must be a relative error >= 0 "
                         "(e.g. 0.01 for 1%)")


def _label_order(label: str) -> tuple[int, int]:
    kind, _, index = label.partition(".")
    return (0 if kind == "input" else 1, int(index) if index.isdigit() else 0)
