"""Rank-table files (RANK_TABLE_FILE): v1.0, the legacy template, v1.2 and v2.0, validated with
errors naming the file and the field (options.md §15.3, §15.4).

The versions a product accepts are ``product.runtime.rank_table_versions`` (the legacy template
is spelled ``"legacy"`` there).
"""

from __future__ import annotations

import ipaddress
import itertools
import json
import os
from collections.abc import Mapping
from typing import Any

import attrs

from geplug.config.text import digits
from geplug.errors import RankTableError
from geplug.products.schema import Product

__all__ = ["MAX_TABLE_BYTES", "Table", "TableRank", "read_rank_table"]

MAX_TABLE_BYTES = 1 << 30
"""v2.0 tables may be up to 1 GB (options.md §15.3)."""


@attrs.frozen
class TableRank:
    """One rank of a table: its id, physical device, server (and pod for the legacy template)."""

    rank_id: int
    device_id: int
    server: str
    pod: str = ""


class Table:
    """Validation helpers that raise RankTableError naming the file and the field."""

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, field: str, message: str, code: str = "") -> RankTableError:
        return RankTableError(f"rank table {self.path!r}: {field}: {message}", path=self.path,
                              field=field, code=code)

    def obj(self, value: Any, field: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(field, f"expected a JSON object, got {_kind(value)}")
        return value

    def items(self, value: Any, field: str, *, limit: int | None = None,
              required: bool = True) -> list[Any]:
        if value is None and not required:
            return []
        if not isinstance(value, list) or (required and not value):
            raise self.fail(field, f"expected a non-empty JSON array, got {_kind(value)}")
        if limit is not None and len(value) > limit:
            raise self.fail(field, f"has {len(value)} entries; at most {limit} allowed")
        return value

    def digits(self, data: dict[str, Any], key: str, field: str, *, lo: int = 0,
               hi: int | None = None, required: bool = True) -> int | None:
        """A string of digits (v1.x tables: all values are strings)."""
        value = data.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, str) or not digits(value):
            raise self.fail(field, f"expected a string of digits, got {_kind(value)}")
        number = int(value)
        if number < lo or (hi is not None and number > hi):
            raise self.fail(field, f"{number} is outside [{lo}, {hi}]")
        return number

    def integer(self, data: dict[str, Any], key: str, field: str, *, lo: int, hi: int,
                required: bool = True) -> int | None:
        """A JSON int (v2.0 tables)."""
        value = data.get(key)
        if value is None and not required:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(field, f"expected a JSON integer, got {_kind(value)}")
        if not lo <= value <= hi:
            raise self.fail(field, f"{value} is outside [{lo}, {hi}]")
        return value

    def text(self, data: dict[str, Any], key: str, field: str, *, max_len: int = 256,
             required: bool = True) -> str | None:
        value = data.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, str) or not value or len(value) > max_len:
            raise self.fail(field, f"expected a string of 1-{max_len} characters, got "
                            f"{_kind(value)}")
        return value

    def ip(self, data: dict[str, Any], key: str, field: str, *, required: bool) -> None:
        value = data.get(key)
        if value is None and not required:
            return
        try:
            ipaddress.ip_address(str(value))
        except ValueError:
            raise self.fail(field, f"{value!r} is not an IPv4/IPv6 address") from None

    def port(self, data: dict[str, Any], key: str, field: str, *, as_int: bool) -> None:
        if key not in data:
            return
        value = data[key]
        if as_int:
            self.integer(data, key, field, lo=1, hi=65535)
        else:
            self.digits(data, key, field, lo=1, hi=65535)
        del value


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (missing)"
    return f"{type(value).__name__} {str(value)[:60]!r}"


