"""The geplug hook specifications (pluggy project ``geplug``).

Every plugin - the built-in dump and profiling writers, the product packages, the simulator
backend, a user's own plugin - implements some of these with ``from geplug import hookimpl``.
A plugin module also declares ``GEPLUG_PLUGIN_API = 1``: the version of this interface it was
written for; the manager refuses a plugin whose version it does not support.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from geplug.backend import Subcommand
    from geplug.events import DumpEvent, ProfileEvent
    from geplug.products.load import Declaration
    from geplug.runtime.system import System

__all__ = ["PLUGIN_API", "PROJECT", "SUPPORTED_PLUGIN_APIS", "hookimpl", "hookspec"]

PROJECT = "geplug"
PLUGIN_API = 1
"""The plugin interface version of this core."""
SUPPORTED_PLUGIN_APIS = frozenset({1})
"""Plugin API versions this core loads."""

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def geplug_capabilities() -> Sequence[Declaration]:
    """Declare the products this plugin provides.

    Called by the plugin manager once, when plugins are loaded (``geplug products``, any query,
    ``initialize_system``). Return the declarations read from the plugin's own
    ``capabilities.toml`` files, usually one. The manager validates each against the schema,
    resolves ``extends``, and reports a product declared twice as one error naming both
    distributions. A plugin whose declaration is invalid is skipped with a warning; the others
    keep working. Return ``[]`` (or do not implement the hook) to declare nothing.

    Example::

        from importlib.resources import files
        from geplug import hookimpl
        from geplug.products import declare

        GEPLUG_PLUGIN_API = 1

        @hookimpl
        def geplug_capabilities():
            return [declare(files("geplug_mycard") / "capabilities.toml")]
    """
    return []  # a spec's body is never called; this keeps type checkers content


@hookspec(firstresult=True)
def geplug_init_system(system: System) -> Any | None:
    """Return a runtime that serves ``system``, or ``None`` to pass.

    Called by ``initialize_system`` after the configuration was checked, with a
    :class:`~geplug.runtime.system.System` carrying the product, the resolved configuration and
    the rank information. Backends are asked in turn (first result wins); a backend that cannot
    serve the request returns ``None`` and, to explain why in the error the user sees, records
    a reason with ``system.pass_reason(name, reason)``. ``initialize_system(backend="name")``
    asks only the backend whose plugin is called ``name``.

    The returned runtime must have ``compile(model, **options)`` returning a compiled model
    (see ``geplug_compile``) and ``close()``.

    Example::

        @hookimpl
        def geplug_init_system(system):
            if system.product.family_id not in SUPPORTED:
                system.pass_reason("mybackend", "no hardware for " + system.product.name)
                return None
            return MyRuntime(system)
    """


@hookspec(firstresult=True)
def geplug_compile(system: System, model: Any, options: dict[str, Any]) -> Any | None:
    """Compile ``model`` (a path or an ``onnx.ModelProto``) for ``system``'s product.

    Called by ``System.compile``. The backend that served ``geplug_init_system`` normally
    compiles by its runtime's own ``compile``; this hook lets another plugin take over model
    kinds the runtime does not know (first result wins, ``None`` passes). ``options`` holds the
    keyword arguments of ``System.compile`` (``name``, ...). Return a compiled model with
    ``run(inputs, step=None) -> dict[str, numpy.ndarray]`` and ``decisions``.

    Example::

        @hookimpl
        def geplug_compile(system, model, options):
            if not str(model).endswith(".mymodel"):
                return None
            return MyCompiled(system, model)
    """


@hookspec
def geplug_dump(event: DumpEvent) -> Any:
    """Receive an op's tensors on a step where dumping may apply.

    Called by the backend for every op of a step on which the resolved configuration needs
    tensors (a dump step of ``enable_dump``, every step with ``enable_dump_debug``) and for an
    AI Core exception (``event.kind == "exception"``), before the backend raises it. All
    implementations are called. The built-in writers (``geplug.dump``) write the data,
    overflow and exception dumps in the real formats; a user plugin may also record or check
    tensors. Return the paths written (a list) or ``None``; the backend collects them (an
    AI Core error names its exception dump files). Raise a :class:`geplug.errors.DumpError` to
    stop the run (e.g. the disk is full);
    any other exception from a plugin disables that plugin with a warning.

    Example::

        @hookimpl
        def geplug_dump(event):
            for t in event.outputs:
                if t.array.dtype.kind == "f" and not numpy.isfinite(t.array).all():
                    print("non-finite output at", event.op.name)
    """


@hookspec
def geplug_profile(event: ProfileEvent) -> None:
    """Receive a profiling event: a device task, a step boundary, an API call, a user marker.

    Called by the backend (and by ``geplug.mstx`` for markers) while profiling is on for the
    event's system. All implementations are called. The built-in collectors
    (``geplug.profiling``) stream the events into the real ``PROF_*`` layout; a user plugin may
    also consume them. The same error policy as ``geplug_dump`` applies.

    Example::

        @hookimpl
        def geplug_profile(event):
            if event.kind == "task":
                totals[event.op.op_type] += event.duration_us
    """


@hookspec
def geplug_shutdown_system(system: System) -> None:
    """Flush and close whatever this plugin opened for ``system``.

    Called by ``shutdown_system`` (and on leaving the ``initialize_system`` context) for every
    plugin; all implementations are called, even after one raised, so every file is completed.
    After it returns, every file the plugin wrote for ``system`` must be complete.

    Example::

        @hookimpl
        def geplug_shutdown_system(system):
            writers.pop(id(system)).close()
    """


@hookspec
def geplug_subcommands() -> Sequence[Subcommand]:
    """Add ``geplug`` sub-commands (conda's ``conda_subcommands`` is the model).

    Called by the CLI once, when it builds its parser. Return
    :class:`geplug.backend.Subcommand` records; a name the core already uses, or one another
    plugin returned first, is skipped with a warning naming the plugin. A backend offers its
    ``demo`` this way, so the core CLI never imports a backend.

    Example::

        from geplug import hookimpl
        from geplug.backend import Subcommand

        @hookimpl
        def geplug_subcommands():
            return [Subcommand(name="hello", summary="say hello",
                               action=lambda args: print("hello") or 0)]
    """
    return []
