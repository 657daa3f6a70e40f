"""Device memory across a torch job's graphs: what a real card holds while it trains.

The core plans each compiled graph's own memory (its activation peak under GE's static
reuse and its workspace: docs/device-model.md, "Memory"). A training job holds more than one
graph's plan, and that is what runs out first on a real card: the **parameters**, their
**gradients** (``.grad``: from the backward that writes them until ``zero_grad`` frees them),
the **optimizer states** (Adam's two moments, twice the parameters, from the first
``optimizer.step()``) and the **activations a forward graph saves for its backward** (the
forward's outputs, held until that backward has run). :class:`DeviceMemory` keeps them as the
job's real tensors say (their dtype and size; a tensor counted once however many graphs read
it) and checks, before every graph runs and after every optimizer step, that what is held and
the running graph's own activation peak and workspace fit in the SoC's usable device memory
(:func:`geplug.device.memory.capacity_bytes`). When they do not, the run raises
:class:`NpuOutOfMemoryError` where the real card would fail to allocate: before the graph's
tasks run, or out of ``optimizer.step()`` when its first states do not fit.

Counted: tensors the compiled graphs see (their parameters, with the gradients and optimizer
states of those parameters) and the graphs' own plans. Not counted: tensors eager code keeps on
the device outside compiled graphs, DDP's gradient buckets, the caching allocator's
fragmentation (its "reserved" beyond "allocated").
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import attrs

from geplug.device.memory import capacity_bytes, capacity_words, hbm_bytes
from geplug.errors import GeplugError

if TYPE_CHECKING:
    from geplug.device.memory import MemoryPlan
    from geplug.products.schema import Product

__all__ = ["DeviceMemory", "MemoryUse", "NpuOutOfMemoryError", "out_of_memory_error"]

_GIB = 1 << 30
_MIB = 1 << 20


@attrs.frozen
class MemoryUse:
    """What the device holds at one moment, bytes, by kind."""

    parameters: int = 0
    gradients: int = 0
    optimizer_states: int = 0
    saved_activations: int = 0
    """Outputs of forward graphs whose backward has not run yet."""
    graph: int = 0
    """The running graph's own activation peak and workspace (0 between graphs)."""
    where: str = ""
    """``graph_1 forward``, ``graph_1 backward``, ``optimizer step``, ..."""
    iteration: int = -1

    @property
    def held(self) -> int:
        """Everything but the running graph's own plan (what is already allocated)."""
        return (self.parameters + self.gradients + self.optimizer_states
                + self.saved_activations)

    @property
    def total(self) -> int:
        return self.held + self.graph

    def to_json(self) -> dict[str, object]:
        return {"total_bytes": self.total, "parameters_bytes": self.parameters,
                "gradients_bytes": self.gradients,
                "optimizer_state_bytes": self.optimizer_states,
                "saved_activation_bytes": self.saved_activations,
                "graph_bytes": self.graph, "where": self.where, "iteration": self.iteration}


class NpuOutOfMemoryError(GeplugError, RuntimeError):
    """A training step needs more device memory than the SoC has (torch_npu's
    ``NPU out of memory``): raised where the real card fails to allocate. A subclass of
    ``torch.OutOfMemoryError`` is raised (:func:`out_of_memory_error`), so code that catches
    the real stack's error catches this one."""

    code = "207001"
    """ACL_ERROR_RT_MEMORY_ALLOCATION, the runtime's memory allocation failure code."""

    def __init__(self, message: str, *, use: MemoryUse, capacity_bytes: int,
                 requested_bytes: int) -> None:
        super().__init__(message)
        self.use = use
        self.required_bytes = use.total
        self.available_bytes = capacity_bytes
        self.requested_bytes = requested_bytes


_ERROR_CLASS: list[type[NpuOutOfMemoryError]] = []