def read_rank_table(path: str, product: Product, env: Mapping[str, str] | None = None
                    ) -> tuple[str, list[TableRank]]:
    """Validate the rank table at ``path`` for ``product``; returns (version, ranks)."""
    env = {} if env is None else env
    t = Table(path)
    try:
        if os.path.getsize(path) > MAX_TABLE_BYTES:
            raise t.fail("<file>", "larger than 1 GB")
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise t.fail("<file>", f"path {path} is not a valid real path (file not found); set "
                     "RANK_TABLE_FILE to an existing rank table", code="EI0004") from None
    except IsADirectoryError:
        raise t.fail("<file>", "is a directory, not a rank table JSON file",
                     code="EI0004") from None
    except OSError as exc:
        raise t.fail("<file>", f"cannot read: {exc.strerror or exc}", code="EI0004") from None
    except (ValueError, RecursionError) as exc:
        raise t.fail("<file>", f"not valid JSON (comments are not allowed): {exc}") from None
    data = t.obj(data, "<root>")
    if "version" in data:
        version = data["version"]
        if version not in ("1.0", "1.2", "2.0"):
            raise t.fail("version", f"unknown version {version!r}; expected \"1.0\", \"1.2\" "
                         "or \"2.0\"")
    elif "group_list" in data:
        version = "legacy"
    else:
        raise t.fail("version", "missing: a rank table needs \"version\" (or the legacy "
                     "template's group_list)")
    accepted = product.runtime.rank_table_versions
    if version not in accepted:
        raise t.fail("version", f"{version!r} is not accepted on {product.display_name} "
                     f"(accepted: {', '.join(accepted) or 'none'})")
    status = data.get("status")
    if version != "2.0" or status is not None:
        if status not in ("completed", "initializing"):
            raise t.fail("status", f"expected \"completed\", got {_kind(status)}")
        if status == "initializing":
            raise t.fail("status", "\"initializing\": the table is not usable yet; wait for "
                         "\"completed\"")
    if version == "2.0":
        ranks = _v20(t, data)
    elif version == "legacy":
        ranks = _template2(t, data)
    else:
        ranks = _v1x(t, data, version, env)
    _check_rank_ids(t, ranks, "rank_list" if version == "2.0" else "rank_id")
    return version, ranks


