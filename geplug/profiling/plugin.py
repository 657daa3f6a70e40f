"""Built-in profiling writer plugin (registered before any entry point).

:class:`ProfilingPlugin`, instantiated once per plugin manager, receives ``geplug_profile``
events (only while ``system.profiling_enabled``), keeps one
:class:`~geplug.profiling.session.ProfilingSession` per system (keyed by ``system.id``) on
the instance and finishes it in ``geplug_shutdown_system``: after that every file it wrote
is complete.
"""

from __future__ import annotations

import collections
import threading
import warnings
import weakref
from typing import TYPE_CHECKING, Any

from geplug.hookspecs import hookimpl

if TYPE_CHECKING:
    from geplug.events import ProfileEvent
    from geplug.profiling.session import ProfilingSession
    from geplug.runtime.system import System

__all__ = ["ProfilingPlugin", "session_for"]

_instances: weakref.WeakSet[ProfilingPlugin] = weakref.WeakSet()
"""Every live plugin instance: only for the read-only ``_sessions`` view below (debugging and
tests); the state itself lives on each instance."""


class ProfilingPlugin:
    """The built-in profiling collectors as a plugin object: one per plugin manager."""

    GEPLUG_PLUGIN_API = 1

    def __init__(self) -> None:
        self.sessions: dict[int, ProfilingSession | None] = {}
        """system.id -> its session (``None``: collection refused, e.g. the disk was full)."""
        self.pending: dict[int, list[ProfileEvent]] = {}
        """system.id -> graph events seen before its first step (no ``PROF_*`` directory)."""
        self._lock = threading.Lock()
        _instances.add(self)

    def session_for(self, system: System) -> ProfilingSession | None:
        """The session of ``system``, started on first use (``None`` when nothing is
        collected). A closed system never starts one: a late event after shutdown must not
        create a new ``PROF_*`` directory that nobody closes."""
        if system.closed:
            return None
        try:
            return self.sessions[system.id]
        except KeyError:
            pass
        with self._lock:
            if system.closed:
                return None
            if system.id in self.sessions:
                return self.sessions[system.id]
            self.sessions[system.id] = session = _start(system)
            return session

    @hookimpl
    def geplug_profile(self, event: ProfileEvent) -> None:
        """Stream ``event`` into its system's ``PROF_*`` directory.

        The directory is created on the first event of a run (a step, task, API call or
        marker), not at compile: compiling alone (``geplug compile``) leaves no empty
        collection behind. Graph events before that are checked at once (fp_point /
        bp_point) and replayed then.
        """
        run: Any = getattr(event, "run", None)
        system = run.system if run is not None else event.system  # type: ignore[union-attr]
        try:
            session = self.sessions[system.id]
        except KeyError:
            if event.kind == "graph":
                _check_graph(system, event)
                with self._lock:
                    self.pending.setdefault(system.id, []).append(event)
                return
            session = self.session_for(system)
            with self._lock:
                pending = self.pending.pop(system.id, [])
            if session is not None:
                for graph in pending:
                    session.handle(graph)
        if session is not None:
            session.handle(event)

    @hookimpl
    def geplug_shutdown_system(self, system: System) -> None:
        """Finish the system's collection: every summary written, every file complete."""
        from geplug.profiling import mstx

        mstx.forget_system(system)
        with self._lock:
            session = self.sessions.pop(system.id, None)
            self.pending.pop(system.id, None)
        if session is not None:
            session.close()


def __getattr__(name: str) -> Any:
    if name == "_sessions":  # read-only view over every instance (tests, debugging)
        return dict(collections.ChainMap(*(p.sessions for p in list(_instances))))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def session_for(system: System) -> ProfilingSession | None:
    """The session of ``system`` in its manager's profiling plugin, started on first use
    (``None`` when nothing is collected, or the plugin is disabled), holding every step run
    so far (deferred step records are dispatched first)."""
    flush = getattr(system, "flush_profile", None)
    if flush is not None and not system.closed:
        flush()  # the deferred step records first: the reader sees every step run so far
    pm = getattr(getattr(system, "manager", None), "pm", None)
    plugin = pm.get_plugin("profiling") if pm is not None else None
    return plugin.session_for(system) if isinstance(plugin, ProfilingPlugin) else None


def _start(system: System) -> ProfilingSession | None:
    import os

    from geplug.profiling import storage
    from geplug.profiling.options import Effective
    from geplug.profiling.session import ProfilingSession

    eff = Effective.from_config(system.config, system.product)
    if storage.disk_free(eff.output_root) <= storage.LOW_DISK_MB * storage.MB:
        warnings.warn(
            storage.ProfilingStorageWarning(
                f"profiling not collected: the disk of {eff.output_root!r} has 20 MB or less "
                "free; free disk space or set profiling_options.output to another disk"
            ),
            stacklevel=4,
        )
        return None
    try:
        os.makedirs(eff.output_root, exist_ok=True)
        return ProfilingSession(system, eff)
    except OSError as exc:
        where = exc.filename if exc.filename else eff.output_root
        warnings.warn(
            storage.ProfilingStorageWarning(
                f"profiling not collected: cannot create the profiling output {where!r} under "
                f"profiling_options.output = {eff.output_root!r} ({exc.strerror or exc}); set "
                "profiling_options.output to a writable directory"
            ),
            stacklevel=4,
        )
        return None


def _check_graph(system: System, event: Any) -> None:
    """Named fp/bp points must be ops of the graph (a ProfilingError at compile time)."""
    from geplug.profiling.options import Effective
    from geplug.profiling.step_trace import check_fp_bp

    eff = Effective.from_config(system.config, system.product)
    if eff.training_trace:
        check_fp_bp(event, eff.fp_point, eff.bp_point)