def out_of_memory_error(message: str, **kwargs: Any) -> NpuOutOfMemoryError:
    """An :class:`NpuOutOfMemoryError` that is also a ``torch.OutOfMemoryError`` (made once:
    torch is imported only by a job that runs)."""
    if not _ERROR_CLASS:
        import torch

        base = getattr(torch, "OutOfMemoryError", RuntimeError)
        _ERROR_CLASS.append(type("NpuOutOfMemoryError", (NpuOutOfMemoryError, base), {
            "__module__": __name__, "__doc__": NpuOutOfMemoryError.__doc__}))
    return _ERROR_CLASS[0](message, **kwargs)


def _nbytes(tensor: Any) -> int:
    return int(tensor.numel()) * int(tensor.element_size())


class DeviceMemory:
    """The device memory of one torch runtime (see the module docstring)."""

    def __init__(self, product: Product, soc_version: str, device_id: int = 0) -> None:
        self.product = product
        self.soc_version = soc_version
        self.device_id = device_id
        self.capacity_bytes = capacity_bytes(product, soc_version)
        self.hbm_bytes = hbm_bytes(product, soc_version)
        self._parameters: dict[int, tuple[weakref.ref[Any], int]] = {}
        """id -> (the parameter, its bytes): every parameter a compiled graph has read."""
        self._states: weakref.WeakKeyDictionary[Any, tuple[int, int]] = (
            weakref.WeakKeyDictionary())
        """optimizer -> (parameters it holds state for, bytes of those states over this
        runtime's parameters): recounted only when the first number changes (an optimizer
        makes every state of a parameter at its first update)."""
        self._seen: dict[int, tuple[int, ...]] = {}
        """model id -> the ids of the parameters its last forward read (tracked already)."""
        self._saved: dict[int, int] = {}
        """model id -> bytes its last forward left for its backward."""
        self.peak = MemoryUse()
        """The largest :class:`MemoryUse` seen (its ``total``)."""

    # -- what is held ----------------------------------------------------------------------

    def track_parameters(self, tensors: Any) -> None:
        """Count ``tensors`` (a forward graph's parameter inputs: the module's own
        ``nn.Parameter`` objects) as parameters, once each (by storage: a parameter two
        graphs read is one tensor)."""
        for t in tensors:
            key = t.untyped_storage().data_ptr()
            known = self._parameters.get(key)
            if known is None or known[0]() is None:
                self._parameters[key] = (weakref.ref(t), _nbytes(t))

    def _live_parameters(self) -> list[tuple[Any, int]]:
        out = []
        for key, (ref, size) in list(self._parameters.items()):
            t = ref()
            if t is None:
                del self._parameters[key]
                self._seen.clear()  # an id may now name another tensor: look again
            else:
                out.append((t, size))
        return out

    def use(self, *, where: str, iteration: int, graph: int = 0,
            exclude_saved: int | None = None) -> MemoryUse:
        """What the device holds now (``graph``: the running graph's own bytes; the saved
        activations of model ``exclude_saved`` are left out: the running graph's plan holds
        them). A gradient has its parameter's size (torch's dense ``.grad``)."""
        params = self._live_parameters()
        grads = 0
        for p, size in params:
            if p.grad is not None:
                grads += size
        saved = sum(b for m, b in self._saved.items() if m != exclude_saved)
        return MemoryUse(parameters=sum(s for _, s in params), gradients=grads,
                         optimizer_states=sum(b for _, b in self._states.values()),
                         saved_activations=saved, graph=graph, where=where,
                         iteration=iteration)

    # -- checks ----------------------------------------------------------------------------

    def before_graph(self, model_id: int, model_name: str, phase: str, plan: MemoryPlan,
                     parameters: Any, iteration: int) -> None:
        """Before a graph runs: its parameters are held (read from a forward or inference
        graph's inputs; a backward's are the same tensors), and what is held plus the graph's
        activation peak and workspace must fit (:class:`NpuOutOfMemoryError` otherwise)."""
        if phase != "backward":
            ids = tuple(map(id, parameters))
            if self._seen.get(model_id) != ids:  # else: tracked by this model's last run
                self.track_parameters(parameters)
                self._seen[model_id] = ids
        graph = plan.activation_peak_bytes + plan.workspace_bytes
        # a forward replaces this model's last saved activations, a backward reads them:
        # either way the graph's own plan holds them
        use = self.use(where=f"{model_name} {phase}", iteration=iteration, graph=graph,
                       exclude_saved=model_id)
        self._check(use, requested=graph)

    def after_graph(self, model_id: int, phase: str, plan: MemoryPlan) -> None:
        """After a graph ran: a forward's outputs stay for its backward; a backward frees
        them."""
        if phase == "forward":
            self._saved[model_id] = plan.output_bytes
        elif phase == "backward":
            self._saved.pop(model_id, None)

    def after_optimizer_step(self, optimizer: Any, iteration: int) -> None:
        """After ``optimizer.step()``: its states over this runtime's parameters are held
        from now on, and with everything else held they must fit."""
        state_of = getattr(optimizer, "state", {})
        known = self._states.get(optimizer)
        if known is not None and known[0] == len(state_of):
            # no parameter got its first state: the same bytes as before
            self._check(self.use(where="optimizer step", iteration=iteration), requested=0)
            return
        params = {id(p) for p, _ in self._live_parameters()}
        # (the optimizer's keys are the module's parameters: the objects tracked)
        before = known[1] if known is not None else 0
        states = 0
        seen: set[int] = set()
        for p, state in state_of.items():
            if id(p) not in params or not isinstance(state, dict):
                continue
            for v in state.values():
                if hasattr(v, "element_size") and id(v) not in seen and v.dim() > 0:
                    seen.add(id(v))
                    states += _nbytes(v)
        if not states and known is None:
            return  # an optimizer over no parameter this runtime knows (yet)
        self._states[optimizer] = (len(state_of), states)
        use = self.use(where="optimizer step", iteration=iteration)
        self._check(use, requested=max(states - before, 0))

    def _check(self, use: MemoryUse, requested: int) -> None:
        if use.total > self.peak.total:
            self.peak = use
        cap = self.capacity_bytes
        if cap is None or use.total <= cap:
            return
        raise out_of_memory_error(self._message(use, requested, cap), use=use,
                                  capacity_bytes=cap, requested_bytes=requested)

    def _message(self, use: MemoryUse, requested: int, cap: int) -> str:
        free = max(cap - use.held, 0)
        soc = self.soc_version or self.product.name
        return (
            f"NPU out of memory. Tried to allocate {_size(requested)} (NPU {self.device_id}; "
            f"{cap / _GIB:.2f} GiB total capacity; {use.held / _GIB:.2f} GiB already "
            f"allocated; {_size(free)} free) [{NpuOutOfMemoryError.code} "
            f"ACL_ERROR_RT_MEMORY_ALLOCATION]. geplug: at the {use.where} (iteration "
            f"{use.iteration}) the device needs {use.total} bytes ({use.total / _GIB:.2f} GiB): "
            f"parameters {use.parameters}, gradients {use.gradients}, optimizer states "
            f"{use.optimizer_states}, activations saved for backward {use.saved_activations}, "
            f"the graph's own activation peak and workspace {use.graph}; {soc} has {cap} "
            f"bytes ({capacity_words(cap, self.hbm_bytes)}). Reduce the batch size or "
            "sequence length, recompute activations (torch.utils.checkpoint), keep fewer "
            "optimizer states (shard them across ranks: ZeRO or a distributed optimizer), "
            "train in bfloat16, or choose a SoC version with more memory")

    # -- reports ---------------------------------------------------------------------------

    def allocated_bytes(self, iteration: int = -1) -> int:
        """What is held now, between graphs (``torch.npu.memory_allocated()``'s reading)."""
        return self.use(where="now", iteration=iteration).total

    def to_json(self) -> dict[str, object]:
        """``report()["memory"]`` of the backend: capacity and the peak, by kind."""
        return {"capacity_bytes": self.capacity_bytes, "hbm_bytes": self.hbm_bytes,
                "soc_version": self.soc_version, "peak_bytes": self.peak.total,
                "peak": self.peak.to_json()}


def _size(n: int) -> str:
    """torch's allocator wording: MiB below a GiB, else GiB, two decimals."""
    return f"{n / _GIB:.2f} GiB" if n >= _GIB else f"{n / _MIB:.2f} MiB"
