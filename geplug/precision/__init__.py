"""Precision resolution: per-op dtype, engine and implementation mode, as pure functions.

``decide(nodes, product, config)`` applies the seed's precision_mode rules (options.md §5.4),
the mixed-precision lists (§5.5) and the implementation-mode lists (§9) to a graph described
by :class:`NodeInfo` records; it never imports onnx, so ``geplug`` stays light.
"""

from __future__ import annotations

from geplug.precision.implmode import ImplChoice, choose_impl, choose_impl_mode
from geplug.precision.mixlist import list_state, load_modify_mixlist, normalize_overrides
from geplug.precision.modes import PrecisionMode, effective_mode, mode_from_name
from geplug.precision.select import (
    NodeInfo,
    OpDecision,
    Selection,
    decide,
    select_dtype,
    summarize,
)

__all__ = [
    "ImplChoice",
    "NodeInfo",
    "OpDecision",
    "PrecisionMode",
    "Selection",
    "choose_impl",
    "choose_impl_mode",
    "decide",
    "effective_mode",
    "list_state",
    "load_modify_mixlist",
    "mode_from_name",
    "normalize_overrides",
    "select_dtype",
    "summarize",
]
