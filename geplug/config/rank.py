"""Rank information: configuration input read from the environment (options.md §14, §15.2).

:func:`read_rank_info` reads RANK_TABLE_FILE (validated by :mod:`geplug.config.rank_table`),
RANK_ID / POD_NAME, RANK_SIZE, ASCEND_DEVICE_ID and DEVICE_ID with the real stack's
priorities. The HCCL rank queries over it (``get_rank_id`` ...) are in
:mod:`geplug.runtime.rank`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import attrs

from geplug.config.rank_table import Table, TableIssue, TableRank, read_rank_table
from geplug.config.text import signed_digits
from geplug.errors import ConfigError
from geplug.products.schema import Product

__all__ = ["WORLD_GROUP", "RankInfo", "read_rank_info", "read_rank_table"]

WORLD_GROUP = "hccl_world_group"


@attrs.frozen(kw_only=True)
class RankInfo:
    """This process's place in the job.

    ``source`` says where it came from (``rank table`` or ``environment``); ``table_version``
    is "" without a table (``1.0``, ``1.2``, ``2.0``, ``legacy`` otherwise).
    """

    rank_id: int = 0
    rank_size: int = 1
    local_rank_id: int = 0
    local_rank_size: int = 1
    device_id: int = 0
    server_id: str = ""
    source: str = "default"
    table_path: str = ""
    table_version: str = ""
    table_warnings: tuple[TableIssue, ...] = ()
    """What the table may do but should not (ports in [1, 1023], options.md §15.3)."""


def _env_int(env: Mapping[str, str], name: str, *, minimum: int = 0) -> int | None:
    from geplug.config.problems import Problem

    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return None
    text = raw.strip()
    if not signed_digits(text):
        raise ConfigError([Problem(option=name, value=raw, severity="error",
                                   message=f"{name} is invalid, should be int, such as 0, 1, 2.",
                                   hint=f"export {name}=0")], source="environment")
    value = int(text)
    if value < minimum:
        raise ConfigError([Problem(option=name, value=raw, severity="error",
                                   message=f"{name} should be >= {minimum}.",
                                   hint=f"export {name}={minimum}")], source="environment")
    return value


def read_rank_info(env: Mapping[str, str] | None, product: Product) -> RankInfo:
    """This process's rank information for ``product`` (options.md §14-15).

    With RANK_TABLE_FILE: the table (validated) gives rank size, the device id (overriding
    ASCEND_DEVICE_ID) and the local ranks; this process is POD_NAME (legacy template) or
    RANK_ID (default 0), which must be in the table. Without: RANK_ID (0), RANK_SIZE (1),
    ASCEND_DEVICE_ID > DEVICE_ID > 0, one server. Raises :class:`RankTableError` or
    :class:`ConfigError` naming the file/field or the variable.
    """
    from geplug.config.problems import Problem

    env = os.environ if env is None else env
    if env.get("RANK_SIZE") and env.get("CM_WORKER_SIZE"):
        raise ConfigError([Problem(option="RANK_SIZE", value=env["RANK_SIZE"], severity="error",
                                   message="RANK_SIZE and CM_WORK_SIZE cannot be configured at "
                                           "the same time", hint="unset one of them")],
                          source="environment")
    device = _env_int(env, "ASCEND_DEVICE_ID")
    if device is None:
        device = _env_int(env, "DEVICE_ID")
    device = device or 0
    path = env.get("RANK_TABLE_FILE") or ""
    if not path:
        rank_size = min(_env_int(env, "RANK_SIZE", minimum=1) or 1, 2**32 - 1)
        rank_id = _env_int(env, "RANK_ID") or 0
        if rank_id >= rank_size:
            raise ConfigError([Problem(option="RANK_ID", value=env.get("RANK_ID"),
                                       severity="error",
                                       message=f"RANK_ID {rank_id} is not below RANK_SIZE "
                                               f"{rank_size}",
                                       hint="export RANK_ID in [0, RANK_SIZE-1]")],
                              source="environment")
        return RankInfo(rank_id=rank_id, rank_size=rank_size, local_rank_id=rank_id,
                        local_rank_size=rank_size, device_id=device,
                        source="environment" if "RANK_ID" in env or "RANK_SIZE" in env
                        else "default")
    table_warnings: list[TableIssue] = []
    version, ranks = read_rank_table(path, product, env, warnings=table_warnings)
    t = Table(path)
    me: TableRank | None = None
    pod = env.get("POD_NAME")
    if version == "legacy" and pod:
        me = next((r for r in ranks if r.pod == pod), None)
        if me is None:
            raise t.fail("pod_name", f"POD_NAME {pod!r} is not in the table", value=pod,
                         option="POD_NAME", hint="export POD_NAME as one of the table's "
                         "pod_name values: " + ", ".join(r.pod for r in ranks[:8]))
    else:
        ids = f"0..{len(ranks) - 1}" if len(ranks) > 1 else "0"
        wanted = _env_int(env, "RANK_ID")
        if wanted is None:
            if len(ranks) > 1:
                raise t.fail("rank_id", "RANK_ID is not set and the table has "
                             f"{len(ranks)} ranks", option="RANK_ID",
                             hint=f"export RANK_ID=<this process's rank_id, {ids}>")
            wanted = ranks[0].rank_id
        me = next((r for r in ranks if r.rank_id == wanted), None)
        if me is None:
            raise t.fail("rank_id", f"RANK_ID {wanted} is not a rank_id of the table",
                         value=env.get("RANK_ID"), option="RANK_ID",
                         hint=f"export RANK_ID as this process's rank_id ({ids})")
    size_env = _env_int(env, "RANK_SIZE", minimum=1)
    if size_env is not None and size_env != len(ranks):
        raise t.fail("rank_id", f"RANK_SIZE is {size_env} but the table has {len(ranks)} ranks",
                     value=env.get("RANK_SIZE"), option="RANK_SIZE",
                     hint=f"export RANK_SIZE={len(ranks)} or unset it")
    local = sorted(r.rank_id for r in ranks if r.server == me.server)
    return RankInfo(rank_id=me.rank_id, rank_size=len(ranks),
                    local_rank_id=local.index(me.rank_id), local_rank_size=len(local),
                    device_id=me.device_id, server_id=me.server, source="rank table",
                    table_path=path, table_version=version,
                    table_warnings=tuple(table_warnings))
