"""``import geplug.mstx``: the user-marker API, re-exported from :mod:`geplug.profiling.mstx`."""

from __future__ import annotations

from geplug.profiling.mstx import mark, range, range_end, range_start

__all__ = ["mark", "range", "range_end", "range_start"]
