"""Rank-to-rank compute-time variation: identical chips do not run at identical speed.

Source: Sinha et al., "Not All GPUs Are Created Equal: Characterizing Variability in
Large-Scale, Accelerator-Rich Systems", SC22 (arXiv:2208.11035). Over more than 90% of the
GPUs of five clusters (one SKU per cluster) they measured an average performance variation of
8% (max 22%) running the same kernels, with outliers up to 1.5x slower than the median GPU;
the cause is manufacturing variability under power management, so it is a property of the
chip, stable from step to step.

The model: rank ``r`` computes ``1 + sigma * z_r`` times its calibrated time, ``z_r`` a
standard normal drawn from ``numpy.random.default_rng([seed, r])`` and truncated to +-3 (the
paper's outliers are what ``GEPLUG_SIM_SLOW_RANK`` rehearses). The default ``sigma`` is
8% / 5.4 = 1.5%: the whisker span of a normal's box plot (+-2.7 sigma) is the paper's 8%
average variation. Per-step (run-to-run) jitter of one chip is not modelled.

- ``GEPLUG_SIM_RANK_VARIATION``: ``sigma`` as a fraction in [0, 0.3], default 0.015;
  ``0`` turns the variation off (every rank computes at the calibrated speed).
- ``GEPLUG_SIM_SEED``: integer >= 0, default 0: which ranks are faster and slower.

A job of one rank never varies (there is nothing to compare it with). docs/distributed.md
"Rank-to-rank variation".
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import lru_cache

import attrs
import numpy as np

from geplug.errors import HcclError

__all__ = ["DEFAULT_SIGMA", "ENV", "MAX_SIGMA", "RankVariation", "read_variation"]

ENV = ("GEPLUG_SIM_RANK_VARIATION", "GEPLUG_SIM_SEED")
DEFAULT_SIGMA = 0.015
"""8% average variation (Sinha et al., SC22) / 5.4 (a normal's +-2.7 sigma whisker span)."""
MAX_SIGMA = 0.3
"""The largest sigma accepted: +-3 sigma keeps every factor above 0.1."""
TRUNCATE = 3.0


@attrs.frozen(kw_only=True)
class RankVariation:
    """Each rank's persistent compute-speed factor (see the module docstring)."""

    sigma: float = 0.0
    """Standard deviation of the factor (0: off)."""
    seed: int = 0

    def factor(self, rank: int) -> float:
        """How much longer ``rank`` computes than the calibrated time (1.0 when off)."""
        if not self.sigma:
            return 1.0
        return 1.0 + self.sigma * _z(self.seed, rank)


@lru_cache(maxsize=1 << 16)
def _z(seed: int, rank: int) -> float:
    """Rank ``rank``'s truncated standard normal under ``seed`` (cached: asked per op)."""
    z = float(np.random.default_rng([seed, rank]).standard_normal())
    return min(TRUNCATE, max(-TRUNCATE, z))


def read_variation(env: Mapping[str, str] | None = None) -> RankVariation:
    """The variation ``env`` (default ``os.environ``) sets; HcclError naming a bad value."""
    env = os.environ if env is None else env
    name = "GEPLUG_SIM_RANK_VARIATION"
    raw = (env.get(name) or "").strip()
    sigma = DEFAULT_SIGMA
    if raw:
        try:
            sigma = float(raw)
        except ValueError:
            sigma = float("nan")
        if not 0.0 <= sigma <= MAX_SIGMA:
            raise HcclError(f"{name}={raw!r}: expected the standard deviation of a rank's "
                            f"compute speed as a fraction in [0, {MAX_SIGMA:g}] (0 turns the "
                            f"variation off); e.g. {name}={DEFAULT_SIGMA:g}", option=name)
    name = "GEPLUG_SIM_SEED"
    raw = (env.get(name) or "").strip()
    seed = 0
    if raw:
        if not raw.isdigit():
            raise HcclError(f"{name}={raw!r} is not an integer >= 0; e.g. {name}=0",
                            option=name)
        seed = int(raw)
    return RankVariation(sigma=sigma, seed=seed)