def _v1x(t: Table, data: dict[str, Any], version: str, env: Mapping[str, str]) -> list[TableRank]:
    servers = t.items(data.get("server_list"), "server_list")
    count = t.digits(data, "server_count", "server_count", lo=1, required=version == "1.0")
    if count is not None and count != len(servers):
        raise t.fail("server_count", f"says {count} but server_list has {len(servers)} servers")
    seen_servers: set[str] = set()
    ranks: list[TableRank] = []
    for si, server in enumerate(servers):
        sf = f"server_list[{si}]"
        server = t.obj(server, sf)
        sid = t.text(server, "server_id", f"{sf}.server_id", max_len=64)
        assert sid is not None
        if sid in seen_servers:
            raise t.fail(f"{sf}.server_id", f"{sid!r} appears twice; server ids must be unique")
        seen_servers.add(sid)
        t.ip(server, "host_ip", f"{sf}.host_ip", required=False)
        devices = t.items(server.get("device"), f"{sf}.device")
        seen_dev: set[int] = set()
        for di, dev in enumerate(devices):
            df = f"{sf}.device[{di}]"
            dev = t.obj(dev, df)
            device_id = t.digits(dev, "device_id", f"{df}.device_id", hi=64)
            assert device_id is not None
            if device_id in seen_dev:
                raise t.fail(f"{df}.device_id", f"{device_id} appears twice on {sid!r}")
            seen_dev.add(device_id)
            need_ip = len(servers) > 1 if version == "1.0" else (
                env.get("HCCL_INTER_HCCS_DISABLE", "").upper() == "TRUE"
                or len(data.get("super_pod_list") or []) > 1)
            t.ip(dev, "device_ip", f"{df}.device_ip", required=need_ip)
            for port in ("device_port", "backup_device_port", "host_port"):
                t.port(dev, port, f"{df}.{port}", as_int=False)
            if version == "1.2":
                if "super_device_id" in dev and not str(dev["super_device_id"]).strip():
                    raise t.fail(f"{df}.super_device_id", "super_device_id[] is invalid "
                                 "(empty)", code="EI0004")
                t.ip(dev, "backup_device_ip", f"{df}.backup_device_ip", required=False)
            rank_id = t.digits(dev, "rank_id", f"{df}.rank_id")
            assert rank_id is not None
            ranks.append(TableRank(rank_id=rank_id, device_id=device_id, server=sid))
    if version == "1.2" and "super_pod_list" in data:
        pods = t.items(data["super_pod_list"], "super_pod_list")
        seen_pods: set[str] = set()
        for pi, pod in enumerate(pods):
            pf = f"super_pod_list[{pi}]"
            pod = t.obj(pod, pf)
            pid = t.text(pod, "super_pod_id", f"{pf}.super_pod_id")
            if pid in seen_pods:
                raise t.fail(f"{pf}.super_pod_id", f"{pid!r} appears twice")
            seen_pods.add(str(pid))
            for ji, entry in enumerate(t.items(pod.get("server_list"), f"{pf}.server_list")):
                entry = t.obj(entry, f"{pf}.server_list[{ji}]")
                ref = t.text(entry, "server_id", f"{pf}.server_list[{ji}].server_id", max_len=64)
                if ref not in seen_servers:
                    raise t.fail(f"{pf}.server_list[{ji}].server_id",
                                 f"{ref!r} is not a server of server_list")
    # ranks must not interleave across servers (server 1 {0..3}, server 2 {4..7})
    by_server: dict[str, list[int]] = {}
    for r in ranks:
        by_server.setdefault(r.server, []).append(r.rank_id)
    spans = sorted((min(v), max(v), k) for k, v in by_server.items())
    for (_, hi, a), (lo, _, b) in itertools.pairwise(spans):
        if lo <= hi:
            raise t.fail("rank_id", f"ranks of servers {a!r} and {b!r} interleave; give each "
                         "server a contiguous block of rank ids")
    return ranks


def _template2(t: Table, data: dict[str, Any]) -> list[TableRank]:
    groups = t.items(data.get("group_list"), "group_list")
    ranks: list[TableRank] = []
    for gi, group in enumerate(groups):
        gf = f"group_list[{gi}]"
        group = t.obj(group, gf)
        t.text(group, "group_name", f"{gf}.group_name")
        instances = t.items(group.get("instance_list"), f"{gf}.instance_list")
        count = t.digits(group, "instance_count", f"{gf}.instance_count", required=False)
        if count is not None and count != len(instances):
            raise t.fail(f"{gf}.instance_count", f"says {count} but instance_list has "
                         f"{len(instances)}")
        for ii, inst in enumerate(instances):
            inf = f"{gf}.instance_list[{ii}]"
            inst = t.obj(inst, inf)
            pod = t.text(inst, "pod_name", f"{inf}.pod_name")
            sid = t.text(inst, "server_id", f"{inf}.server_id", max_len=64)
            devices = t.items(inst.get("devices"), f"{inf}.devices")
            dev = t.obj(devices[0], f"{inf}.devices[0]")
            device_id = t.digits(dev, "device_id", f"{inf}.devices[0].device_id", hi=64)
            t.ip(dev, "device_ip", f"{inf}.devices[0].device_ip", required=False)
            assert pod is not None and sid is not None and device_id is not None
            rank_id = int(pod) if digits(pod) else len(ranks)
            ranks.append(TableRank(rank_id=rank_id, device_id=device_id, server=sid, pod=pod))
    return ranks


