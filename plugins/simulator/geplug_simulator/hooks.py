"""The simulator's hook implementations: it serves every declared product."""

from __future__ import annotations

from typing import TYPE_CHECKING

from geplug import hookimpl

if TYPE_CHECKING:
    from geplug.backend import Subcommand
    from geplug.runtime.system import System
    from geplug_simulator.runtime import SimRuntime

GEPLUG_PLUGIN_API = 1

__all__ = ["GEPLUG_PLUGIN_API", "geplug_init_system", "geplug_subcommands"]


@hookimpl
def geplug_init_system(system: System) -> SimRuntime:
    """A :class:`~geplug_simulator.runtime.SimRuntime` for ``system`` (any product: the
    product's declaration is all the simulator needs)."""
    from geplug_simulator.runtime import SimRuntime

    return SimRuntime(system)


@hookimpl
def geplug_subcommands() -> list[Subcommand]:
    """``geplug demo`` and ``geplug cluster`` (the multi-rank job ``geplug run --ranks``
    hands over); their modules import onnx only when the command runs."""
    from geplug_simulator.cluster_cmd import cluster_command
    from geplug_simulator.demo_cmd import demo_command

    return [demo_command(), cluster_command()]
