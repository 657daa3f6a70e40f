"""The check rules, one module per option group, and the one registry that orders them.

Each rule is a function ``rule(ctx)`` that records problems on a
:class:`~geplug.config.rules.base.Ctx`; :func:`geplug.config.check` runs :data:`RULES` in order.
A rule reads product differences from the declaration, never from a product's name.
"""

from __future__ import annotations

from collections.abc import Callable

from geplug.config.rules import (
    compile_cache,
    debug,
    dump,
    environment,
    implmode,
    precision,
    profiling,
)
from geplug.config.rules.base import Ctx

__all__ = ["RULES", "Ctx", "Rule"]

Rule = Callable[[Ctx], None]

RULES: tuple[tuple[str, Rule], ...] = (
    ("graph_run_mode", environment.check_run_mode),
    ("profiling", profiling.check_profiling),
    ("dump", dump.check_dump),
    ("precision", precision.check_precision),
    ("debug", debug.check_debug),
    ("exception_dump", dump.check_exception_dump),
    ("implmode", implmode.check_implmode),
    ("compile_cache", compile_cache.check_compile_cache),
    ("soc_version", environment.check_soc),
    ("environment", environment.check_environment),
    ("initialize_system", environment.check_initialize_system),
)
"""(group name, rule) in the order problems are reported."""
