"""The state one check run shares between the rule modules, and their common constants."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import attrs

from geplug.config.defaults import graph_run_mode
from geplug.config.model import SessionConfig
from geplug.config.problems import Problem
from geplug.config.profiling_source import ProfilingInForce, profiling_in_force
from geplug.products.schema import Product

__all__ = ["INT32_MAX", "Ctx"]

INT32_MAX = 2**31 - 1


class Ctx:
    """One check of one config on one product: inputs, the effective run mode, the findings.

    Problems are kept in the order found and each identical problem only once, so a rule that
    two paths reach (or a file read twice) never shows the same line twice.
    """

    def __init__(self, config: SessionConfig, product: Product, env: Mapping[str, str],
                 cwd: str, *, for_initialize_system: bool = False,
                 soc: str | None = None) -> None:
        self.c = config
        self.p = product
        self.env = env
        self.cwd = cwd
        self.for_initialize_system = for_initialize_system
        self.soc = soc
        """The SoC string the product was named by (``Ascend910B3``), or None."""
        self.out: list[Problem] = []
        self._seen: set[tuple[str, str, str, str]] = set()
        self.run_mode, _ = graph_run_mode(config, product)
        self.profiling: ProfilingInForce = profiling_in_force(config, env)
        """The profiling settings in force (session, environment or default; §3.1)."""
        self.hint_suffix = ""
        """Appended in parentheses to the hint of every problem recorded while it is set
        (says where a value came from, e.g. an environment variable)."""

    def add(self, problem: Problem) -> None:
        """Record ``problem`` unless the same one (option, severity, message, value) is there."""
        if self.hint_suffix:
            hint = problem.hint
            problem = attrs.evolve(problem, hint=f"{hint} ({self.hint_suffix})" if hint
                                   else self.hint_suffix)
        key = problem.identity()
        if key not in self._seen:
            self._seen.add(key)
            self.out.append(problem)

    def extend(self, problems: list[Problem]) -> None:
        """Record several problems (from a file reader) with the same de-duplication."""
        for problem in problems:
            self.add(problem)

    def err(self, option: str, value: Any, message: str, hint: str = "", code: str = "") -> None:
        """Record an error: the real stack would refuse this (or fail at run time)."""
        self.add(Problem(option=option, value=value, severity="error", message=message,
                         hint=hint, code=code))

    def warn(self, option: str, value: Any, message: str, hint: str = "", code: str = "",
             *, depends: tuple[str, ...] = ()) -> None:
        """Record a warning: accepted, but probably not what the user meant. ``depends``: the
        options it is about besides ``option`` (dropped when one of them has an error)."""
        self.add(Problem(option=option, value=value, severity="warning", message=message,
                         hint=hint, code=code, depends=depends))

    def path(self, value: str) -> str:
        """``value`` as an absolute path (relative paths are taken from the check's cwd)."""
        return value if os.path.isabs(value) else os.path.join(self.cwd, value)
