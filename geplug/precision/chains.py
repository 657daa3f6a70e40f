"""The selection chains of options.md §5.4 (the seed's precision_mode text), one per mode.

Each precision mode is a *chain* of :class:`Step` s read left to right; the first step the
product's operator table supports wins (:func:`geplug.precision.select.select_dtype`). The
``why`` of each step is the reason ``geplug compile`` prints when it wins; steps the seed does
not state are marked *inferred*.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from geplug.precision.mixlist import BLACK
from geplug.precision.modes import MIX_RULES

if TYPE_CHECKING:
    from geplug.products.schema import OpSupport

__all__ = ["AI_CORE", "AI_CPU", "BF16", "F16", "F32", "Step", "chain"]

AI_CORE, AI_CPU = "AI_CORE", "AI_CPU"
F32, F16, BF16 = "float32", "float16", "bfloat16"


@attrs.frozen
class Step:
    """One link of a selection chain: run on ``engine`` in ``dtype`` (``out_dtype`` differs
    only for the cube fp16-in/fp32-out kernel); ``why`` is said when it wins."""

    engine: str
    dtype: str
    why: str
    out_dtype: str = ""
    needs: str = ""
    """An extra condition on the table: ``cube_fp16in_fp32out``, ``fp32`` (AIC has fp32)."""

    def label(self) -> str:
        """``AI Core float16`` / ``AI CPU float32`` / ``AI Core float16->float32``."""
        where = "AI Core" if self.engine == AI_CORE else "AI CPU"
        dt = f"{self.dtype}->{self.out_dtype}" if self.out_dtype else self.dtype
        return f"{where} {dt}"

    def supported(self, op: OpSupport) -> bool:
        """Whether ``op``'s table supports this step."""
        table = op.aicore_dtypes if self.engine == AI_CORE else op.aicpu_dtypes
        if self.dtype not in table:
            return False
        if self.needs == "cube_fp16in_fp32out":
            return bool(op.cube_fp16in_fp32out)
        if self.needs == "fp32":
            return F32 in op.aicore_dtypes
        return True


def _aic(dtype: str, why: str, **kw: str) -> Step:
    return Step(AI_CORE, dtype, why, **kw)


def _cpu(dtype: str, why: str) -> Step:
    return Step(AI_CPU, dtype, why)


def _keep_chain(orig: str, note: str) -> list[Step]:
    return [
        _aic(orig, f"kept the original {orig} on AI Core{note}"),
        _cpu(orig, f"AI Core has no {orig}: kept {orig} on AI CPU{note}"),
    ]


