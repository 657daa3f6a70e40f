"""Exact collective results (geplug.hccl.collectives)."""

from __future__ import annotations

import numpy as np
import pytest

from geplug.errors import HcclError
from geplug.hccl import collectives as cc


def ranks(n=4, shape=(4, 3)):
    return [np.arange(np.prod(shape), dtype=np.int64).reshape(shape) * (r + 1) for r in range(n)]


def test_allreduce_gives_every_rank_the_sum():
    out = cc.allreduce(ranks())
    assert all(np.array_equal(o, sum(ranks())) for o in out)


@pytest.mark.parametrize(("op", "fn"), [("max", np.maximum), ("min", np.minimum)])
def test_allreduce_max_min(op, fn):
    a = ranks()
    ref = a[0]
    for x in a[1:]:
        ref = fn(ref, x)
    assert np.array_equal(cc.allreduce(a, op)[2], ref)


def test_allgather_concatenates_in_rank_order():
    a = ranks()
    assert np.array_equal(cc.allgather(a, axis=1)[3], np.concatenate(a, axis=1))


def test_reducescatter_gives_rank_r_block_r():
    a = ranks()
    out = cc.reducescatter(a)
    assert np.array_equal(out[1], sum(a)[1:2])


def test_broadcast_and_reduce_follow_the_root():
    a = ranks()
    assert all(np.array_equal(o, a[2]) for o in cc.broadcast(a, root=2))
    red = cc.reduce(a, root=1)
    assert np.array_equal(red[1], sum(a)) and np.array_equal(red[0], a[0])


def test_alltoall_moves_block_j_of_rank_r_to_rank_j():
    a = ranks()
    out = cc.alltoall(a)
    assert np.array_equal(out[2][1], a[1][2])


def test_alltoallv_uses_the_send_counts():
    a = [np.full((3, 2), r) for r in range(2)]
    out = cc.alltoallv(a, [[1, 2], [2, 1]])
    assert out[0].shape == (3, 2) and list(out[0][:, 0]) == [0, 1, 1]


def test_ranks_with_different_shapes_are_refused():
    with pytest.raises(HcclError, match="rank 1"):
        cc.allreduce([np.zeros(3), np.zeros(4)])
