"""Built-in dump writer plugin (registered before any entry point): routes ``geplug_dump``.

:class:`DumpPlugin`, instantiated once per plugin manager: per system (keyed by
``system.id``) it keeps one :class:`DumpLayout` and the data, overflow, statistics and
exception writers; ``geplug_shutdown_system`` completes pending files and forgets the system.
Returns the paths written, which ``System.emit_dump`` collects.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

from geplug.dump.policy import dump_layer_names, step_selected
from geplug.errors import DumpError, GeplugWarning
from geplug.hookspecs import hookimpl

if TYPE_CHECKING:
    from geplug.dump.data_writer import DataDumpWriter
    from geplug.dump.overflow import OverflowWriter
    from geplug.dump.stats import StatsWriter
    from geplug.events import DumpEvent
    from geplug.runtime.system import System

__all__ = ["DumpLayerWarning", "DumpPlugin", "dump_locations", "state_for"]


class DumpLayerWarning(GeplugWarning):
    """``dump_layer`` names ops that never ran on a dump step (misspelt, or of no model)."""


class SystemDumpState:
    """Everything the dump writers keep for one system."""

    def __init__(self, system: System) -> None:
        # the writers (numpy, protobuf) load on first use, so loading plugins stays cheap
        from geplug.dump.data_writer import DataDumpWriter
        from geplug.dump.exception import ExceptionDumpWriter
        from geplug.dump.layout import DumpLayout
        from geplug.dump.overflow import OverflowWriter
        from geplug.dump.stats import StatsWriter

        resolved = system.config
        cfg = resolved.config
        product = system.product
        self.system_id = system.id
        self.layer = dump_layer_names(cfg.dump_layer)
        # every value is the resolved one (geplug.config.resolve fills the defaults); this
        # class derives none of its own
        self.mode = str(cfg.dump_mode)
        self.stats_only = cfg.dump_data == "stats"
        self.debug_mode = str(cfg.dump_debug_mode)
        self.saturation = product.dump.overflow_mode == "saturation"
        root = resolved.dump_root
        self.layout: Any = None
        self.data: DataDumpWriter | None = None
        self.overflow: OverflowWriter | None = None
        self.stats: StatsWriter | None = None
        if root and (cfg.enable_dump or cfg.enable_dump_debug):
            self.layout = DumpLayout(root, resolved.device_id)
            self.data = DataDumpWriter(self.layout, ffts_plus=product.dump.ffts_plus_names)
            self.overflow = OverflowWriter(self.layout, self.data, product=product.name)
            self.stats = StatsWriter(self.layout)
        self.exception = ExceptionDumpWriter()
        # level and directory come from resolution (geplug.config.locations, formats.md §4)
        self.exception_level = resolved.exception_dump_level
        self.exception_dir = resolved.exception_dump_dir
        self.ops_ran: dict[str, None] = {}
        """Ops (and Data ops) seen on dump steps, in order, tracked when dump_layer is set."""
        self.models_ran: dict[str, None] = {}
        """Models seen on dump steps (ordered), tracked when dump_layer is set."""
        self.exception_files: list[str] = []
        """Exception dumps written for this system."""
        self.data_ops_written: set[tuple[str, int, str]] = set()
        """(model name, step, Data op) already dumped for dump_layer (options.md §4.7)."""

    def note_ran(self, event: DumpEvent) -> None:
        """Remember that ``event``'s op (and the Data ops feeding it) ran on a dump step, so
        :meth:`close` can name the ``dump_layer`` entries that never did."""
        self.ops_ran.update(dict.fromkeys((*event.op.data_inputs, event.op.name)))
        self.models_ran.setdefault(event.run.model_name, None)

    def unknown_layers(self) -> list[str]:
        """``dump_layer`` names no op of a dump step ran under (empty when none ran)."""
        if self.layer is None or not self.ops_ran:
            return []
        return sorted(self.layer.difference(self.ops_ran))

    def close(self) -> list[str]:
        """Complete pending files (statistics); warn once about ``dump_layer`` names that
        never ran (a misspelt op name would otherwise silently dump nothing)."""
        paths = self.stats.close() if self.stats is not None else []  # files first
        unknown = self.unknown_layers()
        if unknown:
            import warnings

            ran = list(self.ops_ran)
            listing = ", ".join(ran[:20]) + (f", ... ({len(ran)} ops)" if len(ran) > 20 else "")
            warnings.warn(DumpLayerWarning(
                "dump_layer names ops that never ran: "
                + ", ".join(repr(n) for n in unknown)
                + " (model " + ", ".join(repr(m) for m in self.models_ran)
                + f"); nothing was dumped for them. The ops that ran: {listing}. Use op names "
                "as in the graph, separated by spaces (`geplug compile MODEL` lists them)"),
                stacklevel=2)
        return paths


class DumpPlugin:
    """The built-in dump writers as a plugin object: one per plugin manager.

    Its state (one :class:`SystemDumpState` per open system, keyed by ``system.id``) lives on
    the instance, so two managers (two tests, two embedded uses) never share writers.
    """

    GEPLUG_PLUGIN_API = 1

    def __init__(self) -> None:
        self._states: dict[int, SystemDumpState] = {}
        self._lock = threading.Lock()

    def state_for(self, system: System) -> SystemDumpState:
        """The dump state of ``system`` (created on first use)."""
        state = self._states.get(system.id)
        if state is None:
            with self._lock:
                state = self._states.get(system.id)
                if state is None:
                    state = self._states[system.id] = SystemDumpState(system)
        return state

    def known(self, system: System) -> SystemDumpState | None:
        """The dump state of ``system`` when it has one (never creates it)."""
        return self._states.get(system.id)

    @hookimpl
    def geplug_dump(self, event: DumpEvent) -> list[str] | None:
        """Write the data, overflow and exception dumps ``event`` calls for; return their
        paths."""
        return _write(event, self.state_for(event.run.system))

    @hookimpl
    def geplug_shutdown_system(self, system: System) -> None:
        """Complete the statistics files of ``system``, report ``dump_layer`` names that never
        ran, and forget its dump state."""
        with self._lock:
            state = self._states.pop(system.id, None)
        if state is not None:
            state.close()


def _plugin_of(system: System) -> DumpPlugin | None:
    """The :class:`DumpPlugin` registered with ``system``'s manager (None when disabled)."""
    pm = getattr(getattr(system, "manager", None), "pm", None)
    found = pm.get_plugin("dump") if pm is not None else None
    return found if isinstance(found, DumpPlugin) else None


