"""Which profiling settings are in force: the session's, the environment's or a default JSON.

One rule (options.md §3.1, §14), shared by :func:`geplug.config.check` and
:func:`geplug.config.resolve` so that what is checked is what is used:

- the session's ``profiling_mode`` wins over env ``PROFILING_MODE``: ``false`` is off;
- ``profiling_mode = true`` with ``profiling_options``: the session's options;
- ``profiling_mode = true`` without options, TF front end (``tf``, ``python``): the TF
  adapter substitutes its default JSON before GE sees the options, so the environment's
  ``PROFILING_OPTIONS`` is never read (a warning says so when it is set);
- otherwise GE falls back to the environment: ``PROFILING_MODE=true`` turns profiling on with
  ``PROFILING_OPTIONS`` (checked exactly like the session form, problems under the option path
  ``PROFILING_OPTIONS``), or GE's default JSON when that is empty. A GE-level
  ``profiling_mode = true`` without options and without ``PROFILING_MODE=true`` collects
  nothing (GE needs both, a warning says so).
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from geplug.config.defaults import TF_ADAPTER_FRONT_ENDS
from geplug.config.model import ProfilingOptions, SessionConfig
from geplug.config.problems import Problem
from geplug.config.resolved import Source
from geplug.config.text import short

__all__ = ["ENV_PATH", "SESSION_PATH", "ProfilingInForce", "profiling_in_force"]

SESSION_PATH = "profiling_options"
"""Option path of the session's profiling options."""
ENV_PATH = "PROFILING_OPTIONS"
"""Option path of the environment's profiling options (problems are reported under it)."""
ENV_HINT = "fix it in the environment variable PROFILING_OPTIONS"


@attrs.frozen(kw_only=True)
class ProfilingInForce:
    """The profiling settings GE will use, and where they come from.

    ``options`` are the options to check and use (``None`` when profiling is off, when a
    default JSON applies, or when the environment's text is not a JSON object); ``path`` is
    their option path (:data:`SESSION_PATH` or :data:`ENV_PATH`, "" when none); ``default``
    says a default JSON applies. ``problems`` are those of reading env ``PROFILING_OPTIONS``
    (the readable keys are still in ``options`` and checked, as for the session form) plus
    the warnings of this rule; :attr:`usable` is false when one is an error.
    """

    on: bool
    mode_source: str
    options: ProfilingOptions | None = None
    options_source: str = ""
    path: str = ""
    default: bool = False
    problems: tuple[Problem, ...] = ()

    @property
    def usable(self) -> bool:
        """Whether GE can use these settings (reading the environment's options found no
        error); :func:`~geplug.config.resolve` falls back to the default JSON otherwise."""
        return not any(p.severity == "error" for p in self.problems)


def _warn(option: str, value: object, message: str, hint: str) -> Problem:
    return Problem(option=option, value=value, severity="warning", message=message, hint=hint)


def _env_options(raw: str) -> tuple[ProfilingOptions | None, list[Problem]]:
    """``PROFILING_OPTIONS`` read like the session form, each problem pointing at the env."""
    from geplug.config.parse_common import parse_profiling_options

    opts, problems = parse_profiling_options(raw, option=ENV_PATH)
    return opts, [attrs.evolve(p, hint=f"{p.hint} ({ENV_HINT})" if p.hint else ENV_HINT)
                  for p in problems]


def profiling_in_force(config: SessionConfig, env: Mapping[str, str]) -> ProfilingInForce:
    """The profiling settings of ``config`` under ``env`` (see the module docstring)."""
    session_mode = config.profiling_mode
    raw_mode = env.get("PROFILING_MODE") or ""
    env_mode = raw_mode.strip() == "true"
    raw = env.get("PROFILING_OPTIONS") or ""
    notes: list[Problem] = []
    if raw_mode.strip() not in ("", "true", "false") and session_mode is not False:
        notes.append(_warn("PROFILING_MODE", raw_mode, "GE turns profiling on only for "
                           "PROFILING_MODE=true (exactly); this value leaves it off",
                           "export PROFILING_MODE=true, or unset it"))
    if session_mode is False:
        return ProfilingInForce(on=False, mode_source=Source.USER, problems=tuple(notes))
    if session_mode is True and config.profiling_options is not None:
        return ProfilingInForce(on=True, mode_source=Source.USER,
                                options=config.profiling_options, options_source=Source.USER,
                                path=SESSION_PATH, problems=tuple(notes))
    fe = config.front_end
    if session_mode is True and fe in TF_ADAPTER_FRONT_ENDS:
        if raw.strip():
            notes.append(_warn(
                ENV_PATH, short(raw), "ignored: with profiling_mode = true and no "
                "profiling_options the TF adapter substitutes its default profiling_options "
                "before GE would read the environment",
                "put these options in the session's profiling_options"))
        return ProfilingInForce(on=True, mode_source=Source.USER,
                                options_source=Source.front_end(fe), default=True,
                                problems=tuple(notes))
    # GE reads the session only with mode "1" and non-empty options; else the environment.
    if not env_mode:
        if session_mode is True:
            notes.append(_warn(
                "profiling_mode", True, f"nothing is collected: with front_end = {fe!r} "
                "GE uses profiling_mode only together with profiling_options, and falls back "
                "to the environment, where PROFILING_MODE is not 'true'",
                "set profiling_options, or export PROFILING_MODE=true (and "
                "PROFILING_OPTIONS)"))
            return ProfilingInForce(on=False, mode_source=Source.front_end(fe),
                                    problems=tuple(notes))
        return ProfilingInForce(on=False, mode_source=Source.BUILTIN_DEFAULT,
                                problems=tuple(notes))
    mode_source = Source.USER if session_mode is True else Source.env("PROFILING_MODE")
    if not raw.strip():
        return ProfilingInForce(on=True, mode_source=mode_source,
                                options_source=Source.BUILTIN_DEFAULT, default=True,
                                problems=tuple(notes))
    opts, problems = _env_options(raw)
    return ProfilingInForce(on=True, mode_source=mode_source, options=opts,
                            options_source=Source.env(ENV_PATH), path=ENV_PATH,
                            problems=tuple(notes + problems))
