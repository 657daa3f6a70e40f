"""A configuration problem: the option, the value, how bad, why, how to fix, the real code."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import attrs

from geplug.config.text import literal, short
from geplug.limits import MAX_KEY_CHARS, escape_controls

__all__ = ["Problem", "unique"]


@attrs.frozen(kw_only=True)
class Problem:
    """One finding of :func:`geplug.config.check`.

    ``option`` is the option path as the user wrote it (``profiling_options.aic_metrics``);
    ``code`` the real stack's error code (``E10001``) or message text where the reference has
    one, else "".
    """

    option: str
    value: Any
    severity: Literal["error", "warning"]
    message: str
    hint: str = ""
    code: str = ""
    depends: tuple[str, ...] = attrs.field(default=(), eq=False)
    """Options this finding is about besides ``option`` (a warning that enable_dump is not
    true depends on enable_dump): dropped by :func:`unique` when one of them has an error,
    so an invalid value never brings a second, misleading warning."""

    def identity(self) -> tuple[str, str, str, str]:
        """What makes two findings the same one (reported once): option, severity, message,
        value."""
        return (self.option, self.severity, self.message, repr(self.value))

    def render(self) -> str:
        """One readable line: ``option = value: message; hint [code]``.

        An unset value reads ``option (not set)`` (never Python's ``None``); a problem about a
        file as a whole (``value`` is the option path itself) reads ``path: message``. A
        message that ends a sentence loses its final full stop before ``; hint``.
        """
        option = escape_controls(short(self.option, MAX_KEY_CHARS))
        if self.value is None:
            head = f"{option} (not set)"
        elif isinstance(self.value, str) and self.value == self.option:
            head = option
        elif isinstance(self.value, (str, float)) and not isinstance(self.value, bool):
            head = f"{option} = {short(self.value)!r}"
        else:  # true, 2024-01-01, arrays: as written in TOML, not as Python reprs
            head = f"{option} = {literal(self.value)}"
        message = self.message.rstrip()
        text = f"{head}: {message}"
        if self.hint:
            if message.endswith(".") and not message.endswith(".."):
                message = message[:-1]
            text = f"{head}: {message}; {self.hint.strip()}"
        if self.code:
            text += f" [{self.code}]"
        return escape_controls(text)

    def to_json(self) -> dict[str, Any]:
        """The JSON form of ``geplug check --format json``."""
        value = self.value
        if not isinstance(value, (str, int, float, bool, type(None))):
            value = literal(value)
        return {
            "option": self.option,
            "value": value,
            "severity": self.severity,
            "message": self.message,
            "hint": self.hint,
            "code": self.code,
        }


def unique(problems: Iterable[Problem]) -> list[Problem]:
    """``problems`` in order, each identical finding (option, severity, message, value) once,
    without the warnings that depend on an option that already has an error (``depends``)."""
    problems = list(problems)
    errored = {p.option for p in problems if p.severity == "error"}
    seen: set[tuple[str, str, str, str]] = set()
    out: list[Problem] = []
    for problem in problems:
        if problem.severity == "warning" and errored.intersection(problem.depends):
            continue
        key = problem.identity()
        if key not in seen:
            seen.add(key)
            out.append(problem)
    return out
