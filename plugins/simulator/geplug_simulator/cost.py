"""Simulated device time of an op from the product's compute model (never CPU time).

``duration = launch_overhead_us + max(FLOPs / rate, bytes moved / memory bandwidth)``.
The rate is the product's declared peak (``Product.compute``: ``cube_tflops`` for matrix ops,
``vector_tflops`` otherwise, both per dtype, or ``aicpu_gflops`` for AI CPU ops) scaled by
the share of cores the op's ``block_dim`` occupies; the launch overhead is the declared fixed
cost of every task (kernel start, tiling, block dispatch). All figures are approximate public
numbers: the times compare modes, dtypes and products, they are not measurements.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs

from geplug.precision import OpDecision
from geplug.products.schema import Product

__all__ = ["OpCost", "dtype_bytes", "estimate", "numel"]

_BYTES = {
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4,
    "int16": 2, "int8": 1, "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8, "bool": 1,
    "hifloat8": 1,
}
_TRANSCENDENTAL = frozenset({"Exp", "Log", "Tanh", "Sigmoid", "Gelu", "Erf", "Sqrt", "Pow",
                             "Reciprocal"})
_NORM = frozenset({"SoftmaxV2", "LogSoftmaxV2", "LayerNorm", "BatchNorm", "InstanceNorm",
                   "LRN"})
_OUTPUTS_PER_CUBE_BLOCK = 4096
"""Output elements one AI Core block takes before the op is split over another core."""
_OUTPUTS_PER_VECTOR_BLOCK = 2048
_CUBE_FRACTION = 0.85
"""Share of a matrix op's cycles on the cube unit (the rest: vector/scalar epilogue)."""


@attrs.frozen
class OpCost:
    """The modelled work and time of one op on the simulated device."""

    flops: float
    bytes_moved: float
    duration_us: float
    """Launch overhead plus the roofline time (the op's task duration)."""
    block_dim: int
    cube_fraction: float
    task_type: str


def numel(shape: Sequence[int | None] | None) -> int:
    """Elements of ``shape`` (unknown dims count as 1, a scalar or unknown shape as 1)."""
    if shape is None:
        return 1
    return int(math.prod(int(d) if d else 1 for d in shape))


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of ``dtype`` (4 for a dtype the table does not know)."""
    return _BYTES.get(dtype, 4)


def _flops(decision: OpDecision, in_n: int, out_n: int, reduce_size: int) -> float:
    op_type = decision.op_type
    if decision.op_class == "matrix":
        return 2.0 * out_n * max(reduce_size, 1)
    if op_type == "Pooling":
        return float(out_n * max(reduce_size, 1))
    if op_type in _NORM:
        return 5.0 * max(out_n, in_n)
    if op_type in _TRANSCENDENTAL:
        return 4.0 * out_n
    return float(max(out_n, in_n))


def estimate(
    decision: OpDecision,
    product: Product,
    input_shapes: Sequence[Sequence[int | None] | None],
    input_dtypes: Sequence[str],
    output_shapes: Sequence[Sequence[int | None] | None],
    output_dtypes: Sequence[str],
    *,
    reduce_size: int = 1,
) -> OpCost:
    """Model ``decision``'s op on ``product`` (unknown dims count as 1).

    ``reduce_size`` is the number of products summed into one output element of a matrix op
    (K of a MatMul, ``C_in/group * kh * kw`` of a convolution) or the window of a pooling op.
    """
    compute = product.compute
    out_n = sum(numel(s) for s in output_shapes) or 1
    in_n = max((numel(s) for s in input_shapes), default=1)
    matrix = decision.op_class == "matrix"
    flops = _flops(decision, in_n, out_n, reduce_size)
    moved = float(
        sum(numel(s) * dtype_bytes(dt) for s, dt in zip(input_shapes, input_dtypes, strict=False))
        + sum(numel(s) * dtype_bytes(dt)
              for s, dt in zip(output_shapes, output_dtypes, strict=False))
    )
    dtype = decision.dtype or "float32"
    if decision.engine == "AI_CPU":
        rate = compute.aicpu_gflops * 1e9
        task_type, block_dim, cube = "AI_CPU", 1, 0.0
    else:
        table = compute.cube_tflops if matrix else compute.vector_tflops
        peak = table.get(dtype) or (min(table.values()) if table else 1.0)
        if matrix:
            cores = compute.ai_cores
            block_dim = min(cores, max(1, math.ceil(out_n / _OUTPUTS_PER_CUBE_BLOCK)))
            task_type, cube = "AI_CORE", _CUBE_FRACTION
            if product.profiling.mix_aic_large_matmul and flops > 1e9 and any(
                s and (s[-1] or 0) % 16 for s in input_shapes[:2]
            ):
                task_type = "MIX_AIC"
        else:
            cores = compute.vector_cores or compute.ai_cores
            block_dim = min(cores, max(1, math.ceil(out_n / _OUTPUTS_PER_VECTOR_BLOCK)))
            task_type = "AI_VECTOR_CORE" if product.profiling.split_cores else "AI_CORE"
            cube = 0.0
        # The declared peak is for all cores; the op uses block_dim of them.
        rate = peak * 1e12 * block_dim / max(cores, 1)
    compute_us = flops / rate * 1e6 if rate > 0 else 0.0
    memory_us = moved / (compute.memory_bandwidth_gbps * 1e9) * 1e6
    duration = compute.launch_overhead_us + max(compute_us, memory_us)
    return OpCost(flops, moved, duration, int(block_dim), cube, task_type)
