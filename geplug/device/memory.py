"""The memory plan of a compiled model: GE-style static reuse against the product's HBM.

Weights (and constants the device reads) stay resident. Activations, graph inputs and
outputs are planned by liveness over the task order: a block lives from the task writing it
to the last task reading it (graph outputs to the end of the step), every block rounded up
to ``MemoryCaps.alignment_bytes``; the activation peak is the largest sum of live blocks
(ideal reuse: GE's planner reuses a freed block for a later tensor). Workspace is the
product's ``system_workspace_bytes``. Capacity: what a program can allocate on the SoC version,
``MemoryCaps.usable_gib`` where the product declares it (the HBM less what the driver and the
device's OS hold), else its ``hbm_gib``.
The liveness sweep runs over arrays (one cumulative sum of allocation and free events).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs
import numpy as np

from geplug.errors import CompileError
from geplug.products.schema import Product

__all__ = ["DeviceMemoryError", "Liveness", "MemoryBlock", "MemoryPlan", "capacity_bytes",
           "capacity_words", "hbm_bytes", "plan_memory"]

_GIB = 1 << 30
_SIZE_CAP = 1 << 44
"""Bytes a planned tensor counts for at most in the numpy sweep (16 TiB: beyond any HBM, and
sums of half a million such stay inside int64)."""


@attrs.frozen
class MemoryBlock:
    """One planned tensor: who writes it, its aligned bytes and its life in task indexes.

    ``first`` is the index of the task that writes it (-1: a graph input, live before the
    first task); ``last`` the index of the last task that reads it (``len(tasks)``: a graph
    output, live to the end of the step; ``len(tasks) + 1``: never freed). The plan allocates
    at ``first`` and frees after ``last``; the memory profiling records
    (``geplug.profiling.memory_records``) replay it.
    """

    tensor: str
    owner: str
    """The task that writes the tensor (a graph input: the input's name)."""
    nbytes: int
    first: int
    last: int


@attrs.frozen(eq=False)
class Liveness:
    """What the planner computed, kept by reference so a plan's per-tensor view costs
    nothing at compile: :meth:`blocks` builds it on demand (the profiling writers)."""

    order: Sequence[tuple[str, Sequence[str], Sequence[str]]]
    first: Mapping[str, int]
    last_use: Mapping[str, int]
    sizes: Mapping[str, int]
    resident: Mapping[str, int]
    align: int
    prefix: str = ""
    """Put before task names (a backend's op names: ``gradients/`` for a backward graph)."""

    def tasks(self) -> tuple[str, ...]:
        p = self.prefix
        return tuple(p + name for name, _, _ in self.order)

    def blocks(self) -> tuple[MemoryBlock, ...]:
        end = len(self.order)
        names = self.tasks()
        out = []
        for t, i in sorted(self.first.items(), key=lambda kv: kv[1]):
            last = self.last_use.get(t, i)
            out.append(MemoryBlock(t, names[i] if i >= 0 else t,
                                   _align(self.sizes[t], self.align), i,
                                   last if last >= i else end + 1))
        return tuple(out)

    def weights(self) -> tuple[tuple[str, int], ...]:
        return tuple((t, _align(b, self.align)) for t, b in self.resident.items())


@attrs.frozen(kw_only=True)
class MemoryPlan:
    """What the compiled model needs on the device (bytes)."""

    weights_bytes: int
    activation_peak_bytes: int
    workspace_bytes: int
    capacity_bytes: int | None
    """Device memory a program can allocate on the SoC version (:func:`capacity_bytes`;
    ``None`` when the product declares none)."""
    soc_version: str = ""
    hbm_bytes: int | None = None
    """The SoC version's installed HBM (:func:`hbm_bytes`); at least ``capacity_bytes``."""
    output_bytes: int = 0
    """Aligned bytes of the graph's outputs other than weights (held inputs it returns
    included): e.g. the activations a training forward returns for its backward."""
    input_bytes: int = 0
    """Aligned bytes of the held inputs (tensors the caller holds on the device for the
    whole graph: a torch graph's inputs)."""
    peak_tensors: tuple[tuple[str, int], ...] = ()
    """The largest tensors live at the activation peak (name, bytes), largest first."""
    liveness: Liveness | None = attrs.field(default=None, eq=False, repr=False)
    """The planner's per-tensor lives (see :attr:`tasks`, :attr:`blocks`, :attr:`resident`)."""

    @property
    def tasks(self) -> tuple[str, ...]:
        """The planned tasks in execution order (the indexes of :attr:`blocks`)."""
        return self.liveness.tasks() if self.liveness is not None else ()

    @property
    def blocks(self) -> tuple[MemoryBlock, ...]:
        """Every planned activation, input and output tensor, in allocation order."""
        return self.liveness.blocks() if self.liveness is not None else ()

    @property
    def resident(self) -> tuple[tuple[str, int], ...]:
        """Weights and constants held for the model's lifetime (name, aligned bytes); they
        sum to :attr:`weights_bytes`."""
        return self.liveness.weights() if self.liveness is not None else ()

    def with_task_prefix(self, prefix: str) -> MemoryPlan:
        """The plan with its tasks named as a backend names their ops (``gradients/`` before a
        backward graph's tasks); graph inputs and weights keep their names."""
        if not prefix or self.liveness is None:
            return self
        return attrs.evolve(self, liveness=attrs.evolve(self.liveness,
                                                        prefix=self.liveness.prefix + prefix))

    def block_bytes(self, tensor: str) -> int | None:
        """Aligned bytes of ``tensor``'s block in the plan (``None``: not planned, e.g. a
        weight)."""
        live = self.liveness
        if live is None or tensor not in live.sizes:
            return None
        return _align(live.sizes[tensor], live.align)

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
            "hbm_bytes": self.hbm_bytes,
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


def _soc(table: Mapping[str, float], soc_version: str) -> str:
    """The SoC of ``hbm_gib`` whose figures ``soc_version`` takes: itself when listed, else
    the one with the least HBM."""
    return soc_version if soc_version in table else min(table, key=table.__getitem__)


def hbm_bytes(product: Product, soc_version: str) -> int | None:
    """Installed HBM bytes of ``soc_version`` (the smallest declared when the SoC is not
    listed; ``None`` when the product declares none)."""
    table = product.memory.hbm_gib
    return int(table[_soc(table, soc_version)] * _GIB) if table else None


def capacity_bytes(product: Product, soc_version: str) -> int | None:
    """Bytes a program can allocate on ``soc_version``: ``MemoryCaps.usable_gib`` of the SoC
    where declared, else its whole HBM (:func:`hbm_bytes`)."""
    table = product.memory.hbm_gib
    if not table:
        return None
    soc = _soc(table, soc_version)
    return int(product.memory.usable_gib.get(soc, table[soc]) * _GIB)


def _align(n: int, a: int) -> int:
    return -(-max(n, 1) // a) * a if a > 1 else n


def _peak(first: Mapping[str, int], last_use: Mapping[str, int], sizes: Mapping[str, int],
          align: int, end: int) -> tuple[int, list[tuple[str, int]]]:
    """The activation peak and the blocks live at it (in allocation order), over arrays.

    Block ``t`` (aligned bytes) is allocated before step ``first[t]`` and freed after step
    ``last_use[t]`` (never, when that step comes before its allocation); the live bytes of
    every step are one cumulative sum of +size/-size events, the peak their first maximum.
    """
    names = list(first)
    if not names:
        return 0, []
    count = len(names)
    lo = np.fromiter(first.values(), np.int64, count)
    hi = np.fromiter((last_use.get(t, i) for t, i in first.items()), np.int64, count)
    hi = np.where(hi < lo, end + 1, hi)  # freed before it exists: live to the end
    # a size past int64 (a hostile shape) is capped: it exceeds every HBM either way and the
    # capacity check reports it, instead of an OverflowError here
    size = np.fromiter((min(sizes[t], _SIZE_CAP) for t in names), np.int64, count)
    if align > 1:
        size = -(-np.maximum(size, 1) // align) * align
    # steps -1 .. end+1 at offsets 0 .. end+2: +size at its first step, -size after its last
    delta = np.zeros(end + 4, np.int64)
    np.add.at(delta, lo + 1, size)
    np.add.at(delta, hi + 2, -size)
    level = np.cumsum(delta[:end + 2])
    at = int(np.argmax(level))
    peak = int(level[at])
    if peak <= 0:
        return 0, []
    step = at - 1
    # allocation order: by first step, then in the order the blocks were first seen
    alloc = np.argsort(lo, kind="stable")
    live = alloc[(lo[alloc] <= step) & (hi[alloc] >= step)]
    return peak, [(names[k], int(size[k])) for k in live.tolist()]


def plan_memory(
    order: Sequence[tuple[str, Sequence[str], Sequence[str]]],
    sizes: Mapping[str, int],
    *,
    resident: Mapping[str, int],
    graph_inputs: Sequence[str],
    graph_outputs: Sequence[str],
    product: Product,
    soc_version: str,
    held_inputs: Sequence[str] = (),
) -> MemoryPlan:
    """Plan ``order`` = (task, tensors read, tensors written) in execution order.

    ``sizes``: bytes of every planned tensor; ``resident``: weights and constants the tasks
    read (bytes); graph inputs live from the start to their last read, outputs to the end;
    ``held_inputs`` live from the start to the end (their caller holds them).
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
    for t in held_inputs:
        if t in sizes:
            first[t] = -1
            last_use[t] = end
    for t in graph_outputs:
        if t in sizes:
            last_use[t] = end
            first.setdefault(t, -1)
    peak, peak_set = _peak(first, last_use, sizes, align, end)
    weights = sum(_align(b, align) for b in resident.values())
    top = tuple(sorted(peak_set, key=lambda kv: -kv[1])[:5])
    return MemoryPlan(
        weights_bytes=int(weights), activation_peak_bytes=int(peak),
        workspace_bytes=int(product.memory.system_workspace_bytes),
        capacity_bytes=capacity_bytes(product, soc_version), soc_version=soc_version,
        hbm_bytes=hbm_bytes(product, soc_version),
        peak_tensors=top,
        liveness=Liveness(order, first, last_use, sizes, resident, align),
        output_bytes=sum(_align(sizes[t], align) for t in dict.fromkeys(graph_outputs)
                         if t in sizes),
        input_bytes=sum(_align(sizes[t], align) for t in dict.fromkeys(held_inputs)
                        if t in sizes),
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
        f"({capacity_words(plan.capacity_bytes, plan.hbm_bytes)}) [{DeviceMemoryError.code} "
        f"ACL_ERROR_RT_MEMORY_ALLOCATION]; largest tensors live at the peak: {tensors}. "
        "Reduce the batch size or sequence length, use a lower precision mode, or choose a "
        "SoC version with more HBM", plan=plan)


def capacity_words(capacity: int, hbm: int | None) -> str:
    """``"32 GiB"``, or ``"60.96 GiB usable of its 64 GiB HBM"`` where the two differ."""
    if hbm is None or hbm == capacity:
        return f"{capacity / _GIB:.0f} GiB"
    return f"{capacity / _GIB:.2f} GiB usable of its {hbm / _GIB:.0f} GiB HBM"
