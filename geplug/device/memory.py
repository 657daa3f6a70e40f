"""The memory plan of a compiled model: GE-style static reuse against the product's HBM.

Weights (and constants the device reads) stay resident. Activations, graph inputs and
outputs are planned by liveness over the task order: a block lives from the task writing it
to the last task reading it (graph outputs to the end of the step), every block rounded up
to ``MemoryCaps.alignment_bytes``; the activation peak is the largest sum of live blocks
(ideal reuse: GE's planner reuses a freed block for a later tensor). Workspace is the
product's ``system_workspace_bytes``. Capacity: ``MemoryCaps.hbm_gib`` of the SoC version.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from geplug.errors import CompileError
from geplug.products.schema import Product

__all__ = ["DeviceMemoryError", "MemoryPlan", "capacity_bytes", "plan_memory"]

_GIB = 1 << 30


@attrs.frozen(kw_only=True)
class MemoryPlan:
    """What the compiled model needs on the device (bytes)."""

    weights_bytes: int
    activation_peak_bytes: int
    workspace_bytes: int
    capacity_bytes: int | None
    """HBM of the SoC version (``None`` when the product declares none)."""
    soc_version: str = ""
    peak_tensors: tuple[tuple[str, int], ...] = ()
    """The largest tensors live at the activation peak (name, bytes), largest first."""

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.activation_peak_bytes + self.workspace_bytes

    @property
    def fits(self) -> bool:
        return self.capacity_bytes is None or self.total_bytes <= self.capacity_bytes

    def to_json(self) -> dict[str, object]:
        """The ``memory`` object of ``geplug compile --format json``."""
        return {
            "weights_bytes": self.weights_bytes,
            "activation_peak_bytes": self.activation_peak_bytes,
            "workspace_bytes": self.workspace_bytes,
            "total_bytes": self.total_bytes,
            "capacity_bytes": self.capacity_bytes,
            "soc_version": self.soc_version,
            "largest_live_tensors": [{"name": n, "bytes": b} for n, b in self.peak_tensors],
        }


class DeviceMemoryError(CompileError):
    """The compiled model does not fit in the device's HBM."""

    code = "207001"
    """ACL_ERROR_RT_MEMORY_ALLOCATION, the runtime's memory allocation failure code."""

    def __init__(self, message: str, *, plan: MemoryPlan) -> None:
        super().__init__(message, node="", details={"memory": plan.to_json()})
        self.plan = plan
        self.required_bytes = plan.total_bytes
        self.available_bytes = plan.capacity_bytes


def capacity_bytes(product: Product, soc_version: str) -> int | None:
    """HBM bytes of ``soc_version`` (the smallest declared when the SoC is not listed)."""
    table = product.memory.hbm_gib
    if not table:
        return None
    gib = table.get(soc_version)
    if gib is None:
        gib = min(table.values())
    return int(gib * _GIB)


def _align(n: int, a: int) -> int:
    return -(-max(n, 1) // a) * a if a > 1 else n


def plan_memory(
    order: Sequence[tuple[str, Sequence[str], Sequence[str]]],
    sizes: Mapping[str, int],
    *,
    resident: Mapping[str, int],
    graph_inputs: Sequence[str],
    graph_outputs: Sequence[str],
    product: Product,
    soc_version: str,
) -> MemoryPlan:
    """Plan ``order`` = (task, tensors read, tensors written) in execution order.

    ``sizes``: bytes of every planned tensor; ``resident``: weights and constants the tasks
    read (bytes); graph inputs live from the start, outputs to the end.
    """
    align = max(product.memory.alignment_bytes, 1)
    last_use: dict[str, int] = {}
    first: dict[str, int] = {}
    for i, (_, reads, writes) in enumerate(order):
        for t in writes:
            if t in sizes:
                first.setdefault(t, i)
                last_use.setdefault(t, i)
        for t in reads:
            if t in sizes:
                last_use[t] = i
    end = len(order)
    for t in graph_inputs:
        if t in sizes:
            first[t] = -1
            last_use.setdefault(t, -1)
    for t in graph_outputs:
        if t in sizes:
            last_use[t] = end
            first.setdefault(t, -1)
    frees: dict[int, list[str]] = {}
    allocs: dict[int, list[str]] = {}
    for t, i in first.items():
        allocs.setdefault(i, []).append(t)
        frees.setdefault(last_use.get(t, i), []).append(t)
    live: dict[str, int] = {}
    current = peak = 0
    peak_set: dict[str, int] = {}
    for i in range(-1, end + 1):
        for t in allocs.get(i, ()):
            live[t] = _align(sizes[t], align)
            current += live[t]
        if current > peak:
            peak, peak_set = current, dict(live)
        for t in frees.get(i, ()):
            current -= live.pop(t, 0)
    weights = sum(_align(b, align) for b in resident.values())
    top = tuple(sorted(peak_set.items(), key=lambda kv: -kv[1])[:5])
    return MemoryPlan(
        weights_bytes=int(weights), activation_peak_bytes=int(peak),
        workspace_bytes=int(product.memory.system_workspace_bytes),
        capacity_bytes=capacity_bytes(product, soc_version), soc_version=soc_version,
        peak_tensors=top,
    )


def check_fits(plan: MemoryPlan, model: str, product: Product) -> None:
    """Raise :class:`DeviceMemoryError` when ``plan`` exceeds the HBM capacity."""
    if plan.fits or plan.capacity_bytes is None:
        return
    tensors = ", ".join(f"{n!r} ({b / 2**20:.1f} MiB)" for n, b in plan.peak_tensors)
    raise DeviceMemoryError(
        f"model {model!r} needs {plan.total_bytes} bytes of device memory "
        f"({plan.total_bytes / _GIB:.2f} GiB: weights {plan.weights_bytes}, activation peak "
        f"{plan.activation_peak_bytes}, workspace {plan.workspace_bytes}) but "
        f"{plan.soc_version or product.name} has {plan.capacity_bytes} bytes "
        f"({plan.capacity_bytes / _GIB:.0f} GiB) [{DeviceMemoryError.code} "
        f"ACL_ERROR_RT_MEMORY_ALLOCATION]; largest tensors live at the peak: {tensors}. "
        "Reduce the batch size or sequence length, use a lower precision mode, or choose a "
        "SoC version with more HBM", plan=plan)
