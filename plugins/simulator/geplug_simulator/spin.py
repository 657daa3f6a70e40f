"""Whether the simulator's onnxruntime thread pools spin: ``GEPLUG_SIM_SPIN=auto|on|off``.

onnxruntime's default intra-op pool keeps its worker threads spinning after every parallel
section (measured: ~50 ms of CPU after a MobileNetV2 run). A process alone on its cores gains
from it: the workers answer the next op at once, which is why a plain onnxruntime session
runs MobileNetV2 ~1.4x faster than one without spinning. Processes or ranks sharing the
cores pay for it instead: every spinning worker takes a core from a rank or test that has
real work.

- ``auto`` (default): spin, as onnxruntime does by default, when this process simulates one
  device alone; do not when several ranks or devices share the machine: a job of 2+ ranks
  (``RANK_SIZE`` or a rank table, which ``geplug run --ranks`` / ``--rank-table`` and
  :class:`~geplug_simulator.cluster.ClusterJob` set per rank, and which the torch plugin sets
  from torchrun's world), torchrun's ``WORLD_SIZE`` / ``LOCAL_WORLD_SIZE`` above 1, or
  simulated devices of 2+ different device ids open in this process.
- ``on`` / ``off``: always / never.

Decided per onnxruntime session, i.e. when a model is compiled (a session's pool is fixed
when it is made). Several independent processes on one machine (parallel test runs) are not
visible from inside one of them: set ``off`` there (the project's tox environments do).
docs/simulator.md "Execute".
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from geplug.config.problems import Problem
from geplug.errors import ConfigError

__all__ = ["SPIN_ENV", "SPIN_VALUES", "SpinPolicy", "read_spin", "resolve_spin", "sharing",
           "system_policy"]

SPIN_ENV = "GEPLUG_SIM_SPIN"
SPIN_VALUES = ("auto", "on", "off")


@attrs.frozen(kw_only=True)
class SpinPolicy:
    """The resolved policy: ``spin`` (whether the session's pools spin), ``setting`` (the
    ``GEPLUG_SIM_SPIN`` value it came from) and ``reason`` (why, for ``auto``)."""

    spin: bool
    setting: str
    reason: str


def read_spin(env: Mapping[str, str] | None = None) -> str:
    """The ``GEPLUG_SIM_SPIN`` value of ``env`` (default ``os.environ``): ``auto`` when unset
    or empty; :class:`ConfigError` naming the variable, the value and the choices otherwise."""
    env = os.environ if env is None else env
    raw = env.get(SPIN_ENV) or ""
    value = raw.strip().lower()
    if not value:
        return "auto"
    if value not in SPIN_VALUES:
        raise ConfigError([Problem(
            option=SPIN_ENV, value=raw, severity="error",
            message=f"{SPIN_ENV} must be one of {', '.join(SPIN_VALUES)} (whether the "
                    "simulator's onnxruntime worker threads spin between ops; auto: only when "
                    "this process simulates one device alone)",
            hint=f"export {SPIN_ENV}=auto, or unset it")], source="environment")
    return value


def _int(env: Mapping[str, str], name: str) -> int:
    """``env[name]`` as an integer, 0 when unset or not an integer (another reader owns the
    variable and reports its bad values)."""
    raw = (env.get(name) or "").strip()
    return int(raw) if raw.isdigit() else 0


def sharing(rank_size: int, device_ids: Iterable[int],
            env: Mapping[str, str] | None = None) -> str:
    """Why this process shares the machine with other simulated ranks or devices ("" when it
    simulates one device alone): ``rank_size`` of its job, the ``device_ids`` of the
    simulated devices open in it, and torchrun's variables in ``env`` (default
    ``os.environ``)."""
    env = os.environ if env is None else env
    if rank_size > 1:
        return f"a job of {rank_size} ranks"
    for name in ("WORLD_SIZE", "LOCAL_WORLD_SIZE"):
        if _int(env, name) > 1:
            return f"{name}={_int(env, name)} (torchrun)"
    ids = sorted(set(device_ids))
    if len(ids) > 1:
        return f"{len(ids)} simulated devices open in this process ({', '.join(map(str, ids))})"
    return ""


def resolve_spin(setting: str, shared: str) -> SpinPolicy:
    """The policy of ``setting`` (a :func:`read_spin` value) for a process that ``shared``
    (a :func:`sharing` reason, "" when alone) describes."""
    if setting == "on":
        return SpinPolicy(spin=True, setting=setting, reason=f"{SPIN_ENV}=on")
    if setting == "off":
        return SpinPolicy(spin=False, setting=setting, reason=f"{SPIN_ENV}=off")
    if shared:
        return SpinPolicy(spin=False, setting=setting,
                          reason=f"auto: the cores are shared ({shared})")
    return SpinPolicy(spin=True, setting=setting,
                      reason="auto: one simulated device alone (onnxruntime's default)")


def system_policy(setting: str, system: Any, open_systems: Iterable[Any]) -> SpinPolicy:
    """The policy for sessions of ``system``, given every system open in the process
    (``open_systems``; those the simulator serves count as devices)."""
    rank = getattr(system, "rank", None)
    rank_size = int(getattr(rank, "rank_size", 1) or 1)
    from geplug_simulator.runtime import SimRuntime

    ids = [system.device_id]
    ids += [s.device_id for s in open_systems
            if not getattr(s, "closed", False) and isinstance(s.runtime, SimRuntime)]
    return resolve_spin(setting, sharing(rank_size, ids))
