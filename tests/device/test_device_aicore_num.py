"""The aicore_num session option limits the AI Cores the device model schedules on: fewer
cores, longer matrix work (each core keeps its declared rate)."""

from __future__ import annotations

from typing import Any

import pytest

from geplug.device import Graph, Node, Tensor, build_device_model, optimize
from geplug.products.schema import GraphCaps


def _matmul(dtype: str) -> Graph:
    """One large MatMul: 4096 x 4096 x 4096, compute-bound on every product."""
    tensors = [Tensor(name="x", dtype=dtype, shape=(4096, 4096), kind="input"),
               Tensor(name="w", dtype=dtype, shape=(4096, 4096), kind="weight"),
               Tensor(name="y", dtype=dtype, shape=(4096, 4096), kind="activation")]
    return Graph(name="mm", nodes=[Node(name="mm", op_type="MatMulV2", inputs=("x", "w"),
                                        outputs=("y",))],
                 tensors={t.name: t for t in tensors}, inputs=("x",), outputs=("y",))


def _compute_us(product: Any, aicore_num: int | None) -> float:
    dtype = "float16" if "float16" in product.compute.cube_tflops else \
        next(iter(product.compute.cube_tflops))
    model = build_device_model(optimize(_matmul(dtype), GraphCaps()), product,
                               check_memory=False, aicore_num=aicore_num)
    (plan,) = model.tasks
    return plan.cost.compute_us


def test_half_the_ai_cores_makes_a_large_matmul_at_least_1_5x_slower(
        geplug_product: Any) -> None:
    if geplug_product.compute.ai_cores < 2:
        pytest.skip(f"{geplug_product.name} declares one AI Core: nothing to halve")
    half = geplug_product.compute.ai_cores // 2
    full = _compute_us(geplug_product, None)
    assert _compute_us(geplug_product, half) >= 1.5 * full


def test_aicore_num_equal_to_the_declared_cores_changes_nothing(geplug_product: Any) -> None:
    assert _compute_us(geplug_product, geplug_product.compute.ai_cores) == \
        _compute_us(geplug_product, None)
