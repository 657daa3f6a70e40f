"""l2: per-task L2 cache hit rate (and TLB hit rate where the product collects it) -> ``l2_cache``.

options.md §3.3 / §13.2: ``l2`` collects the L2 hit rate (910, 310p) or L2 and TLB hit rates
(910b, a3, 950: ``product.profiling.l2 == "l2_tlb"``). The column list follows msprof's
l2_cache summary (inferred); the ``TLB Hit Rate`` column is written only for ``l2_tlb``
products. Values are **modelled**: cube-heavy work reuses more (higher hit rate).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from geplug.profiling.pmu import PMU_TASK_TYPES

if TYPE_CHECKING:
    from geplug.profiling.task_collector import TaskRow

__all__ = ["header", "row", "wants"]


def header(mode: str) -> list[str]:
    """The l2_cache columns for the product's l2 mode (``l2`` or ``l2_tlb``)."""
    cols = ["Device_id", "Stream Id", "Task Id", "Hit Rate", "Victim Rate", "Op Name"]
    return [*cols, "TLB Hit Rate"] if mode == "l2_tlb" else cols


def wants(task: TaskRow) -> bool:
    """L2 counters exist for AI Core / AI Vector tasks."""
    return task.op.task_type in PMU_TASK_TYPES


def row(device_id: int, task: TaskRow, mode: str) -> list[str]:
    """One l2_cache row (modelled rates)."""
    cf = min(1.0, max(0.0, task.op.cube_fraction))
    hit = 0.5 + 0.35 * cf
    out = [str(device_id), str(task.op.stream_id), str(task.op.task_id), f"{hit:.6f}",
           f"{(1 - hit) * 0.5:.6f}", task.op.name]
    if mode == "l2_tlb":
        out.append(f"{0.98 + 0.015 * cf:.6f}")
    return out
