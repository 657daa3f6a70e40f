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
    from geplug.products.schema import Product

__all__ = ["DeviceMemory", "MemoryUse", "NpuOutOfMemoryError", "out_of_memory_error"]

_GIB = 1 << 30
_MIB = 1 << 20


@attrs.frozen
class MemoryUse:
    """What the device holds at one moment, bytes, by kind."""

    parameters: int = 0
    """Parameters and buffers."""
    gradients: int = 0
    optimizer_states: int = 0
    saved_activations: int = 0
    """Tensors forward and inference graphs returned that are still alive: the activations
    saved for backward (until it has run), a loss or logits the caller holds."""
    graph: int = 0
    """The running graph's own memory plan: its inputs, activation peak and workspace (0
    between graphs)."""
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

    def __reduce__(self) -> tuple[Any, ...]:
        # rebuilt through out_of_memory_error: the raised class is made at run time
        return (_rebuild, (str(self), self.use, self.available_bytes, self.requested_bytes))


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


def _rebuild(message: str, use: MemoryUse, capacity: int, requested: int
             ) -> NpuOutOfMemoryError:
    return out_of_memory_error(message, use=use, capacity_bytes=capacity,
                               requested_bytes=requested)


def _nbytes(tensor: Any) -> int:
    return int(tensor.numel()) * int(tensor.element_size())


def _storage(tensor: Any) -> int:
    """The address of ``tensor``'s storage (views of one tensor share it)."""
    return int(tensor.untyped_storage().data_ptr())


def _slot(tensor: Any) -> tuple[int, int, int]:
    """Where ``tensor``'s elements are: tensors that are one (a tied parameter) share it;
    parameters carved out of one flat buffer do not."""
    return (_storage(tensor), int(tensor.storage_offset()), int(tensor.numel()))


class _StateSummary:
    """The tracked module state as one check reads it: the tensors, their slots and
    storages, and their bytes (each slot once)."""

    __slots__ = ("bytes", "slots", "storages", "tensors")

    def __init__(self, tensors: list[Any]) -> None:
        self.tensors = tensors
        self.slots: set[tuple[int, int, int]] = set()
        self.storages: set[int] = set()
        self.bytes = 0
        for t in tensors:
            slot = _slot(t)
            if slot not in self.slots:
                self.slots.add(slot)
                self.bytes += _nbytes(t)
            self.storages.add(slot[0])


