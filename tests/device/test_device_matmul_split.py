"""The multi-core split of a GEMM (``geplug.device.cost._even_split``): M, N and the batch
divided over the cores as Ascend C's matmul tiling divides them (``mDim x nDim`` cores of
``singleCoreM x singleCoreN`` each), not only whole base blocks in waves."""

from __future__ import annotations

import pytest

from geplug.device.cost import Gemm, _even_split, cube_time_us
from geplug.testing.plugin import require_product


def test_the_split_minimises_the_busiest_cores_area_within_the_core_count() -> None:
    # M 1024, N 768 in 16x16 tiles: 64 x 48 tiles. 24 base blocks of 8 x 16 tiles fill 24
    # cores exactly; 28 cores do better split 4 x 7 (16 x 7 = 112 tiles per core).
    assert _even_split(1, 64, 48, 24) == (128, 24)
    assert _even_split(1, 64, 48, 28) == (112, 28)
    # a batch is split too: 96 heads of one tile each on 28 cores -> 4 per core, which
    # 24 cores already achieve (the fewest cores on a tie)
    assert _even_split(96, 1, 1, 28) == (4, 24)
    # never more cores than there is work
    assert _even_split(1, 2, 3, 64) == (1, 6)


@pytest.mark.requires_products("atlas_350")
def test_cores_that_do_not_divide_the_base_blocks_still_share_the_work() -> None:
    c = require_product("atlas_350").compute  # 28 AI cores
    gemm = Gemm(batch=1, m=1024, n=768, k=768)  # a BERT-base projection, batch 8, seq 128
    t, used = cube_time_us(gemm, c, "float16")
    # 24 base blocks of 128 x 256 (or 48 / 96 halved ones) take one block's time on 28
    # cores; split 4 x 7, each core computes 256 x 112 = 112 tiles instead of 128
    block = 2.0 * 128 * 256 * (768 + c.cube_k_latency) / (
        c.cube_tflops["float16"] * c.cube_efficiency["float16"] * 1e12 / c.ai_cores) * 1e6
    assert t == pytest.approx(block * 112 / 128)
    assert used == 28
