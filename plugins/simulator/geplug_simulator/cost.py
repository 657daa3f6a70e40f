"""Simulated device time of an op from the product's compute model (never CPU time).

time = max(FLOPs / peak rate of the op's unit and dtype, bytes moved / memory bandwidth);
the rates are the product's declared, approximate public figures (``Product.compute``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs

from geplug.precision import OpDecision
from geplug.products.schema import Product

__all__ = ["OpCost", "estimate"]

_BYTES = {
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4,
    "int16": 2, "int8": 1, "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8, "bool": 1,
    "hifloat8": 1,
}
_TRANSCENDENTAL = frozenset({"Exp", "Log", "Tanh", "Sigmoid", "Gelu", "Erf", "Sqrt", "Pow",
                             "Reciprocal"})
_NORM = frozenset({"SoftmaxV2", "LogSoftmaxV2", "LayerNorm", "BatchNorm", "InstanceNorm",
                   "LRN"})


@attrs.frozen
class OpCost:
    """The modelled work and time of one op on the simulated device."""

    flops: float
    bytes_moved: float
    duration_us: float
    block_dim: int
    cube_fraction: float
    task_type: str


def _numel(shape: Sequence[int | None] | None) -> int:
    if shape is None:
        return 1
    return int(math.prod(int(d) if d else 1 for d in shape))


def estimate(
    decision: OpDecision,
    product: Product,
    input_shapes: Sequence[Sequence[int | None] | None],
    input_dtypes: Sequence[str],
    output_shapes: Sequence[Sequence[int | None] | None],
    output_dtypes: Sequence[str],
    *,
    kernel_numel: int = 1,
) -> OpCost:
    """Model ``decision``'s op on ``product`` (unknown dims count as 1)."""
    compute = product.compute
    out_n = sum(_numel(s) for s in output_shapes) or 1
    op_type = decision.op_type
    matrix = decision.op_class == "matrix"
    if op_type in ("MatMulV2", "BatchMatMulV2") and input_shapes and input_shapes[0]:
        k = input_shapes[0][-1] or 1
        if decision.onnx_op == "Gemm" and len(input_shapes[0]) == 2:
            k = max(int(d or 1) for d in input_shapes[0])
        flops = 2.0 * _numel(output_shapes[0] if output_shapes else None) * int(k)
    elif matrix:
        flops = 2.0 * out_n * max(kernel_numel, 1)
    elif op_type == "Pooling":
        flops = float(out_n * max(kernel_numel, 1))
    elif op_type in _NORM:
        flops = 5.0 * max(out_n, _numel(input_shapes[0]) if input_shapes else 1)
    elif op_type in _TRANSCENDENTAL:
        flops = 4.0 * out_n
    else:
        flops = float(max(out_n, max((_numel(s) for s in input_shapes), default=1)))
    size = lambda shapes, dtypes: sum(  # noqa: E731
        _numel(s) * _BYTES.get(dt, 4) for s, dt in zip(shapes, dtypes, strict=False)
    )
    moved = float(size(input_shapes, input_dtypes) + size(output_shapes, output_dtypes))
    dtype = decision.dtype or "float32"
    if decision.engine == "AI_CPU":
        rate = compute.aicpu_gflops * 1e9
        task_type, block_dim, cube = "AI_CPU", 1, 0.0
    else:
        table = compute.cube_tflops if matrix else compute.vector_tflops
        peak = table.get(dtype) or (min(table.values()) if table else 1.0)
        rate = peak * 1e12
        if matrix:
            block_dim = min(compute.ai_cores, max(1, math.ceil(out_n / 4096)))
            task_type, cube = "AI_CORE", 0.85
            if product.profiling.mix_aic_large_matmul and flops > 1e9 and any(
                s and (s[-1] or 0) % 16 for s in input_shapes[:2]
            ):
                task_type = "MIX_AIC"
        else:
            cores = compute.vector_cores or compute.ai_cores
            block_dim = min(cores, max(1, math.ceil(out_n / 2048)))
            task_type = "AI_VECTOR_CORE" if product.profiling.split_cores else "AI_CORE"
            cube = 0.0
        # Work spreads over block_dim of the declared cores; peak is for all cores.
        cores_total = compute.ai_cores if matrix else (compute.vector_cores or compute.ai_cores)
        rate *= block_dim / max(cores_total, 1)
    compute_us = flops / rate * 1e6 if rate > 0 else 0.0
    memory_us = moved / (compute.memory_bandwidth_gbps * 1e9) * 1e6
    duration = max(compute_us, memory_us, 1.0)
    return OpCost(flops, moved, duration, int(block_dim), cube, task_type)
