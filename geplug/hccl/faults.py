"""Faults to rehearse, injected through the environment (docs/distributed.md "Faults").

- ``GEPLUG_SIM_SLOW_RANK=3`` or ``3:4`` (rank[:factor], comma-separated; factor 2): the
  rank computes ``factor`` times slower; the others wait for it in every collective.
- ``GEPLUG_SIM_SLOW_LINK=0-8`` or ``0-8:0.1`` (ranks a-b[:bandwidth factor], factor 0.1):
  the link between a and b runs at that share of its bandwidth.
- ``GEPLUG_SIM_DOWN_LINK=0-8``: the link never comes up: EI0006 after
  HCCL_CONNECT_TIMEOUT + 20 s.
- ``GEPLUG_SIM_ABSENT_RANK=5``: the rank never joins: the others end with EI0006 after
  HCCL_CONNECT_TIMEOUT + 20 s (simulated: nothing hangs).
- ``GEPLUG_SIM_NIC_IP=3=10.0.0.9``: rank 3's NIC really has that address: a rank table
  saying otherwise fails with EI0014.

Every rank's compute time also carries the sourced rank-to-rank variation of
:mod:`geplug.hccl.variation` (``GEPLUG_SIM_RANK_VARIATION``, ``GEPLUG_SIM_SEED``), read here
with the faults so every path that stretches a rank's compute applies both.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import attrs

from geplug.errors import HcclError
from geplug.hccl.variation import RankVariation, read_variation

__all__ = ["ENV", "Faults", "exec_timeout_error", "read_faults"]

ENV = ("GEPLUG_SIM_SLOW_RANK", "GEPLUG_SIM_SLOW_LINK", "GEPLUG_SIM_DOWN_LINK",
       "GEPLUG_SIM_ABSENT_RANK", "GEPLUG_SIM_NIC_IP")
DEFAULT_SLOW_FACTOR = 2.0
DEFAULT_LINK_FACTOR = 0.1


@attrs.frozen(kw_only=True)
class Faults:
    """The injected faults of a job."""

    slow_ranks: Mapping[int, float] = attrs.field(factory=dict)
    """rank -> compute slow-down factor (> 1)."""
    slow_links: Mapping[tuple[int, int], float] = attrs.field(factory=dict)
    """(low rank, high rank) -> bandwidth factor in (0, 1]."""
    down_links: frozenset[tuple[int, int]] = frozenset()
    absent_ranks: frozenset[int] = frozenset()
    nic_ips: Mapping[int, str] = attrs.field(factory=dict)
    variation: RankVariation = attrs.field(factory=RankVariation)
    """Rank-to-rank compute variation (off unless read from the environment)."""

    def compute_factor(self, rank: int, size: int) -> float:
        """How many times its calibrated compute time ``rank`` of a ``size``-rank job takes:
        its slow-rank factor times its variation factor (a one-rank job has no variation)."""
        varied = self.variation.factor(rank) if size > 1 else 1.0
        return self.slow_ranks.get(rank, 1.0) * varied

    def link_factor(self, a: int, b: int) -> float:
        """The bandwidth share of the link between ``a`` and ``b``."""
        return self.slow_links.get((min(a, b), max(a, b)), 1.0)

    def check_ranks(self, size: int) -> None:
        """Every rank named must be in the job."""
        named = [*self.slow_ranks, *self.absent_ranks, *self.nic_ips,
                 *(r for pair in [*self.slow_links, *self.down_links] for r in pair)]
        bad = sorted({r for r in named if not 0 <= r < size})
        if bad:
            raise HcclError(f"fault injection names rank {bad[0]} but the job has {size} ranks "
                            f"(0..{size - 1}); fix {', '.join(ENV)}", ranks=bad,
                            option="GEPLUG_SIM_*")


def exec_timeout_error(op_name: str, group: str, late: Sequence[int], waiter: int,
                       waited_s: float, timeout_s: float, *, simulated: bool) -> HcclError:
    """HCCL's EI0002 (communication operation time-out): ``waiter`` waited ``waited_s`` at
    ``op_name`` of ``group`` for ``late`` longer than HCCL_EXEC_TIMEOUT ``timeout_s``.

    The wording is HCCL's ("The wait execution of the Notify register times out. Reason:
    The Notify register has not received the Notify record from remote rank [..]"), then
    what geplug knows: who waited how long (simulated device time, or really waited on the
    host) and the documented fixes."""
    listing = ", ".join(str(r) for r in late[:16]) + (" ..." if len(late) > 16 else "")
    how = "simulated" if simulated else "waited"
    return HcclError(
        f"EI0002: The wait execution of the Notify register times out. Reason: The Notify "
        f"register has not received the Notify record from remote rank [{listing}]. task "
        f"information: [{op_name}], group information: [{group}]: rank {waiter} waited "
        f"{waited_s:.1f} s ({how}) > HCCL_EXEC_TIMEOUT {timeout_s:g} s. Check whether rank(s) "
        f"{listing} exited, hung or issue different collectives (e.g. a different number of "
        "training samples); if they are only slow (saving a checkpoint), find why or raise "
        "HCCL_EXEC_TIMEOUT", code="EI0002", ranks=list(late), option="HCCL_EXEC_TIMEOUT")


def _rank(name: str, raw: str, text: str) -> int:
    text = text.strip()
    if not text.isdigit():
        raise HcclError(f"{name}={raw!r}: {text!r} is not a rank number; e.g. {name}=3",
                        option=name)
    return int(text)


def _factor(name: str, raw: str, text: str, lo: float, hi: float | None) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > lo if hi is None else lo < value <= hi):
        rng = f"> {lo:g}" if hi is None else f"in ({lo:g}, {hi:g}]"
        raise HcclError(f"{name}={raw!r}: factor {text!r} must be a number {rng}",
                        option=name)
    return value


def _pair(name: str, raw: str, text: str) -> tuple[int, int]:
    a, sep, b = text.partition("-")
    if not sep:
        raise HcclError(f"{name}={raw!r}: {text!r} is not 'a-b' (two rank numbers); e.g. "
                        f"{name}=0-8", option=name)
    ra, rb = _rank(name, raw, a), _rank(name, raw, b)
    if ra == rb:
        raise HcclError(f"{name}={raw!r}: a link joins two different ranks", option=name)
    return (min(ra, rb), max(ra, rb))


def read_faults(env: Mapping[str, str] | None = None) -> Faults:
    """The faults ``env`` (default ``os.environ``) injects and its rank variation (on by
    default); HcclError naming a bad value."""
    env = os.environ if env is None else env
    slow: dict[int, float] = {}
    name = "GEPLUG_SIM_SLOW_RANK"
    raw = env.get(name, "")
    for item in filter(None, (i.strip() for i in raw.split(","))):
        r, sep, f = item.partition(":")
        slow[_rank(name, raw, r)] = _factor(name, raw, f, 1.0, None) if sep else \
            DEFAULT_SLOW_FACTOR
    links: dict[tuple[int, int], float] = {}
    name = "GEPLUG_SIM_SLOW_LINK"
    raw = env.get(name, "")
    for item in filter(None, (i.strip() for i in raw.split(","))):
        p, sep, f = item.partition(":")
        links[_pair(name, raw, p)] = _factor(name, raw, f, 0.0, 1.0) if sep else \
            DEFAULT_LINK_FACTOR
    name = "GEPLUG_SIM_DOWN_LINK"
    raw = env.get(name, "")
    down = frozenset(_pair(name, raw, i) for i in raw.split(",") if i.strip())
    name = "GEPLUG_SIM_ABSENT_RANK"
    raw = env.get(name, "")
    absent = frozenset(_rank(name, raw, i) for i in raw.split(",") if i.strip())
    ips: dict[int, str] = {}
    name = "GEPLUG_SIM_NIC_IP"
    raw = env.get(name, "")
    for item in filter(None, (i.strip() for i in raw.split(","))):
        r, sep, ip = item.partition("=")
        if not sep or not ip.strip():
            raise HcclError(f"{name}={raw!r}: {item!r} is not 'rank=ip'; e.g. "
                            f"{name}=3=10.0.0.9", option=name)
        ips[_rank(name, raw, r)] = ip.strip()
    return Faults(slow_ranks=slow, slow_links=links, down_links=down, absent_ranks=absent,
                  nic_ips=ips, variation=read_variation(env))
