"""How long each plugin takes at load, and the warning that names a slow one.

A plugin's load time is the time its module takes to import plus the time its
``geplug_capabilities`` takes (both run in every geplug command that needs products): a plugin
that sleeps there slows every command. ``geplug plugins`` shows each plugin's load time; a
plugin whose load exceeds :func:`slow_threshold` seconds (:data:`SLOW_DEFAULT_SECONDS`, or
``GEPLUG_SLOW_PLUGIN_SECONDS``) gets a :class:`SlowPluginWarning` naming it, its
distribution, the time and how to disable it.
"""

from __future__ import annotations

import math
import os
import warnings

__all__ = ["SLOW_DEFAULT_SECONDS", "SLOW_ENV", "SlowPluginWarning", "slow_threshold",
           "warn_if_slow"]

SLOW_ENV = "GEPLUG_SLOW_PLUGIN_SECONDS"
SLOW_DEFAULT_SECONDS = 1.0
"""A plugin that takes longer than this at load is named (the built-in ones and the shipped
product packages take a few milliseconds)."""


class SlowPluginWarning(UserWarning):
    """A plugin took longer than the threshold to load (import + ``geplug_capabilities``);
    ``plugin`` names it, ``seconds`` is the time taken."""

    def __init__(self, message: str, *, plugin: str = "", seconds: float = 0.0) -> None:
        super().__init__(message)
        self.plugin = plugin
        self.seconds = seconds


def slow_threshold() -> float:
    """The threshold in seconds: ``GEPLUG_SLOW_PLUGIN_SECONDS`` when it is a finite number
    >= 0, else :data:`SLOW_DEFAULT_SECONDS` (a bad value is ignored, not an error: only a
    warning depends on it)."""
    raw = os.environ.get(SLOW_ENV, "").strip()
    try:
        value = float(raw) if raw else SLOW_DEFAULT_SECONDS
    except ValueError:
        return SLOW_DEFAULT_SECONDS
    return value if math.isfinite(value) and value >= 0 else SLOW_DEFAULT_SECONDS


def warn_if_slow(name: str, provider: str, seconds: float, what: str) -> bool:
    """Warn (and return True) when ``seconds`` exceeds the threshold; ``what`` says where the
    time went (``"import"``, ``"geplug_capabilities"``)."""
    limit = slow_threshold()
    if seconds <= limit:
        return False
    warnings.warn(SlowPluginWarning(
        f"geplug plugin {name!r} ({provider}) is slow: its {what} took {seconds:.2f} s "
        f"(threshold {limit:g} s, {SLOW_ENV}); every geplug command pays this. Report it to "
        f"the plugin's authors, or disable it with GEPLUG_DISABLE_PLUGINS={name}",
        plugin=name, seconds=seconds), stacklevel=4)
    return True
