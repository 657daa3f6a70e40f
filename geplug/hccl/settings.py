"""The HCCL environment variables the model honours (CANN environment-variable reference).

- ``HCCL_ALGO``: ``level0:NA;level1:<algo>`` globally, or ``<op>=level0:NA;level1:<algo>``
  per op type separated by ``/``. level1 (between servers): ring, H-D_R, NHR, NHR_V1, NB,
  pipeline, pairwise (alltoall only); level0 only ``NA`` (HCCL picks the server algorithm).
- ``HCCL_BUFFSIZE``: integer MB >= 1, default 200: the CCL buffer; a collective whose
  per-step data exceeds it runs in several loops (each pays the step latencies again).
- ``HCCL_CONNECT_TIMEOUT``: integer seconds in [120, 7200], default 120: link set-up; the
  real wait is the value plus 20 s.
- ``HCCL_EXEC_TIMEOUT``: seconds, default 1836. The training and inference series accept
  (0, 17340] and round down to a multiple of 68 (minimum 68); A2, A3 and Atlas 350 accept
  [0, 2147483647], 0 meaning never (CANN environment-variable reference,
  HCCL_EXEC_TIMEOUT).

Every bad value is an :class:`~geplug.errors.HcclError` naming the variable, the value and
the accepted range.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import attrs

from geplug.errors import HcclError

__all__ = ["ALGORITHMS", "OP_KINDS", "HcclSettings", "read_settings"]

ALGORITHMS = ("ring", "H-D_R", "NHR", "NHR_V1", "NB", "pipeline", "pairwise")
"""level1 values of HCCL_ALGO."""
OP_KINDS = ("allgather", "reducescatter", "allreduce", "broadcast", "reduce", "scatter",
            "alltoall")
"""Op types HCCL_ALGO may name."""
DEFAULT_EXEC_TIMEOUT_S = 1836.0
EXEC_TIMEOUT_MAX_S = 2147483647
"""HCCL_EXEC_TIMEOUT's maximum on the families that do not round it (A2, A3, Atlas 350)."""
EXEC_TIMEOUT_STEPS_MAX = 255
"""On families that round HCCL_EXEC_TIMEOUT to ``exec_timeout_step_s`` (68 s), the documented
maximum is 17340 s = 255 steps."""
CONNECT_EXTRA_S = 20
"""HCCL waits HCCL_CONNECT_TIMEOUT + 20 s before it reports a set-up failure."""


@attrs.frozen(kw_only=True)
class HcclSettings:
    """The effective HCCL settings of a job."""

    algo: Mapping[str, str] = attrs.field(factory=dict)
    """op kind (or ``*``) -> level1 algorithm; empty: HCCL chooses."""
    buffsize_mb: int = 200
    connect_timeout_s: int = 120
    exec_timeout_s: float = 1836.0

    def algorithm(self, kind: str) -> str:
        """The level1 algorithm the user set for ``kind`` ("" = HCCL's own choice)."""
        base = {"alltoallv": "alltoall", "barrier": "allreduce"}.get(kind, kind)
        return self.algo.get(base) or self.algo.get("*", "")

    @property
    def connect_wait_s(self) -> int:
        """How long set-up waits before the time-out error (the value + 20 s)."""
        return self.connect_timeout_s + CONNECT_EXTRA_S


def _fail(name: str, value: str, why: str, hint: str) -> HcclError:
    return HcclError(f"{name}={value!r}: {why}; {hint}", option=name)


def _levels(name: str, raw: str, text: str) -> str:
    found = ""
    for part in text.split(";"):
        level, sep, algo = part.strip().partition(":")
        if not sep:
            raise _fail(name, raw, f"{part.strip()!r} is not 'levelN:<algo>'",
                        'write e.g. HCCL_ALGO="level0:NA;level1:H-D_R"')
        level, algo = level.strip(), algo.strip()
        if level == "level0":
            if algo != "NA":
                raise _fail(name, raw, f"level0 (inside a server) accepts only NA, got {algo!r}",
                            "set level0:NA")
        elif level in ("level1", "level2"):
            if algo not in ALGORITHMS:
                raise _fail(name, raw, f"{level} algorithm {algo!r} is not one of "
                            + ", ".join(ALGORITHMS), "use one of them")
            if level == "level1":
                found = algo
        else:
            raise _fail(name, raw, f"unknown level {level!r}", "use level0, level1 or level2")
    return found


