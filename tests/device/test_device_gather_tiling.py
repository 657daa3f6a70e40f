"""Costs that follow what the kernels really touch: a gather reads the rows it gathers, a
GEMM too small to fill the cores is tiled into smaller blocks (geplug.device.cost)."""

from __future__ import annotations

import attrs
import pytest

from geplug.device import Graph, Node, Tensor, build_device_model, optimize
from geplug.device.cost import Gemm, cube_time_us
from geplug.products.schema import GraphCaps
from geplug.testing.plugin import require_product


def _lookup(vocab: int) -> Graph:
    """An embedding lookup: 1024 int64 ids into a (vocab x 768) float32 table."""
    t = {"ids": Tensor(name="ids", dtype="int64", shape=(8, 128), kind="input"),
         "table": Tensor(name="table", dtype="float32", shape=(vocab, 768), kind="weight"),
         "e": Tensor(name="e", dtype="float32", shape=(8, 128, 768))}
    node = Node(name="emb", op_type="Gather", inputs=("table", "ids"), outputs=("e",))
    return Graph(name="lookup", nodes=[node], tensors=t, inputs=("ids",), outputs=("e",))


@pytest.mark.requires_products("atlas_a2")
def test_an_embedding_gather_moves_the_rows_it_gathers_not_its_table() -> None:
    product = require_product("atlas_a2")
    costs = [build_device_model(optimize(_lookup(v), GraphCaps()), product).tasks[0].cost
             for v in (4096, 30522)]
    rows = 8 * 128 * 768 * 4
    ids = 8 * 128 * 8
    for cost in costs:
        assert cost.bytes_moved == 2 * rows + ids  # the rows read, the rows written, ids
    assert costs[0].duration_us == pytest.approx(costs[1].duration_us)


@pytest.mark.requires_products("atlas_a2")
def test_a_gemm_too_small_to_fill_the_cores_is_tiled_into_smaller_blocks() -> None:
    c = require_product("atlas_a2").compute  # 24 cores, 128 x 256 base blocks
    gemm = Gemm(batch=1, m=1024, n=768, k=768)  # 8 x 3 = 24 base blocks
    small = Gemm(batch=1, m=512, n=768, k=768)  # 12 base blocks: half the cores idle
    fixed = attrs.evolve(c, cube_block=(128, 256))
    t_full, used_full = cube_time_us(gemm, fixed, "float16")
    t_small, used_small = cube_time_us(small, fixed, "float16")
    assert used_full == 24 and used_small == 24  # halved blocks: 24 of them
    # half the work over every core: half the time (in base blocks, 12 cores would take
    # as long as the full GEMM on 24)
    assert t_small == pytest.approx(0.5 * t_full)