def _v20(t: Table, data: dict[str, Any]) -> list[TableRank]:
    count = t.integer(data, "rank_count", "rank_count", lo=1, hi=65536)
    entries = t.items(data.get("rank_list"), "rank_list")
    if count != len(entries):
        raise t.fail("rank_count", f"says {count} but rank_list has {len(entries)} ranks")
    ranks: list[TableRank] = []
    local_seen: dict[str, set[int]] = {}
    for ri, entry in enumerate(entries):
        rf = f"rank_list[{ri}]"
        entry = t.obj(entry, rf)
        rank_id = t.integer(entry, "rank_id", f"{rf}.rank_id", lo=0, hi=65535)
        local_id = t.integer(entry, "local_id", f"{rf}.local_id", lo=0, hi=64)
        device_id = t.integer(entry, "device_id", f"{rf}.device_id", lo=0, hi=64)
        for port in ("device_port", "host_port"):
            t.port(entry, port, f"{rf}.{port}", as_int=True)
        server = "0"
        levels = t.items(entry.get("level_list"), f"{rf}.level_list", limit=8, required=False)
        for li, level in enumerate(levels):
            lf = f"{rf}.level_list[{li}]"
            level = t.obj(level, lf)
            layer = t.integer(level, "net_layer", f"{lf}.net_layer", lo=0, hi=7)
            if layer != li:
                raise t.fail(f"{lf}.net_layer", f"{layer}: layers must be numbered "
                             "consecutively from 0")
            inst = t.text(level, "net_instance_id", f"{lf}.net_instance_id", max_len=1024)
            net_type = level.get("net_type")
            allowed = ("TOPO_FILE_DESC",) if layer == 0 else ("CLOS", "TOPO_FILE_DESC")
            if net_type not in allowed:
                raise t.fail(f"{lf}.net_type", f"{_kind(net_type)}; layer {layer} allows "
                             + " or ".join(allowed))
            if layer == 0:
                server = str(inst)
            addrs = t.items(level.get("rank_addr_list"), f"{lf}.rank_addr_list", limit=24,
                            required=False)
            for ai, addr in enumerate(addrs):
                af = f"{lf}.rank_addr_list[{ai}]"
                addr = t.obj(addr, af)
                kind = addr.get("addr_type")
                if kind not in ("EID", "IPV4", "IPV6"):
                    raise t.fail(f"{af}.addr_type", f"{_kind(kind)}; expected EID, IPV4 or IPV6")
                text = t.text(addr, "addr", f"{af}.addr", max_len=256)
                if kind in ("IPV4", "IPV6"):
                    try:
                        ip = ipaddress.ip_address(str(text))
                    except ValueError:
                        raise t.fail(f"{af}.addr", f"{text!r} is not an {kind} address") \
                            from None
                    if ip.version != (4 if kind == "IPV4" else 6):
                        raise t.fail(f"{af}.addr", f"{text!r} is not an {kind} address")
                ports = t.items(addr.get("ports"), f"{af}.ports", limit=16, required=False)
                for pi, port in enumerate(ports):
                    if not isinstance(port, str) or not port or len(port) > 32:
                        raise t.fail(f"{af}.ports[{pi}]", f"{_kind(port)}; expected "
                                     "\"<die>/<port>\" (or \"d2h\"), at most 32 characters")
        assert rank_id is not None and local_id is not None and device_id is not None
        seen = local_seen.setdefault(server, set())
        if local_id in seen:
            raise t.fail(f"{rf}.local_id", f"{local_id} appears twice within server {server!r}")
        seen.add(local_id)
        ranks.append(TableRank(rank_id=rank_id, device_id=device_id, server=server))
    return ranks


def _check_rank_ids(t: Table, ranks: list[TableRank], field: str) -> None:
    ids = sorted(r.rank_id for r in ranks)
    if len(set(ids)) != len(ids):
        dup = next(a for a, b in itertools.pairwise(ids) if a == b)
        raise t.fail(field, f"rank_id {dup} appears twice; rank ids must be unique")
    if ids != list(range(len(ids))):
        raise t.fail(field, f"rank ids must be 0..{len(ids) - 1} without gaps, got "
                     f"{ids[:10]}{'...' if len(ids) > 10 else ''}")