def _parse_algo(raw: str) -> dict[str, str]:
    name = "HCCL_ALGO"
    out: dict[str, str] = {}
    for item in raw.split("/"):
        item = item.strip()
        if not item:
            continue
        op, sep, rest = item.partition("=")
        if sep:
            op = op.strip()
            if op not in OP_KINDS:
                raise _fail(name, raw, f"op type {op!r} is not one of " + ", ".join(OP_KINDS),
                            'write e.g. HCCL_ALGO="alltoall=level0:NA;level1:pairwise"')
            algo = _levels(name, raw, rest)
            if algo == "pairwise" and op != "alltoall":
                raise _fail(name, raw, f"pairwise is only for alltoall, not {op}",
                            "choose another algorithm for it")
            if algo:
                out[op] = algo
        else:
            algo = _levels(name, raw, item)
            if algo:
                out["*"] = algo
    return out


def _int(env: Mapping[str, str], name: str, default: int, lo: int, hi: int | None) -> int:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    text = raw.strip()
    rng = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
    if not text.isdigit():
        raise _fail(name, raw, f"expected an integer {rng}", f"export {name}={default}")
    value = int(text)
    if value < lo or (hi is not None and value > hi):
        raise _fail(name, raw, f"out of range {rng}", f"export {name}={default}")
    return value


def _exec_timeout(env: Mapping[str, str], step: int) -> float:
    """HCCL_EXEC_TIMEOUT checked against the product's documented range: (0, 255 x step]
    rounded down to a multiple of ``step`` (minimum ``step``) where the product rounds
    (training and inference series: (0, 17340], 17340 = 255 x 68), else [0, 2147483647]
    with 0 meaning never."""
    name = "HCCL_EXEC_TIMEOUT"
    raw = (env.get(name) or "").strip()
    if not raw:
        return DEFAULT_EXEC_TIMEOUT_S
    hi = EXEC_TIMEOUT_STEPS_MAX * step if step else EXEC_TIMEOUT_MAX_S
    rng = f"(0, {hi}]" if step else f"[0, {hi}] (0: never time out)"
    try:
        value = float(raw)
    except ValueError:
        raise _fail(name, raw, f"expected a number of seconds in {rng}",
                    f"export {name}={DEFAULT_EXEC_TIMEOUT_S:g}") from None
    if not (0 < value <= hi if step else 0 <= value <= hi):
        why = (f"out of range {rng} on this product" + (
            f" (it rounds down to a multiple of {step} s; 0 does not turn the time-out off "
            "here)" if step else ""))
        raise _fail(name, raw, why, f"export {name}={DEFAULT_EXEC_TIMEOUT_S:g}")
    if step:
        return float(max(step, int(value) // step * step))
    return value


def read_settings(env: Mapping[str, str] | None = None, *,
                  exec_timeout_step_s: int = 0) -> HcclSettings:
    """The HCCL settings of ``env`` (default ``os.environ``).

    ``exec_timeout_step_s``: the product's rounding of HCCL_EXEC_TIMEOUT (68 on the training
    and inference series, where the value is rounded down to a multiple of it; 0: none).
    """
    env = os.environ if env is None else env
    algo = _parse_algo(env.get("HCCL_ALGO", "") or "")
    buff = _int(env, "HCCL_BUFFSIZE", 200, 1, None)
    connect = _int(env, "HCCL_CONNECT_TIMEOUT", 120, 120, 7200)
    exec_s = _exec_timeout(env, exec_timeout_step_s)
    return HcclSettings(algo=algo, buffsize_mb=buff, connect_timeout_s=connect,
                        exec_timeout_s=exec_s)