class DeviceMemory:
    """The device memory of one torch runtime (see the module docstring)."""

    def __init__(self, product: Product, soc_version: str, device_id: int = 0) -> None:
        self.product = product
        self.soc_version = soc_version
        self.device_id = device_id
        self.capacity_bytes = capacity_bytes(product, soc_version)
        self.hbm_bytes = hbm_bytes(product, soc_version)
        self._state: dict[int, weakref.ref[Any]] = {}
        """id -> a parameter or buffer a compiled graph has read."""
        self._summary: _StateSummary | None = None
        """The state as checks read it, until the tracked set changes (a tensor tracked or
        freed; a module moved to another dtype is recompiled, so its next run tracks it)."""
        self._seen: dict[int, tuple[int, ...]] = {}
        """model id -> the ids of the state tensors its last forward read (tracked)."""
        self._states: weakref.WeakKeyDictionary[Any, tuple[int, int]] = (
            weakref.WeakKeyDictionary())
        """optimizer -> (parameters it holds state for, bytes of those states over this
        runtime's parameters): recounted only when the first number changes (an optimizer
        makes every state of a parameter at its first update)."""
        self._kept: dict[int, tuple[int, weakref.ref[Any]]] = {}
        """storage address -> (bytes, a weak reference to the storage that drops the entry
        when the storage is freed): the storages of what forward and inference graphs
        returned (the activations saved for backward among them, views and detached
        aliases alike), each until the storage itself is freed (autograd frees the saved
        ones after the backward; a dropped loss frees its graph's)."""
        self.peak = MemoryUse()
        """The largest :class:`MemoryUse` that fitted (its ``total``)."""

    # -- what is held ----------------------------------------------------------------------

    def track_state(self, tensors: Any) -> None:
        """Count ``tensors`` (a forward graph's parameters and buffers: the module's own
        objects) as module state, each object once."""
        for t in tensors:
            known = self._state.get(id(t))
            if known is None or known() is not t:
                self._state[id(t)] = weakref.ref(t, self._forget)
                self._summary = None

    def _forget(self, ref: weakref.ref[Any]) -> None:
        """A tracked tensor was freed."""
        for key, known in list(self._state.items()):
            if known is ref:
                del self._state[key]
        self._summary = None
        self._seen.clear()  # an id may now name another tensor: look again

    def _state_summary(self) -> _StateSummary:
        summary = self._summary
        if summary is None:
            tensors = [t for t in (r() for r in self._state.values()) if t is not None]
            summary = self._summary = _StateSummary(tensors)
        return summary

    def use(self, *, where: str, iteration: int, graph: int = 0,
            inside: frozenset[int] = frozenset()) -> MemoryUse:
        """What the device holds now; ``graph``: the running graph's own bytes and
        ``inside`` the storages of its held inputs (its plan counts them)."""
        summary = self._state_summary()
        grads = 0
        grad_ids: set[int] = set()
        for t in summary.tensors:
            g = t.grad
            if g is not None and id(g) not in grad_ids:
                grad_ids.add(id(g))
                grads += _nbytes(g)
        saved = sum(b for key, (b, _) in self._kept.items() if key not in inside)
        return MemoryUse(parameters=summary.bytes, gradients=grads,
                         optimizer_states=sum(b for _, b in self._states.values()),
                         saved_activations=saved, graph=graph, where=where,
                         iteration=iteration)

    def _keep(self, tensor: Any) -> None:
        """Hold ``tensor``'s storage until it is freed (its bytes: what torch holds, the
        graph's output dtype at its boundary)."""
        storage = tensor.untyped_storage()
        key = int(storage.data_ptr())
        if key in self._kept:
            return
        kept = self._kept

        def freed(ref: weakref.ref[Any], key: int = key) -> None:
            entry = kept.get(key)
            if entry is not None and entry[1] is ref:
                del kept[key]

        # torch keeps a storage's Python object as long as the storage: the callback runs
        # when the last tensor on it is gone, whichever objects autograd made for it
        kept[key] = (int(storage.nbytes()), weakref.ref(storage, freed))

    # -- checks ----------------------------------------------------------------------------

    def before_graph(self, model_id: int, model_name: str, graph: Any, args: Any,
                     iteration: int) -> None:
        """Before a graph runs (``graph``: its :class:`~geplug_torch.graph.CompiledGraph`,
        ``args`` its inputs): a forward's module state is held from now on (a backward's
        are the same tensors), and what is held plus the graph's activation peak (its held
        inputs included) and workspace must fit (:class:`NpuOutOfMemoryError` otherwise)."""
        import torch

        if graph.phase != "backward":
            module_state = [args[k] for k in graph.parameters if k < len(args)]
            ids = tuple(map(id, module_state))
            if self._seen.get(model_id) != ids:  # else: tracked by this model's last run
                self.track_state(module_state)
                self._seen[model_id] = ids
        plan = graph.device.memory
        need = plan.activation_peak_bytes + plan.workspace_bytes
        state = self._state_summary()
        inside: set[int] = set()
        for k, size in zip(graph.held, graph.held_sizes, strict=True):
            t = args[k] if k < len(args) else None
            if not isinstance(t, torch.Tensor):
                continue
            where = _storage(t)
            if where in inside or (where in state.storages and _slot(t) in state.slots):
                # a view of a parameter or buffer (a backward's saved transposed weight), or
                # of an input already counted (a saved tensor and its detached alias): held
                # for the graph's whole run, its memory counted once
                need -= size
            else:
                inside.add(where)  # kept by an earlier graph: this plan counts it
        use = self.use(where=f"{model_name} {graph.phase}", iteration=iteration, graph=need,
                       inside=frozenset(inside))
        self._check(use, requested=need)

    def after_graph(self, graph: Any, args: Any, out: Any) -> None:
        """After a forward or inference graph ran: the tensors it made and returned (the
        activations saved for backward among them) are held until they are freed; module
        state and the caller's own inputs it returns (a batch saved for backward) are not
        what it made."""
        import torch

        if graph.phase == "backward":
            return  # its outputs are the gradients (.grad) or freed at once
        values = out if isinstance(out, (list, tuple)) else (out,)
        theirs = set(self._state_summary().storages)
        theirs.update(_storage(args[k]) for k in graph.held
                      if k < len(args) and isinstance(args[k], torch.Tensor))
        for value in values:
            if isinstance(value, torch.Tensor) and _storage(value) not in theirs:
                self._keep(value)

    def after_optimizer_step(self, optimizer: Any, iteration: int) -> None:
        """After ``optimizer.step()``: its states over this runtime's parameters are held
        from now on, and with everything else held they must fit (the step has run by
        then: the states exist; a real card fails while making them)."""
        state_of = getattr(optimizer, "state", {})
        known = self._states.get(optimizer)
        before = known[1] if known is not None else 0
        if known is None or known[0] != len(state_of):
            params = {id(p) for p in self._state_summary().tensors}
            # (the optimizer's keys are the module's parameters: the objects tracked)
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
        now = self._states[optimizer][1]
        use = self.use(where="optimizer step", iteration=iteration)
        self._check(use, requested=max(now - before, 0))

    def _check(self, use: MemoryUse, requested: int) -> None:
        cap = self.capacity_bytes
        if cap is None or use.total <= cap:
            if use.total > self.peak.total:
                self.peak = use
            return
        raise out_of_memory_error(self._message(use, requested, cap), use=use,
                                  capacity_bytes=cap, requested_bytes=requested)

    def _message(self, use: MemoryUse, requested: int, cap: int) -> str:
        before = use.total - requested  # what was allocated when the request came
        free = max(cap - before, 0)
        soc = self.soc_version or self.product.name
        return (
            f"NPU out of memory. Tried to allocate {_size(requested)} (NPU {self.device_id}; "
            f"{cap / _GIB:.2f} GiB total capacity; {before / _GIB:.2f} GiB already "
            f"allocated; {_size(free)} free) [{NpuOutOfMemoryError.code} "
            f"ACL_ERROR_RT_MEMORY_ALLOCATION]. geplug: at the {use.where} (iteration "
            f"{use.iteration}) the device needs {use.total} bytes ({use.total / _GIB:.2f} GiB): "
            f"parameters and buffers {use.parameters}, gradients {use.gradients}, optimizer "
            f"states {use.optimizer_states}, activations kept for backward "
            f"{use.saved_activations}, the graph's own inputs, activation peak and workspace "
            f"{use.graph}; {soc} has {cap} bytes ({capacity_words(cap, self.hbm_bytes)}). "
            "Reduce the batch size or sequence length, recompute activations "
            "(torch.utils.checkpoint), keep fewer optimizer states (shard them across ranks: "
            "ZeRO or a distributed optimizer), train in bfloat16, or choose a SoC version "
            "with more memory")

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
