"""The hccl process groups of the job, as torch_npu's profiler reports them.

torch_npu writes ``parallel_group_info`` into ``profiler_metadata.json`` (and the DB's
``META_DATA``) by itself: one entry per ``hccl`` process group, keyed by the HCCL
communicator's name, ``{"group_name", "group_rank", "global_ranks"}``, the world group named
``default_group``. Its ``communication.json`` names each op ``<op>@<hash>``, ``<hash>`` the
decimal ``double_hash`` of that communicator name, and msprof-analyze joins the two through
the same hash (``cluster_analyse/communication_group``).

``distributed_args`` (tp/pp/dp sizes) is not written by torch_npu: Megatron / MindSpeed, or
the user, add it with ``add_metadata_json``; a plain DDP job has none, so geplug writes none.
"""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["ParallelGroup", "double_hash", "parallel_groups"]

_MASK = 0xFFFFFFFF


def double_hash(name: str) -> str:
    """The group id msprof writes after ``@`` in op names: two 32-bit polynomial hashes
    (primes 29 and 131) of the communicator name, high and low word, in decimal."""
    high = low = 0
    for ch in name:
        high = (high * 29 + ord(ch)) & _MASK
        low = (low * 131 + ord(ch)) & _MASK
    return str((high << 32) | low)


@attrs.frozen
class ParallelGroup:
    """One hccl process group: ``group`` is geplug's name for it in the PROF output."""

    group: str
    comm_name: str
    group_name: str
    group_rank: int
    global_ranks: list[int]

    def info(self) -> dict[str, Any]:
        """The ``parallel_group_info`` entry (its key is ``comm_name``)."""
        return {"group_name": self.group_name, "group_rank": self.group_rank,
                "global_ranks": self.global_ranks}


def parallel_groups() -> list[ParallelGroup]:
    """Every geplug ``hccl`` process group this process belongs to (none without
    ``torch.distributed`` or outside a job)."""
    import torch.distributed as dist

    from geplug_torch.distributed.process_group import HcclProcessGroup

    if not (dist.is_available() and dist.is_initialized()):
        return []
    from torch.distributed.distributed_c10d import _get_default_group, _world

    default = _get_default_group()
    me = dist.get_rank()
    found: list[ParallelGroup] = []
    for pg in list(_world.pg_map):
        if not isinstance(pg, HcclProcessGroup):  # a Python backend is its own group
            continue
        found.append(ParallelGroup(
            group=pg.clock.group, comm_name=pg.comm_name,
            group_name="default_group" if pg is default else "",
            group_rank=dist.get_group_rank(pg, me),
            global_ranks=list(dist.get_process_group_ranks(pg))))
    return found

