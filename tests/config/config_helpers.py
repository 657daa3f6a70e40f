"""Helpers shared by the session-option tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from geplug.config import SessionConfig, check
from geplug.config.problems import Problem


def problems_of(mapping: Mapping[str, Any] | SessionConfig, product: Any, *,
                env: Mapping[str, str] | None = None, cwd: str | None = None,
                **kw: Any) -> list[Problem]:
    """check() of a mapping (or config) with an empty environment by default."""
    config = mapping if isinstance(mapping, SessionConfig) else \
        SessionConfig.from_mapping(mapping)
    return check(config, product, env={} if env is None else env, cwd=cwd, **kw)


def errors_on(problems: list[Problem], option: str) -> list[Problem]:
    """The errors whose option path is ``option``."""
    return [p for p in problems if p.severity == "error" and p.option == option]


def warnings_on(problems: list[Problem], option: str) -> list[Problem]:
    """The warnings whose option path is ``option``."""
    return [p for p in problems if p.severity == "warning" and p.option == option]
