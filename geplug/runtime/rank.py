"""The HCCL rank queries (options.md §15.4): ``get_rank_id`` and friends.

They answer from the system opened by :func:`geplug.initialize_system` and refuse clearly
before it. Reading the rank information is configuration input (:mod:`geplug.config.rank`,
re-exported here for the names it always had).
"""

from __future__ import annotations

from typing import Any

from geplug.config.rank import WORLD_GROUP, RankInfo, read_rank_info, read_rank_table
from geplug.errors import NotInitializedError

__all__ = [
    "WORLD_GROUP",
    "RankInfo",
    "get_local_rank_id",
    "get_local_rank_size",
    "get_rank_id",
    "get_rank_size",
    "read_rank_info",
    "read_rank_table",
]


def _info(group: Any) -> RankInfo:
    from geplug.errors import RankQueryError

    if not isinstance(group, str):
        raise RankQueryError("group must be a python str", group=repr(group))
    if not group:
        raise RankQueryError("group name is empty.", group=group)
    if len(group) > 127:
        raise RankQueryError(f"group name is invalid. group: {group[:40]}... (longer than 127 "
                             "characters)", group=group)
    from geplug.runtime.api import current_system

    system = current_system()
    if not system.product.runtime.rank_queries:
        raise NotInitializedError(
            f"HCCL rank queries are not available on {system.product.display_name} "
            "(runtime.rank_queries = false)")
    if group != WORLD_GROUP:
        raise RankQueryError(f"group {group!r} does not exist: only {WORLD_GROUP!r} is created "
                             "by initialize_system", group=group)
    rank = system.rank
    if not isinstance(rank, RankInfo):
        return RankInfo()
    return rank


def get_rank_id(group: str = WORLD_GROUP) -> int:
    """This process's rank in ``group``; needs :func:`geplug.initialize_system` first."""
    return _info(group).rank_id


def get_rank_size(group: str = WORLD_GROUP) -> int:
    """The number of ranks in ``group``; needs :func:`geplug.initialize_system` first."""
    return _info(group).rank_size


def get_local_rank_id(group: str = WORLD_GROUP) -> int:
    """This process's index among the ranks of ``group`` on its server."""
    return _info(group).local_rank_id


def get_local_rank_size(group: str = WORLD_GROUP) -> int:
    """The number of ranks of ``group`` on this process's server."""
    return _info(group).local_rank_size
