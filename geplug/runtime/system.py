"""A running system: one product, one resolved configuration, one backend runtime.

Made by :func:`geplug.initialize_system`; the backend compiles models through it and emits
dump and profiling events through it, so the built-in writers and users' plugins see them.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from geplug.backend import COMPILED_MEMBERS, CompiledModel, missing_members
from geplug.errors import BackendError

if TYPE_CHECKING:
    from geplug.config.resolved import ResolvedConfig
    from geplug.events import DumpEvent, ProfileEvent
    from geplug.plugin.manager import PluginManager
    from geplug.products.schema import Product

__all__ = ["DEFER_MAX_S", "DEFER_MAX_STEPS", "DeferredProfile", "System"]

_ids = itertools.count(1)

DEFER_MAX_STEPS = 256
"""At most this many deferred step records wait before they are dispatched together."""
DEFER_MAX_S = 0.5
"""... and the queue is dispatched when a step is queued this long (seconds of wall time)
after the oldest waiting one (checked every eighth step): slow steps gain nothing by
waiting. A queue that stops growing waits for the next profile event, a reader
(``geplug.profiling.plugin.session_for``) or shutdown; there is no timer thread."""


class DeferredProfile(Protocol):
    """What :meth:`System.defer_profile` queues records for: a backend's step emitter."""

    def deferred_events(self, records: Sequence[Any]) -> Iterable[ProfileEvent]:
        """The profile events of consecutive ``records`` (queued one after the other by
        this source), in order."""


def _compiled_problem(compiled: Any) -> str:
    """What is wrong with a ``geplug_compile`` result ("" when it is a compiled model)."""
    missing = missing_members(compiled, COMPILED_MEMBERS)
    if missing:
        return (f"{type(compiled).__name__}, which lacks {', '.join(missing)} of "
                "geplug.backend.CompiledModel")
    return ""