def state_for(system: System) -> SystemDumpState:
    """The dump state of ``system`` in its manager's dump plugin (created on first use)."""
    plugin = _plugin_of(system)
    if plugin is None:
        raise DumpError("the built-in dump plugin is not loaded (GEPLUG_DISABLE_PLUGINS names "
                        "'dump'); remove 'dump' from GEPLUG_DISABLE_PLUGINS to dump")
    return plugin.state_for(system)


def _write(event: DumpEvent, state: SystemDumpState) -> list[str] | None:
    """Write the data, overflow and exception dumps ``event`` calls for; return their paths."""
    system = event.run.system
    if event.kind == "exception":
        if not state.exception_level or state.exception_dir is None:
            return None
        written = state.exception.write(event, level=state.exception_level,
                                        directory=state.exception_dir)
        state.exception_files.extend(written)
        return written
    cfg = system.config.config
    if (cfg.enable_dump or cfg.enable_dump_debug) and state.layout is None:
        raise DumpError(
            "dumping is enabled but dump_path is not set; set dump_path to an existing, "
            "writable directory"
        )
    if event.run.dynamic_shape and state.exception_level == 1:
        return None  # dynamic shape + exception dump 1: only the exception dump (options.md §4.1)
    paths: list[str] = []
    if cfg.enable_dump and state.data is not None and step_selected(cfg.dump_step,
                                                                     event.run.step):
        if state.layer is not None:
            state.note_ran(event)
        if state.layer is None or event.op.name in state.layer:
            for dumped in _with_data_ops(event, state):
                if state.stats_only:
                    assert state.stats is not None
                    paths.extend(state.stats.add(dumped, mode=state.mode))
                else:
                    paths.extend(state.data.write(dumped, mode=state.mode))
    if cfg.enable_dump_debug and state.overflow is not None:
        from geplug.dump.overflow import find_overflow

        finding = find_overflow(event, saturation=state.saturation, debug_mode=state.debug_mode)
        if finding is not None:
            paths.extend(state.overflow.write(event, finding))
    return paths or None


def _with_data_ops(event: DumpEvent, state: SystemDumpState) -> list[DumpEvent]:
    """``event``, preceded under ``dump_layer`` by one event per graph input (GE ``Data``
    op) feeding the op directly, each Data op once per model and step (options.md §4.7).

    A Data op's input and output are the graph input itself; it runs no device task, so its
    file carries the consuming op's task and stream ids (names differ by op type and name).
    """
    if state.layer is None or not event.op.data_inputs:
        return [event]
    import attrs

    from geplug.events import OpRecord

    events: list[DumpEvent] = []
    for t in event.inputs:
        if t.name not in event.op.data_inputs:
            continue
        key = (event.run.model_name, event.run.step, t.name)
        if key in state.data_ops_written:
            continue
        state.data_ops_written.add(key)
        op = OpRecord(name=t.name, op_type="Data", task_id=event.op.task_id,
                      stream_id=event.op.stream_id, dtype=t.dtype)
        events.append(attrs.evolve(event, op=op, inputs=(t,), outputs=(t,), phase="all"))
    return [*events, event]


def dump_locations(system: System) -> dict[str, str]:
    """Where the dump writers put ``system``'s files so far, for a run summary: ``dump``
    (the ``{dump_path}/{time}`` tree of data, overflow and statistics files), ``overflow
    summary`` and ``exception dump`` (the directory), each only when something was written.
    Call it before the system shuts down (statistics files complete at shutdown)."""
    plugin = _plugin_of(system)
    state = plugin.known(system) if plugin is not None else None
    if state is None:
        return {}
    found: dict[str, str] = {}
    if state.layout is not None and state.layout.started:
        found["dump"] = state.layout.time_dir
    if state.overflow is not None and state.overflow.summary_path:
        found["overflow summary"] = state.overflow.summary_path
    if state.exception_files:
        found["exception dump"] = os.path.dirname(state.exception_files[0])
    return found
