"""The rank environment of a ``torch.distributed`` job on the ``hccl`` backend, checked.

torchrun gives each process ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK``; the Ascend stack
reads ``RANK_TABLE_FILE``, ``RANK_ID``, ``RANK_SIZE``, ``DEVICE_ID`` / ``ASCEND_DEVICE_ID``.
When both are given they must agree: a mismatch is an :class:`~geplug.errors.HcclError`
naming the variable, both values and the fix (on a real cluster it surfaces much later as a
hang or a wrong device). The job's topology comes from the rank table (validated as
``RANK_TABLE_FILE`` always is) or, without one, from the world size over the product's
servers (:meth:`geplug.hccl.Topology.generated`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from typing import Any

import attrs

from geplug.errors import GeplugError, HcclError
from geplug.hccl import Faults, HcclSettings, Topology, read_faults, read_settings

__all__ = ["PRODUCT_ENV", "JobEnv", "rank_compute_factor", "read_job_env", "resolve_product"]

PRODUCT_ENV = "GEPLUG_PRODUCT"
"""The product an ``hccl`` process group simulates when no ``geplug_torch.backend(...)``
was made in the process before ``init_process_group``."""


@attrs.frozen(kw_only=True)
class JobEnv:
    """This process's place in the job and the job's HCCL model inputs."""

    product: Any
    rank: int
    size: int
    device_id: int
    topology: Topology
    settings: HcclSettings
    faults: Faults


def resolve_product(env: Mapping[str, str]) -> Any:
    """The product: the first live ``geplug_torch.backend`` system's, else ``GEPLUG_PRODUCT``."""
    from geplug_torch.steps import runtimes

    live = runtimes()
    if live:
        return live[0].system.product
    name = (env.get(PRODUCT_ENV) or "").strip()
    if not name:
        raise HcclError(
            "init_process_group('hccl'): which simulated product? Make "
            "geplug_torch.backend(product=...) before init_process_group, or "
            f"export {PRODUCT_ENV}=<product> (e.g. atlas_a2; `geplug products` lists them)",
            option=PRODUCT_ENV)
    from geplug.plugin import get_manager

    try:
        return get_manager().products().get(name)
    except GeplugError as exc:  # unknown product: its message lists the close names
        raise HcclError(f"{PRODUCT_ENV}={name!r}: {exc}", option=PRODUCT_ENV) from None


def _int(env: Mapping[str, str], name: str) -> int | None:
    raw = (env.get(name) or "").strip()
    if not raw:
        return None
    if not raw.isdigit():
        raise HcclError(f"{name}={raw!r} is not a non-negative integer; export {name}=0",
                        option=name)
    return int(raw)


def _mismatch(name: str, value: int, what: str, expected: int, hint: str) -> HcclError:
    return HcclError(f"{name}={value} but {what} is {expected}: the hccl backend and the Ascend "
                     f"rank environment disagree; {hint}", option=name)


def read_job_env(product: Any, rank: int, size: int,
                 env: MutableMapping[str, str] | None = None) -> JobEnv:
    """Check ``env`` (default ``os.environ``) against torch's ``rank`` / ``size`` and build
    the job's topology. Missing Ascend variables are filled in as a launcher would
    (``RANK_ID``, ``RANK_SIZE``; ``DEVICE_ID`` = ``LOCAL_RANK`` without a table), so every
    geplug system this process opens later knows its rank."""
    env = os.environ if env is None else env
    rank_id = _int(env, "RANK_ID")
    if rank_id is not None and rank_id != rank:
        raise _mismatch("RANK_ID", rank_id, "torch.distributed's rank (RANK)", rank,
                        f"export RANK_ID={rank} for this process or unset RANK_ID")
    rank_size = _int(env, "RANK_SIZE")
    if rank_size is not None and rank_size != size:
        raise _mismatch("RANK_SIZE", rank_size, "the world size (WORLD_SIZE)", size,
                        f"export RANK_SIZE={size} or unset RANK_SIZE")
    table = env.get("RANK_TABLE_FILE") or ""
    if table:
        topo = Topology.from_rank_table(product, table, env)
        if topo.size != size:
            raise HcclError(f"RANK_TABLE_FILE {table!r} lists {topo.size} ranks but the job has "
                            f"WORLD_SIZE {size}: launch {topo.size} processes or use the "
                            "table of this job", option="RANK_TABLE_FILE")
        place = next((p for p in topo.places if p.rank == rank), None)
        if place is None:
            raise HcclError(f"RANK_TABLE_FILE {table!r} has no rank_id {rank} (this process's "
                            "RANK); rank_ids must be 0..WORLD_SIZE-1", option="RANK_TABLE_FILE")
        device = place.device_id
        for name in ("ASCEND_DEVICE_ID", "DEVICE_ID"):
            given = _int(env, name)
            if given is not None and given != device:
                raise _mismatch(name, given, f"rank {rank}'s device_id in {table!r}", device,
                                f"export {name}={device} or unset it (the table decides)")
    else:
        topo = Topology.generated(product, size)
        local = _int(env, "LOCAL_RANK")
        found = _int(env, "ASCEND_DEVICE_ID")
        if found is None:
            found = _int(env, "DEVICE_ID")
        if found is None:
            found = local if local is not None else topo.places[rank].device_id
        device = found
        env.setdefault("DEVICE_ID", str(device))
    env.setdefault("RANK_ID", str(rank))
    env.setdefault("RANK_SIZE", str(size))
    faults = read_faults(env)
    faults.check_ranks(size)
    topo.check_device_ips(faults.nic_ips)
    settings = read_settings(env, exec_timeout_step_s=topo.caps.exec_timeout_step_s)
    return JobEnv(product=product, rank=rank, size=size, device_id=device, topology=topo,
                  settings=settings, faults=faults)


def rank_compute_factor(env: Mapping[str, str]) -> float:
    """How many times its calibrated time this process's device compute takes: in a job of
    2+ ranks (``RANK_ID`` / ``RANK`` of ``RANK_SIZE`` / ``WORLD_SIZE``, as torchrun sets
    them), the slow-rank factor times the rank-to-rank variation of
    :meth:`geplug.hccl.Faults.compute_factor`; 1.0 in a process outside such a job."""
    rank = _int(env, "RANK_ID")
    if rank is None:
        rank = _int(env, "RANK")
    size = _int(env, "RANK_SIZE")
    if size is None:
        size = _int(env, "WORLD_SIZE")
    if rank is None or size is None or size < 2 or rank >= size:
        return 1.0
    return read_faults(env).compute_factor(rank, size)