class System:
    """The state between ``initialize_system`` and ``shutdown_system``.

    Attributes: ``product`` (the declaration), ``config`` (the :class:`ResolvedConfig`),
    ``manager`` (the plugin manager whose hooks receive events), ``rank`` (rank information),
    ``runtime`` (what the backend returned from ``geplug_init_system``), ``backend`` (its
    plugin name), ``id`` (unique in the process).
    """

    def __init__(
        self,
        *,
        product: Product,
        config: ResolvedConfig,
        manager: PluginManager,
        rank: Any = None,
    ) -> None:
        self.id = next(_ids)
        self.product = product
        self.config = config
        self.manager = manager
        self.rank = rank
        self.runtime: Any = None
        self.backend = ""
        self.closed = False
        self.pass_reasons: dict[str, str] = {}
        self.compiled: list[Any] = []
        """Every model compiled on this system (the unmatched-names check reads them)."""
        self._model_ids = itertools.count(1)
        self._task_ids = itertools.count(1)
        self._lock = threading.Lock()
        self._deferred: list[tuple[DeferredProfile, Any]] = []
        """Step records waiting for :meth:`flush_profile`, in emission order."""
        self._deferred_since = 0.0
        self._flush_lock = threading.RLock()

    @property
    def device_id(self) -> int:
        """The device this system runs on (rank table > ASCEND_DEVICE_ID > DEVICE_ID > 0)."""
        return self.config.device_id

    @property
    def profiling_enabled(self) -> bool:
        """Whether profiling events should be emitted."""
        return bool(self.config.config.profiling_mode)

    def pass_reason(self, backend: str, reason: str) -> None:
        """Record why ``backend`` declined to serve this system (shown if none serves it)."""
        self.pass_reasons[backend] = reason

    def next_model_id(self) -> int:
        """A fresh model id (graph id) for a compiled model of this system."""
        with self._lock:
            return next(self._model_ids)

    def next_task_id(self) -> int:
        """A fresh, monotonically growing task id (dump file names, profiling rows)."""
        with self._lock:
            return next(self._task_ids)

    def compile(self, model: Any, **options: Any) -> CompiledModel:
        """Compile ``model`` for this product (what the backend takes: for the simulator a
        path or an ``onnx.ModelProto``); returns a :class:`geplug.backend.CompiledModel`.

        A ``geplug_compile`` implementation may take the model; otherwise the runtime's own
        ``compile`` does. A result lacking a member of the contract is a
        :class:`BackendError` naming the backend and the members.
        """
        self._check_open()
        who = "a geplug_compile plugin"
        if self.manager.has_wrapper("geplug_compile"):  # pluggy's relay honours wrappers
            compiled = self.manager.hook.geplug_compile(system=self, model=model,
                                                        options=options)
        else:
            compiled, plugin = self.manager.call_first(
                "geplug_compile", _compiled_problem, system=self, model=model,
                options=options)
            who = f"plugin {plugin!r}"
        if compiled is None:
            if self.runtime is None or not hasattr(self.runtime, "compile"):
                raise BackendError(
                    f"no backend can compile {model!r} for {self.product.name!r}: the runtime "
                    f"of backend {self.backend!r} has no compile(); install geplug-simulator"
                )
            compiled = self.runtime.compile(model, **options)
            who = f"backend {self.backend!r}"
        missing = missing_members(compiled, COMPILED_MEMBERS)
        if missing:
            raise BackendError(
                f"{who} returned {type(compiled).__name__} from compile, which lacks "
                f"{', '.join(missing)} of geplug.backend.CompiledModel; fix or disable the "
                "plugin (GEPLUG_DISABLE_PLUGINS)", reasons={self.backend or who: "bad result"})
        self.compiled.append(compiled)
        return compiled

    def emit_dump(self, event: DumpEvent) -> list[Any]:
        """Hand ``event`` to every ``geplug_dump`` implementation; returns their non-None
        results (the built-in writers return the paths they wrote)."""
        if self.closed:  # a late event after shutdown: every writer has already closed
            return []
        return [r for r in self.manager.call_each("geplug_dump", event=event) if r is not None]

    def emit_profile(self, event: ProfileEvent) -> None:
        """Hand ``event`` to every ``geplug_profile`` implementation (profiling on only),
        after any deferred step records (:meth:`defer_profile`), so every collector sees
        the events in the order they were emitted."""
        if self.profiling_enabled and not self.closed:
            if self._deferred:
                self.flush_profile()
            self.manager.call_each("geplug_profile", event=event)

    def defer_profile(self, source: DeferredProfile, record: Any) -> None:
        """Queue a step's profiling record (profiling on): ``source.deferred_events`` turns
        it into events later, in order, together with its neighbours.

        Why: right after a step's kernels ran on the host CPU, the caches hold the kernels'
        data, and dispatching a step's events then costs several times what it costs among
        other steps' events (measured: ~10x on MobileNetV2). A backend sends its whole-step
        records here (only when no third-party plugin implements ``geplug_profile``, so
        nobody outside geplug can tell when they arrive); they are dispatched when
        :data:`DEFER_MAX_STEPS` wait or a step is queued :data:`DEFER_MAX_S` after the
        oldest (checked every eighth step), before any other profile event, when a reader
        asks (:meth:`flush_profile`) and at shutdown.
        """
        if self.closed:
            return
        with self._flush_lock:  # never into a queue another thread is dispatching
            queue = self._deferred
            queue.append((source, record))
            n = len(queue)
        if n == 1:
            self._deferred_since = time.monotonic()
        elif n >= DEFER_MAX_STEPS or (
                n & 7 == 0 and time.monotonic() - self._deferred_since >= DEFER_MAX_S):
            self.flush_profile()

    def flush_profile(self) -> None:
        """Dispatch every deferred step record now (see :meth:`defer_profile`).

        Each run of one source's consecutive records goes in one call. When a run fails (a
        collector raises, e.g. a storage warning turned into an error, or Ctrl-C), the
        records after it go back to the queue before the exception propagates: only the
        failing run is lost, as only the failing step was when steps were dispatched one by
        one. A source whose ``deferred_events`` raises is a :class:`BackendError` naming
        it."""
        with self._flush_lock:
            queue, self._deferred = self._deferred, []
            call_each = self.manager.call_each
            i, n = 0, len(queue)
            while i < n:  # each run of one source's records in one call (vectorised)
                source = queue[i][0]
                j = i + 1
                while j < n and queue[j][0] is source:
                    j += 1
                try:
                    try:
                        events = list(source.deferred_events([r for _, r in queue[i:j]]))
                    except Exception as exc:
                        where = f"{type(source).__module__}.{type(source).__qualname__}"
                        raise BackendError(
                            f"profiling: {where} failed to give the events of {j - i} queued "
                            f"step(s): {type(exc).__name__}: {exc}; those steps are missing "
                            "from the profile, the others were kept. Fix or disable the "
                            "backend plugin (GEPLUG_DISABLE_PLUGINS)") from exc
                    for event in events:
                        call_each("geplug_profile", event=event)
                except BaseException:
                    self._deferred[:0] = queue[j:]  # the later steps are not lost
                    raise
                i = j

    def shutdown(self) -> None:
        """Close the runtime and let every plugin flush; idempotent."""
        if self.closed:
            return
        errors: list[BaseException] = []
        for _ in range(DEFER_MAX_STEPS):  # the deferred step records first; a failing
            try:                           # run loses itself only, the rest still goes
                self.flush_profile()
                break
            except BaseException as exc:  # Ctrl-C too: the collectors must still close
                errors.append(exc)
                if not self._deferred:
                    break
        self.closed = True
        if self.runtime is not None and hasattr(self.runtime, "close"):
            try:
                self.runtime.close()
            except Exception as exc:
                errors.append(exc)
        self._warn_unmatched()
        errors.extend(self.manager.call_all("geplug_shutdown_system", system=self))
        if self in self.manager.open_systems:
            self.manager.open_systems.remove(self)
        from geplug.runtime import api

        api._forget(self)
        if errors:
            raise errors[0]

    def _warn_unmatched(self) -> None:
        """Warn about op_precision_mode / modify_mixlist names no compiled op had."""
        from geplug.precision.unmatched import warn_unmatched

        decisions = [d for m in self.compiled for d in m.decisions]
        self.compiled.clear()
        warn_unmatched(self.config, self.product, {d.op_type for d in decisions},
                       {d.node for d in decisions})

    def _check_open(self) -> None:
        if self.closed:
            from geplug.errors import NotInitializedError

            raise NotInitializedError(
                f"system {self.id} for {self.product.name!r} was shut down; call "
                "geplug.initialize_system() again"
            )

    def __enter__(self) -> System:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<System {self.id} {self.product.name} backend={self.backend!r} {state}>"
