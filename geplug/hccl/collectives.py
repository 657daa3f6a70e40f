"""Exact collective results across the ranks' tensors (numpy; what every rank receives).

The reduction is done in the tensors' own dtype, in rank order, as a deterministic tree
would not be: HCCL's sum order is not public, so geplug sums rank 0 + rank 1 + ... (for
integer and float32 inputs of a few ranks that equals any order to the last bit only for
integers; docs/distributed.md says so).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from geplug.errors import HcclError

__all__ = ["REDUCE_OPS", "allgather", "allreduce", "alltoall", "alltoallv", "broadcast",
           "reduce", "reducescatter"]

REDUCE_OPS = ("sum", "prod", "max", "min")
"""HCCL's reduction operations (HCCL_REDUCE_SUM, _PROD, _MAX, _MIN)."""


def _same(name: str, arrays: Sequence[np.ndarray]) -> None:
    if not arrays:
        raise HcclError(f"{name}: no rank tensors")
    first = arrays[0]
    for r, a in enumerate(arrays):
        if a.shape != first.shape or a.dtype != first.dtype:
            raise HcclError(f"{name}: rank {r} gives {a.dtype}{list(a.shape)} but rank 0 "
                            f"gives {first.dtype}{list(first.shape)}; every rank of a "
                            "collective must pass the same shape and dtype", ranks=[0, r])


def _reduce(name: str, arrays: Sequence[np.ndarray], op: str) -> np.ndarray:
    _same(name, arrays)
    if op not in REDUCE_OPS:
        raise HcclError(f"{name}: reduce op {op!r} is not one of {', '.join(REDUCE_OPS)}")
    out = np.array(arrays[0], copy=True)
    fn = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}[op]
    for a in arrays[1:]:
        with np.errstate(over="ignore", invalid="ignore"):
            out = fn(out, a).astype(out.dtype, copy=False)
    return out


def allreduce(arrays: Sequence[np.ndarray], op: str = "sum") -> list[np.ndarray]:
    """Every rank gets the reduction of all ranks' tensors."""
    out = _reduce("allreduce", arrays, op)
    return [out.copy() for _ in arrays]


def reduce(arrays: Sequence[np.ndarray], root: int = 0, op: str = "sum") -> list[np.ndarray]:
    """The root gets the reduction; the others keep their input."""
    out = _reduce("reduce", arrays, op)
    return [out if r == root else np.array(a, copy=True) for r, a in enumerate(arrays)]


def allgather(arrays: Sequence[np.ndarray], axis: int = 0) -> list[np.ndarray]:
    """Every rank gets the ranks' tensors concatenated along ``axis`` in rank order."""
    _same("allgather", arrays)
    out = np.concatenate(list(arrays), axis=axis)
    return [out.copy() for _ in arrays]


def reducescatter(arrays: Sequence[np.ndarray], op: str = "sum") -> list[np.ndarray]:
    """Rank r gets block r (along axis 0) of the reduction."""
    n = len(arrays)
    out = _reduce("reducescatter", arrays, op)
    if out.shape[0] % n:
        raise HcclError(f"reducescatter: the first dimension {out.shape[0]} is not a multiple "
                        f"of the {n} ranks")
    return [b.copy() for b in np.split(out, n, axis=0)]


def broadcast(arrays: Sequence[np.ndarray], root: int = 0) -> list[np.ndarray]:
    """Every rank gets the root's tensor."""
    _same("broadcast", arrays)
    return [np.array(arrays[root], copy=True) for _ in arrays]


def alltoall(arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Rank r's block j (axis 0) goes to rank j, which stacks the blocks in rank order."""
    n = len(arrays)
    _same("alltoall", arrays)
    if arrays[0].shape[0] % n:
        raise HcclError(f"alltoall: the first dimension {arrays[0].shape[0]} is not a multiple "
                        f"of the {n} ranks")
    blocks = [np.split(a, n, axis=0) for a in arrays]
    return [np.concatenate([blocks[src][dst] for src in range(n)], axis=0)
            for dst in range(n)]


def alltoallv(arrays: Sequence[np.ndarray], counts: Sequence[Sequence[int]]
              ) -> list[np.ndarray]:
    """Rank r sends ``counts[r][j]`` rows (axis 0) to rank j."""
    n = len(arrays)
    if len(counts) != n or any(len(c) != n for c in counts):
        raise HcclError(f"alltoallv: send counts must be an {n} x {n} table")
    parts = []
    for r, a in enumerate(arrays):
        if sum(counts[r]) != a.shape[0]:
            raise HcclError(f"alltoallv: rank {r} sends {sum(counts[r])} rows but has "
                            f"{a.shape[0]}", ranks=[r])
        parts.append(np.split(a, np.cumsum(counts[r])[:-1], axis=0))
    return [np.concatenate([parts[src][dst] for src in range(n)], axis=0) for dst in range(n)]
