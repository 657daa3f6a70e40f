"""Session options: the typed model, reading every form, checking, resolving, exporting.

Public API: :class:`SessionConfig` (named constructors ``from_mapping``, ``from_toml``,
``from_tf_parameter_map``, ``from_ge_options``, ``from_atc_args``, ``from_torch_options``),
:func:`load_config`, :func:`check`, :func:`resolve`, :func:`export` (:func:`export_report`
with the options left out), :class:`Problem`,
:class:`ResolvedConfig`. Facts: ``docs/reference/options.md``.
"""

from __future__ import annotations

from typing import Any

from geplug.config.check import check
from geplug.config.export import Export, export, export_report, read_export
from geplug.config.model import PROFILING_KEYS, ProfilingOptions, SessionConfig
from geplug.config.problems import Problem
from geplug.config.resolve import resolve
from geplug.config.resolved import ResolvedConfig, Source

__all__ = [
    "PROFILING_KEYS",
    "Export",
    "Problem",
    "ProfilingOptions",
    "ResolvedConfig",
    "SessionConfig",
    "Source",
    "check",
    "export",
    "export_report",
    "load_config",
    "read_export",
    "resolve",
]


def load_config(obj: Any = None) -> SessionConfig:
    """A :class:`SessionConfig` from ``None`` (all unset), a SessionConfig, a mapping of option
    names, or a path to a TOML file (a ``.json`` path is read as a GE option map).

    Raises :class:`~geplug.errors.ConfigError` with every parsing problem.
    """
    from geplug.config.parse import ensure, parse_source

    source = "" if obj is None or not isinstance(obj, (str,)) else obj
    return ensure(parse_source(obj), str(source))
