"""What one step of a compiled model returns: the outputs, and what the step found.

:class:`RunResult` is a ``dict`` of ``{output name: array}`` (so code written for plain
outputs keeps working) that also carries the findings a test asserts on::

    result = model.run({"x": x})
    assert not result.overflows, result.overflows[0]
    assert not result.nonfinite_outputs
    assert not result.aicpu_fallbacks

``overflows`` names the op where each overflow starts when the step's tensors were inspected
(``enable_dump_debug`` on, or a dump step); otherwise a non-finite graph output is reported
as an overflow of unknown op, with the hint to turn ``enable_dump_debug`` on to find it - so
``not result.overflows`` never passes on inf/NaN outputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs
import numpy as np

__all__ = ["FIND_THE_OP", "Overflow", "RunResult", "nonfinite_outputs"]

FIND_THE_OP = ("set enable_dump_debug = true (dump_debug_mode = \"all\") to find the op where "
               "it starts: the run then names it and writes overflow_summary.txt")
"""The hint every non-finite-output message gives."""


@attrs.frozen(kw_only=True)
class Overflow:
    """One overflow of a step: the op (``""`` when not inspected), its output, the counts."""

    step: int
    op_name: str
    op_type: str = ""
    output: str = ""
    nan: int = 0
    pos_inf: int = 0
    neg_inf: int = 0
    saturated: int = 0

    def __str__(self) -> str:
        where = f"op {self.op_name!r} ({self.op_type})" if self.op_name else \
            f"output {self.output!r} (op not inspected; {FIND_THE_OP})"
        counts = f"{self.pos_inf} +inf, {self.neg_inf} -inf, {self.nan} NaN"
        if self.saturated:
            counts += f", {self.saturated} saturated"
        return f"step {self.step}: overflow at {where}: {counts}"


def _floating_arrays(value: Any) -> list[np.ndarray]:
    """The floating arrays of one output: a tensor, or each tensor of a sequence output
    (ONNX ``seq(tensor)``: a list of arrays of different shapes) or optional (``None``)."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [a for v in value for a in _floating_arrays(v)]
    array = np.asarray(value)
    return [array] if array.dtype.kind == "f" and array.size else []


def nonfinite_outputs(outputs: Mapping[str, Any]) -> tuple[str, ...]:
    """The names of the floating outputs holding inf or NaN, in output order (a sequence
    output counts when any of its tensors does)."""
    return tuple(name for name, value in outputs.items()
                 if any(not np.isfinite(a).all() for a in _floating_arrays(value)))


def _output_overflow(step: int, name: str, value: Any) -> Overflow:
    wide = [np.asarray(a, dtype=np.float64) for a in _floating_arrays(value)]
    return Overflow(step=step, op_name="", output=name,
                    nan=sum(int(np.isnan(w).sum()) for w in wide),
                    pos_inf=sum(int(np.isposinf(w).sum()) for w in wide),
                    neg_inf=sum(int(np.isneginf(w).sum()) for w in wide))


class RunResult(dict[str, Any]):
    """``{output name: array}`` of one step, plus ``step``, ``overflows``,
    ``nonfinite_outputs`` and ``aicpu_fallbacks`` (nodes running on AI CPU)."""

    step: int
    overflows: tuple[Overflow, ...]
    nonfinite_outputs: tuple[str, ...]
    aicpu_fallbacks: tuple[str, ...]

    def __init__(self, outputs: Mapping[str, Any], *, step: int,
                 overflows: Iterable[Overflow] | None = None,
                 aicpu_fallbacks: Iterable[str] = ()) -> None:
        super().__init__(outputs)
        self.step = step
        self.nonfinite_outputs = nonfinite_outputs(outputs)
        if overflows is None:  # the ops were not inspected: the outputs speak
            overflows = [_output_overflow(step, name, outputs[name])
                         for name in self.nonfinite_outputs]
        self.overflows = tuple(overflows)
        self.aicpu_fallbacks = tuple(aicpu_fallbacks)

    def __repr__(self) -> str:
        return (f"RunResult(step={self.step}, outputs={list(self)}, "
                f"overflows={len(self.overflows)}, nonfinite_outputs="
                f"{list(self.nonfinite_outputs)}, aicpu_fallbacks={list(self.aicpu_fallbacks)})")