def chain(
    rule: str, op: OpSupport, orig: str, *, lowered: bool, mix_state: str,
    product_floats: tuple[str, ...] = (F16, BF16, F32),
) -> tuple[list[Step], bool]:
    """The §5.4 chain for ``rule``; the flag says whether a seed sentence covers the case.

    ``product_floats`` are the floating dtypes the product has on AI Core at all: force_fp16's
    "supports float16, bfloat16 and float32" is read as "every one of those the product has"
    (inferred: on a family without bfloat16 the condition would otherwise never hold, although
    force_fp16 is its inference default and GE maps v2 ``fp16`` onto it).
    """
    matrix = op.op_class == "matrix"
    if rule == "allow_fp32_to_fp16":
        if matrix and orig == F32:
            return [
                _aic(F16, "matrix op, original float32: lowered to float16 (first choice)"),
                _aic(F32, "matrix op: AI Core has no float16, kept float32"),
                _cpu(F32, "matrix op: AI Core has neither float16 nor float32, AI CPU"),
            ], True
        if orig == BF16:
            kind = "matrix" if matrix else "vector"
            return [
                _aic(BF16, f"{kind} op, original bfloat16: kept bfloat16 (first choice)"),
                _aic(F32, f"{kind} op: AI Core has no bfloat16, chose float32"),
                _aic(F16, f"{kind} op: AI Core has neither bfloat16 nor float32, lowered "
                     "directly to float16"),
                _cpu(BF16, f"{kind} op: AI Core has no bfloat16/float32/float16, AI CPU"),
            ], True
        if not matrix and orig == F32:
            return [
                _aic(F32, "vector op, original float32: kept float32 (vector ops keep the "
                     "original dtype first)"),
                _aic(F16, "vector op: AI Core has no float32, lowered directly to float16"),
                _cpu(F32, "vector op: AI Core has neither float32 nor float16, AI CPU"),
            ], True
    if rule == "force_fp16" and orig in (F16, BF16, F32):
        required = tuple(d for d in (F16, BF16, F32) if d in product_floats or d == F16)
        if all(d in op.aicore_dtypes for d in required):
            having = ", ".join(required)
            return [_aic(F16, f"the AI Core op supports {having} (every float dtype of the "
                         "product): forced float16")], True
        note = " (force_fp16 applies only to ops supporting float16, bfloat16 and float32)"
        return [
            _aic(orig, f"kept the original {orig} on AI Core{note}"),
            _aic(F16, f"AI Core has no {orig}: lowered to float16, the dtype force_fp16 asks "
                 "for (inferred: a family without bfloat16 would otherwise never get float16)"),
            _cpu(orig, f"AI Core has neither {orig} nor float16: kept {orig} on AI CPU{note}"),
        ], True
    if rule == "fp16_v2" and orig in (F16, BF16, F32):
        return [
            _aic(F16, f"original {orig}: forced float16"),
            _cpu(F16, "AI Core has no float16: float16 on AI CPU (inferred)"),
        ], True
    if rule == "force_fp32" and orig in (F16, BF16, F32):
        if matrix:
            return [
                _aic(F16, "matrix op: input float16, output float32 (first choice)",
                     out_dtype=F32, needs="cube_fp16in_fp32out"),
                _aic(F32, "matrix op: no float16-in/float32-out kernel, input and output "
                     "float32"),
                _aic(F16, "matrix op: no float32 kernel, input and output float16"),
            ], True
        if orig in (F16, BF16):
            steps = [_aic(F32, f"vector op, original {orig}: forced float32")]
            if mix_state == BLACK:
                steps.append(_cpu(F32, "vector op without AI Core float32 on the black list "
                                  "(precision_reduce = false): float32 AI CPU op"))
            else:
                steps.append(_aic(orig, f"vector op: AI Core has no float32, the option has "
                                  f"no effect, kept the supported {orig}"))
            return steps, True
    if rule == "must_keep_origin_dtype":
        if orig == F16:
            return [
                _aic(F16, "kept the original float16"),
                _aic(F32, "AI Core has no float16 but has float32: automatic high precision "
                     "float32", needs="fp32"),
                _cpu(F16, "AI Core has no float16 (only bfloat16): float16 AI CPU op"),
            ], True
        if orig == F32:
            return [
                _aic(F32, "kept the original float32"),
                _cpu(F32, "AI Core has no float32 (only float16): float32 AI CPU op"),
            ], True
    if rule in MIX_RULES:
        target = MIX_RULES[rule]
        if rule == "allow_mix_precision_bf16" and orig == F32:
            if lowered:
                return [
                    _aic(BF16, f"{mix_state} list: lowered float32 to bfloat16"),
                    _aic(F32, f"{mix_state} list, AI Core has no bfloat16: kept float32"),
                    _cpu(F32, "AI Core supports neither bfloat16 nor float32: AI CPU"),
                ], True
            return [
                _aic(F32, f"{mix_state} list: kept float32"),
                _aic(BF16, f"{mix_state} list, AI Core has no float32: bfloat16"),
                _cpu(F32, "AI Core supports neither bfloat16 nor float32: AI CPU"),
            ], True
        if rule == "allow_mix_precision_fp16" and orig in (F32, BF16) and lowered:
            return [
                _aic(target, f"{mix_state} list: lowered {orig} to {target}"),
                *_keep_chain(orig, f" ({mix_state} list, AI Core has no {target})"),
            ], True
        if rule == "mixed_hif8" and orig in (F16, BF16, F32) and lowered:
            return [
                _aic(target, f"{mix_state} list: lowered {orig} to hifloat8"),
                *_keep_chain(orig, f" ({mix_state} list, AI Core has no hifloat8)"),
            ], True
        if orig in (F32, BF16) or (rule == "mixed_hif8" and orig == F16):
            return _keep_chain(orig, f" ({mix_state} list: not lowered)"), True
    if rule == "cube_hif8" and matrix and orig in (F16, BF16, F32) and "hifloat8" in \
            op.aicore_dtypes:
        return [_aic("hifloat8", "cube op supporting hifloat8: forced hifloat8")], True
    if rule == "allow_fp32_to_bf16":
        if orig == F32:
            return [
                _aic(F32, "original float32: kept float32 (first choice)"),
                _aic(BF16, "AI Core has no float32: lowered to bfloat16"),
                _cpu(F32, "AI Core has neither float32 nor bfloat16: AI CPU"),
            ], True
        if orig == BF16:
            return [
                _aic(BF16, "original bfloat16: kept bfloat16 (first choice)"),
                _aic(F32, "AI Core has no bfloat16: chose float32"),
                _cpu(BF16, "AI Core has neither bfloat16 nor float32: AI CPU"),
            ], True
    return _keep_chain(orig, ""), False
