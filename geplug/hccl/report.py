"""One rank's view of a modelled collective, as the profiling writers consume it.

Every front end (the ONNX cluster runner, the torch ``hccl`` process group) turns the HCCL
model's :class:`~geplug.hccl.model.CollectiveCost` into a :class:`geplug.events.CommInfo`
the same way, so communication.json and the matrix mean the same thing whichever ran the job.
"""

from __future__ import annotations

from geplug.events import CommInfo
from geplug.hccl.model import CollectiveCost

__all__ = ["comm_info"]


def comm_info(hccl_name: str, kind: str, cost: CollectiveCost, rank: int, size: int,
              sync_us: float, elapse_us: float, group: str = "hccl_world_group") -> CommInfo:
    """Rank ``rank``'s :class:`CommInfo` of the collective ``hccl_name``.

    ``sync_us``: its wait for the last rank to arrive; ``elapse_us``: arrival to the end.
    Transit is the model's per-rank transit, capped by what is left after synchronising;
    everything else of the task is wait (msprof's definitions)."""
    rc = cost.ranks[rank]
    transit = min(rc.transit_us, max(elapse_us - sync_us, 0.0))
    return CommInfo(
        hccl_name=hccl_name, kind=kind, algorithm=cost.algorithm, group=group, rank=rank,
        rank_size=size, nbytes=cost.nbytes, transit_us=transit,
        wait_us=max(elapse_us - transit, 0.0), sync_us=sync_us,
        links=tuple((k, v[0], v[1]) for k, v in sorted(rc.links.items())),
        peers=tuple((rank, int(d), str(v[0]), float(v[1]), float(v[2]))  # type: ignore[arg-type]
                    for d, v in sorted(rc.peers.items())),
    )
