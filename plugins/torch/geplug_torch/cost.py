"""Modelled device time of what runs outside the compiled graphs: the optimizer's update.

Ops inside the graphs are timed by the core's cost path (the product's compute model, the
same formula as the ONNX simulator: :func:`geplug_simulator.cost.estimate`). The gradient
refresh of ``optimizer.step()`` is modelled as one vector op per parameter tensor that reads
the parameter, its gradient and each per-parameter state tensor (Adam's two moments) and
writes the parameter and the states back - a bandwidth-bound update, as on the device.
"""

from __future__ import annotations

from typing import Any

from geplug.precision import OpDecision

__all__ = ["refresh_time_us"]


def refresh_time_us(product: Any, optimizer: Any) -> float:
    """Device µs of ``optimizer``'s update of every parameter that has a gradient."""
    from geplug_simulator.cost import estimate

    decision = OpDecision(node="optimizer", onnx_op="optimizer.step", op_type="ApplyAdamW",
                          engine="AI_CORE", dtype="float32", impl_mode="", reason="",
                          original_dtype="float32", output_dtype="float32", op_class="vector")
    total = 0.0
    for group in getattr(optimizer, "param_groups", ()):
        for p in group.get("params", ()):
            if getattr(p, "grad", None) is None:
                continue
            shape = tuple(int(d) for d in p.shape)
            states = sum(1 for v in optimizer.state.get(p, {}).values()
                         if hasattr(v, "shape") and tuple(v.shape) == tuple(p.shape))
            cost = estimate(decision, product, [shape] * (2 + states),
                            ["float32"] * (2 + states), [shape] * (1 + states),
                            ["float32"] * (1 + states))
            total += cost.duration_us
    return total
