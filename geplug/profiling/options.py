"""The profiling options a collector acts on: re-exported from :mod:`geplug.config`.

The typed values and their defaults (options.md §3.3) are computed once, by
:func:`geplug.config.resolve` (:mod:`geplug.config.resolve_profiling`), and stored on the
:class:`~geplug.config.resolved.ResolvedConfig`; :meth:`Effective.from_config` only reads them.
The value syntax (the ``storage_limit`` pattern, the ``Custom:`` prefix) is the checker's own
definition (:mod:`geplug.config.rules.profiling`).
"""

from __future__ import annotations

from geplug.config.resolve_profiling import (
    CUSTOM_PREFIX,
    Effective,
    parse_custom,
    parse_storage_limit,
)
from geplug.config.rules.profiling import STORAGE_RE

__all__ = ["CUSTOM_PREFIX", "STORAGE_RE", "Effective", "parse_custom", "parse_storage_limit"]
