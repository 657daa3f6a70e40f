"""Running an aten op in the dtype precision resolution decided (the rounding of the device).

An op decided to run in float16 or bfloat16 while its graph computes in float32 is replaced
in the fx graph by a :class:`Lowered` call: its floating inputs are cast to the device dtype,
the torch CPU kernel runs in that dtype, and its floating outputs are rounded to the decided
output dtype and cast back to the graph's dtype - so the values the next op reads are exactly
the device's, including float16 overflow to inf. Where the CPU has no kernel for that dtype
(``RuntimeError: ... not implemented for 'Half'``), the op computes in float32 on the rounded
inputs and its outputs are rounded the same way (a documented approximation: the device
would also round intermediate results). An op decided to keep its dtype is left untouched,
so a float32 graph under must_keep_origin_dtype runs exactly as eager PyTorch.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FLOAT32_STATISTICS", "Lowered", "torch_dtype"]

_NAMES = ("float16", "bfloat16", "float32", "float64")

FLOAT32_STATISTICS: dict[str, tuple[frozenset[int], frozenset[int]]] = {
    "_scaled_dot_product_flash_attention_for_cpu": (frozenset(), frozenset({1})),
    "_scaled_dot_product_flash_attention_for_cpu_backward": (frozenset({5}), frozenset()),
}
"""aten op -> (positional inputs, outputs) that stay float32 when the op is lowered: the
softmax statistics of fused attention (its logsumexp), which CANN's FlashAttentionScore
writes and FlashAttentionScoreGrad reads in float32 whatever the data dtype (op-info of CANN
8.1.RC1: ``softmax_max`` / ``softmax_sum`` float32 for every query dtype). The positions
hold for the device node too (its gradient reads CANN's order, which moves only dy)."""


def torch_dtype(name: str) -> Any:
    """The torch dtype of a numpy/ml_dtypes dtype name (``None`` for non-float names)."""
    import torch

    return {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
            "float64": torch.float64}.get(name)


class Lowered:
    """An fx call target: ``target`` run in ``device`` dtype, outputs rounded to ``out``."""

    def __init__(self, target: Any, *, device: str, out: str, original: str,
                 keep_inputs: frozenset[int] = frozenset(),
                 keep_outputs: frozenset[int] = frozenset()) -> None:
        self.target = target
        self.keep_inputs = keep_inputs
        """Positional inputs left in their dtype (float32 statistics)."""
        self.keep_outputs = keep_outputs
        """Outputs of a tuple result left unrounded (float32 statistics)."""
        self.device = torch_dtype(device)
        self.out = torch_dtype(out) or self.device
        self.original = torch_dtype(original)
        self.fallback = False
        """The CPU has no kernel in the device dtype: compute in the original dtype."""
        self.__name__ = f"lowered_{getattr(target, '__name__', 'op')}".replace(".", "_")
        self.__qualname__ = self.__name__

    def _cast(self, value: Any, dtype: Any) -> Any:
        import torch

        if isinstance(value, torch.Tensor) and value.dtype == self.original:
            return value.to(dtype)
        if isinstance(value, (list, tuple)):
            return type(value)(self._cast(v, dtype) for v in value)
        return value

    def _round(self, value: Any) -> Any:
        import torch

        if isinstance(value, torch.Tensor) and value.is_floating_point() and \
                value.dtype in (self.original, self.device, self.out):
            return value.to(self.out).to(self.original)
        if isinstance(value, (list, tuple)):
            return type(value)(v.to(self.original) if i in self.keep_outputs
                               and isinstance(v, torch.Tensor) else self._round(v)
                               for i, v in enumerate(value))
        return value

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        kept = {i: args[i] for i in self.keep_inputs if i < len(args)}
        args = tuple(kept.get(i, a) for i, a in enumerate(self._cast(args, self.device)))
        kwargs = {k: self._cast(v, self.device) for k, v in kwargs.items()}
        if not self.fallback:
            try:
                return self._round(self.target(*args, **kwargs))
            except (RuntimeError, NotImplementedError):
                self.fallback = True
        args = tuple(kept.get(i, a) for i, a in enumerate(self._cast_back(args)))
        kwargs = {k: self._cast_back(v) for k, v in kwargs.items()}
        return self._round(self.target(*args, **kwargs))

    def _cast_back(self, value: Any) -> Any:
        import torch

        if isinstance(value, torch.Tensor) and value.dtype == self.device:
            return value.to(self.original)
        if isinstance(value, (list, tuple)):
            return type(value)(self._cast_back(v) for v in value)
        return value

    def __repr__(self) -> str:
        return f"Lowered({self.target}, device={self.device}, out={self.out})"
