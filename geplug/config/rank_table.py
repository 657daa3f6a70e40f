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
import re
from collections.abc import Mapping
from typing import Any

import attrs

from geplug.config.text import digits
from geplug.errors import RankTableError
from geplug.limits import MAX_DEPTH, MAX_RANK_ID, MAX_RANKS, check_depth, decode_utf8
from geplug.products.schema import Product

__all__ = ["MAX_TABLE_BYTES", "Table", "TableIssue", "TableRank", "read_rank_table"]

MAX_TABLE_BYTES = 1 << 30
"""v2.0 tables may be up to 1 GB (options.md §15.3)."""


@attrs.frozen
class TableRank:
    """One rank of a table: its id, physical device, server (and pod for the legacy template)."""

    rank_id: int
    device_id: int
    server: str
    pod: str = ""
    device_ip: str = ""
    """The NIC address the table gives (v1.x ``device_ip``), "" when absent."""
    super_pod: str = ""
    """The v1.2 ``super_pod_id`` of the rank's server, "" when the table has none."""


@attrs.frozen(kw_only=True)
class TableIssue:
    """One problem of a table: ``option`` is the field path as a check reports it
    (``RANK_TABLE_FILE:server_list[0].device[1].device_id``, or ``RANK_ID`` when the environment
    variable is what to fix), ``value`` the field's value (None when missing)."""

    option: str
    field: str
    value: Any
    message: str
    hint: str = ""
    code: str = ""


class Table:
    """Validation helpers that record every problem (naming the file, the field and its value);
    :meth:`done` raises one RankTableError carrying them all."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.issues: list[TableIssue] = []
        self.warnings: list[TableIssue] = []
        """Accepted but inadvisable (a port in [1, 1023]); never raised."""

    def fail(self, field: str, message: str, code: str = "", *, value: Any = None,
             hint: str = "", option: str = "") -> RankTableError:
        """A RankTableError for one problem (fatal: the rest of the table cannot be read)."""
        issue = self._issue(field, message, code, value=value, hint=hint, option=option)
        return RankTableError(f"rank table {self.path!r}: {field}: {message}", path=self.path,
                              field=field, code=code, issues=[issue])

    def _issue(self, field: str, message: str, code: str, *, value: Any, hint: str,
               option: str) -> TableIssue:
        return TableIssue(option=option or f"RANK_TABLE_FILE:{field}", field=field, value=value,
                          message=f"{message} (rank table {self.path!r})",
                          hint=hint or "fix the rank table (CANN docs: \"rank table file\")",
                          code=code)

    def add(self, field: str, value: Any, message: str, code: str = "") -> None:
        """Record a problem and go on checking the rest of the table."""
        self.issues.append(self._issue(field, message, code, value=value, hint="", option=""))

    def warn(self, field: str, value: Any, message: str, hint: str = "") -> None:
        """Record a warning: the table is usable, but probably not as meant."""
        self.warnings.append(self._issue(field, message, "", value=value, hint=hint,
                                         option=""))

    def done(self) -> None:
        """Raise every recorded problem at once (the first one names ``field``)."""
        if not self.issues:
            return
        first = self.issues[0]
        lines = [f"{i.field}: {i.message.removesuffix(f' (rank table {self.path!r})')}"
                 for i in self.issues]
        head = f"rank table {self.path!r}: "
        text = head + lines[0] if len(lines) == 1 else (
            head + f"{len(lines)} problems:\n" + "\n".join(f"  - {line}" for line in lines))
        raise RankTableError(text, path=self.path, field=first.field, code=first.code,
                             issues=self.issues)

    def obj(self, value: Any, field: str) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.add(field, _plain(value), f"expected a JSON object, got {_kind(value)}")
            return None
        return value

    def items(self, value: Any, field: str, *, limit: int | None = None,
              required: bool = True) -> list[Any]:
        if value is None and not required:
            return []
        if not isinstance(value, list) or (required and not value):
            self.add(field, _plain(value), f"expected a non-empty JSON array, got {_kind(value)}")
            return []
        if limit is not None and len(value) > limit:
            self.add(field, _plain(value), f"has {len(value)} entries; at most {limit} allowed")
            return value[:limit]
        return value

    def digits(self, data: dict[str, Any], key: str, field: str, *, lo: int = 0,
               hi: int | None = None, required: bool = True) -> int | None:
        """A string of digits (v1.x tables: all values are strings).

        A JSON number is reported but its value is still used, so later checks (duplicates,
        gaps) see the table as the user meant it.
        """
        value = data.get(key)
        if value is None and not required:
            return None
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            self.add(field, value, f"expected a string of digits, got {_kind(value)}; "
                     f"write it as \"{value}\"")
            number = value
        elif not isinstance(value, str) or not digits(value):
            self.add(field, _plain(value), f"expected a string of digits, got {_kind(value)}")
            return None
        elif len(value) > 18:  # int() of a huge digit string is slow (and refused past 4300)
            self.add(field, _plain(value), f"{len(value)} digits is outside [{lo}, "
                     f"{'...' if hi is None else hi}]")
            return None
        else:
            number = int(value)
        if number < lo or (hi is not None and number > hi):
            self.add(field, value, f"{number} is outside [{lo}, {'...' if hi is None else hi}]")
            return None
        return number

    def integer(self, data: dict[str, Any], key: str, field: str, *, lo: int, hi: int,
                required: bool = True) -> int | None:
        """A JSON integer (v2.0 tables)."""
        value = data.get(key)
        if value is None and not required:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.add(field, _plain(value), f"expected a JSON integer, got {_kind(value)}")
            return None
        if not lo <= value <= hi:
            self.add(field, value, f"{value} is outside [{lo}, {hi}]")
            return None
        return value

    def text(self, data: dict[str, Any], key: str, field: str, *, max_len: int = 256,
             required: bool = True) -> str | None:
        value = data.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, str) or not value or len(value) > max_len:
            self.add(field, _plain(value), f"expected a string of 1-{max_len} characters, got "
                     f"{_kind(value)}")
            return None
        return value

    def ip(self, data: dict[str, Any], key: str, field: str, *, required: bool) -> None:
        value = data.get(key)
        if value is None and not required:
            return
        if value is None:
            self.add(field, None, "missing: an IPv4/IPv6 address is required here")
            return
        try:
            ipaddress.ip_address(value if isinstance(value, str) else "")
        except ValueError:
            self.add(field, _plain(value), f"{_kind(value)} is not an IPv4/IPv6 address")

    def port(self, data: dict[str, Any], key: str, field: str, *, as_int: bool) -> int | None:
        """A port in [1, 65535]; a warning for the well-known ports [1, 1023] (§15.3)."""
        if key not in data:
            return None
        if as_int:
            number = self.integer(data, key, field, lo=1, hi=65535)
        else:
            number = self.digits(data, key, field, lo=1, hi=65535)
        if number is not None and number <= WELL_KNOWN_PORT_MAX:
            self.warn(field, data[key], f"port {number} is in the well-known range "
                      f"[1, {WELL_KNOWN_PORT_MAX}], which the reference says to avoid",
                      "use a port above 1023")
        return number


WELL_KNOWN_PORT_MAX = 1023
"""Ports in [1, 1023] are accepted in rank tables but to be avoided (options.md §15.3)."""
ADDR_PORT = re.compile(r"[0-9]+/[0-9]+")
"""A v2.0 ``addr.ports`` entry other than ``d2h``: ``"<die>/<port>"`` (options.md §15.3)."""


def _count(value: Any) -> int:
    """Entries of an optional JSON array (0 for anything that is not one: reported where the
    array itself is checked)."""
    return len(value) if isinstance(value, list) else 0


def _plain(value: Any) -> Any:
    """A field's value for a report: scalars as they are, containers abbreviated."""
    if isinstance(value, dict):
        return "{...}"
    if isinstance(value, list):
        return f"[{len(value)} entries]"
    if isinstance(value, str) and len(value) > 200:
        return value[:200] + "..."
    return value


def _kind(value: Any) -> str:
    """A JSON value described in JSON's words (never Python type names)."""
    if value is None:
        return "nothing (missing or null)"
    if isinstance(value, bool):
        return f"the boolean {'true' if value else 'false'}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {json.dumps(value[:60])}" if value else "an empty string"
    if isinstance(value, list):
        return f"an array of {len(value)} entries"
    if isinstance(value, dict):
        return "an object"
    return "an unexpected value"


def _json_error(text: str, exc: json.JSONDecodeError) -> str:
    """Why ``text`` is not JSON, with the position; comments are named only when present."""
    where = f"line {exc.lineno} column {exc.colno}"
    if text[exc.pos:].lstrip().startswith(("//", "/*", "#")):
        return f"not valid JSON: a comment at {where} (comments are not allowed in JSON)"
    reason = exc.msg.removesuffix(" at")
    if not text.rstrip().endswith(("}", "]")):
        return (f"not valid JSON ({reason} at {where}): the file ends early; is it "
                "truncated?")
    return f"not valid JSON: {reason} at {where}"


def read_rank_table(path: str, product: Product, env: Mapping[str, str] | None = None,
                    *, warnings: list[TableIssue] | None = None
                    ) -> tuple[str, list[TableRank]]:
    """Validate the rank table at ``path`` for ``product``; returns (version, ranks).

    ``warnings``: a list to receive what the table may do but should not (ports in
    [1, 1023], §15.3); filled only when the table is valid.

    Raises one :class:`RankTableError` whose ``issues`` hold every problem of the table (its
    ``field`` names the first), except when the file cannot be read as a table at all.
    """
    env = {} if env is None else env
    t = Table(path)
    try:
        if os.path.getsize(path) > MAX_TABLE_BYTES:
            raise t.fail("<file>", f"larger than {MAX_TABLE_BYTES} bytes (1 GB, the limit)")
        if os.path.exists(path) and not os.path.isdir(path) and not os.path.isfile(path):
            raise t.fail("<file>", "is not a regular file (a device, FIFO or socket)",
                         code="EI0004", value=path, option="RANK_TABLE_FILE")
        with open(path, "rb") as fh:
            raw = fh.read(MAX_TABLE_BYTES + 1)
        text = decode_utf8(raw, path=path, what="rank table",
                           fail=lambda m: UnicodeError(m.split(": ", 1)[-1]))
    except FileNotFoundError:
        raise t.fail("<file>", f"path {path} is not a valid real path (file not found); set "
                     "RANK_TABLE_FILE to an existing rank table", code="EI0004",
                     value=path, option="RANK_TABLE_FILE",
                     hint="set RANK_TABLE_FILE to an existing rank table") from None
    except IsADirectoryError:
        raise t.fail("<file>", "is a directory, not a rank table JSON file", code="EI0004",
                     value=path, option="RANK_TABLE_FILE") from None
    except (OSError, UnicodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise t.fail("<file>", f"cannot read: {reason}", code="EI0004", value=path,
                     option="RANK_TABLE_FILE") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise t.fail("<file>", _json_error(text, exc), value=path,
                     option="RANK_TABLE_FILE") from None
    except RecursionError:
        raise t.fail("<file>", "not valid JSON: nested too deeply", value=path,
                     option="RANK_TABLE_FILE") from None
    deep = check_depth(data)
    if deep is not None:
        raise t.fail(deep, f"nests objects/arrays deeper than {MAX_DEPTH} levels (the limit, "
                     "docs/limits.md)", option="RANK_TABLE_FILE")
    if not isinstance(data, dict):
        raise t.fail("<root>", f"expected a JSON object, got {_kind(data)}", value=_plain(data))
    if "version" in data:
        version = data["version"]
        if version not in ("1.0", "1.2", "2.0"):
            raise t.fail("version", f"unknown version {_kind(version)}; expected \"1.0\", "
                         "\"1.2\" or \"2.0\"", value=_plain(version))
    elif "group_list" in data:
        version = "legacy"
    else:
        raise t.fail("version", "missing: a rank table needs \"version\" (or the legacy "
                     "template's group_list)")
    accepted = product.runtime.rank_table_versions
    if version not in accepted:
        raise t.fail("version", f"{version!r} is not accepted on {product.display_name} "
                     f"(accepted: {', '.join(accepted) or 'none'})", value=version)
    status = data.get("status")
    if version != "2.0" or status is not None:
        if status not in ("completed", "initializing"):
            t.add("status", _plain(status), f"expected \"completed\", got {_kind(status)}")
        elif status == "initializing":
            t.add("status", status, "\"initializing\": the table is not usable yet; wait for "
                  "\"completed\"")
    if version == "2.0":
        ranks = _v20(t, data)
    elif version == "legacy":
        ranks = _template2(t, data)
    else:
        ranks = _v1x(t, data, version, env)
    _check_rank_ids(t, ranks, "rank_list" if version == "2.0" else "rank_id")
    t.done()
    if warnings is not None:
        warnings.extend(t.warnings)
    return version, ranks


def _v1x(t: Table, data: dict[str, Any], version: str, env: Mapping[str, str]) -> list[TableRank]:
    servers = t.items(data.get("server_list"), "server_list")
    count = t.digits(data, "server_count", "server_count", lo=1, required=version == "1.0")
    if count is not None and servers and count != len(servers):
        t.add("server_count", data.get("server_count"),
              f"says {count} but server_list has {len(servers)} server(s)")
    seen_servers: set[str] = set()
    nics: dict[tuple[str, int], list[str]] = {}
    ranks: list[TableRank] = []
    for si, raw_server in enumerate(servers):
        sf = f"server_list[{si}]"
        server = t.obj(raw_server, sf)
        if server is None:
            continue
        sid = t.text(server, "server_id", f"{sf}.server_id", max_len=64)
        if sid is not None:
            if sid in seen_servers:
                t.add(f"{sf}.server_id", sid, "appears twice; server ids must be unique")
            seen_servers.add(sid)
        sid = sid or f"<server {si}>"
        t.ip(server, "host_ip", f"{sf}.host_ip", required=False)
        devices = t.items(server.get("device"), f"{sf}.device")
        seen_dev: set[int] = set()
        host_ports: dict[int, str] = {}
        for di, raw_dev in enumerate(devices):
            df = f"{sf}.device[{di}]"
            dev = t.obj(raw_dev, df)
            if dev is None:
                continue
            device_id = t.digits(dev, "device_id", f"{df}.device_id", hi=64)
            if device_id is not None:
                if device_id in seen_dev:
                    t.add(f"{df}.device_id", dev.get("device_id"),
                          f"device {device_id} appears twice on server {sid!r}")
                seen_dev.add(device_id)
            need_ip = len(servers) > 1 if version == "1.0" else (
                env.get("HCCL_INTER_HCCS_DISABLE", "").upper() == "TRUE"
                or _count(data.get("super_pod_list")) > 1)
            t.ip(dev, "device_ip", f"{df}.device_ip", required=need_ip)
            found = {port: t.port(dev, port, f"{df}.{port}", as_int=False)
                     for port in ("device_port", "backup_device_port", "host_port")}
            if version == "1.2":
                _v12_ports(t, df, dev, found, host_ports, nics)
            if version == "1.2":
                if "super_device_id" in dev and not str(dev["super_device_id"]).strip():
                    t.add(f"{df}.super_device_id", dev["super_device_id"],
                          "super_device_id[] is invalid (empty)", code="EI0004")
                t.ip(dev, "backup_device_ip", f"{df}.backup_device_ip", required=False)
            rank_id = t.digits(dev, "rank_id", f"{df}.rank_id", hi=MAX_RANK_ID)
            if rank_id is not None:  # kept even with a bad device_id: the id checks go on
                ip = dev.get("device_ip")
                ranks.append(TableRank(rank_id=rank_id, device_id=-1 if device_id is None
                                       else device_id, server=sid,
                                       device_ip=ip if isinstance(ip, str) else ""))
    if version == "1.2" and "super_pod_list" in data:
        pods = t.items(data["super_pod_list"], "super_pod_list")
        seen_pods: set[str] = set()
        pod_of: dict[str, str] = {}
        for pi, raw_pod in enumerate(pods):
            pf = f"super_pod_list[{pi}]"
            pod = t.obj(raw_pod, pf)
            if pod is None:
                continue
            pid = t.text(pod, "super_pod_id", f"{pf}.super_pod_id")
            if pid is not None and pid in seen_pods:
                t.add(f"{pf}.super_pod_id", pid, "appears twice")
            seen_pods.add(str(pid))
            for ji, raw_entry in enumerate(t.items(pod.get("server_list"), f"{pf}.server_list")):
                entry = t.obj(raw_entry, f"{pf}.server_list[{ji}]")
                if entry is None:
                    continue
                ref = t.text(entry, "server_id", f"{pf}.server_list[{ji}].server_id", max_len=64)
                if ref is not None and ref not in seen_servers:
                    t.add(f"{pf}.server_list[{ji}].server_id", ref,
                          "is not a server of server_list")
                elif ref is not None and pid is not None:
                    pod_of[ref] = str(pid)
        ranks = [attrs.evolve(r, super_pod=pod_of.get(r.server, "")) for r in ranks]
    _nic_port_roles(t, nics)
    # ranks must not interleave across servers (server 1 {0..3}, server 2 {4..7})
    by_server: dict[str, list[int]] = {}
    for r in ranks:
        by_server.setdefault(r.server, []).append(r.rank_id)
    spans = sorted((min(v), max(v), k) for k, v in by_server.items())
    for (_, hi, a), (lo, _, b) in itertools.pairwise(spans):
        if lo <= hi:
            t.add("rank_id", sorted(by_server[a]) + sorted(by_server[b]),
                  f"ranks of servers {a!r} and {b!r} interleave; give each server a "
                  "contiguous block of rank ids")
    return ranks


def _v12_ports(t: Table, df: str, dev: dict[str, Any], found: dict[str, int | None],
               host_ports: dict[int, str], nics: dict[tuple[str, int], list[str]]) -> None:
    """v1.2 (§15.3): host_port unique per server; record each NIC port's uses (by
    ``(ip, port)``, role-tagged) for :func:`_nic_port_roles`."""
    host = found["host_port"]
    if host is not None:
        if host in host_ports:
            t.add(f"{df}.host_port", dev.get("host_port"), f"host_port {host} is also used by "
                  f"{host_ports[host]}; host_port must be unique per server")
        else:
            host_ports[host] = df
    for ip_key, port_key in (("device_ip", "device_port"),
                             ("backup_device_ip", "backup_device_port")):
        port = found[port_key]
        if port is not None:
            ip = dev.get(ip_key) if isinstance(dev.get(ip_key), str) else None
            nics.setdefault((ip or f"<{df}>", port), []).append(f"{df}.{port_key}")


def _nic_port_roles(t: Table, nics: dict[tuple[str, int], list[str]]) -> None:
    """A NIC's port as primary (device_port) and as backup (backup_device_port) must differ
    (§15.3): the same (ip, port) used in both roles is an error. A device without IPs counts
    as its own NIC."""
    for (ip, port), fields in nics.items():
        primary = [f for f in fields if f.endswith(".device_port")]
        backup = [f for f in fields if f.endswith(".backup_device_port")]
        if primary and backup:
            where = "" if ip.startswith("<") else f" of NIC {ip}"
            t.add(backup[0], str(port), f"port {port}{where} is also the primary port "
                  f"({primary[0]}); a NIC's port as primary and as backup must differ")


def _template2(t: Table, data: dict[str, Any]) -> list[TableRank]:
    groups = t.items(data.get("group_list"), "group_list")
    ranks: list[TableRank] = []
    for gi, raw_group in enumerate(groups):
        gf = f"group_list[{gi}]"
        group = t.obj(raw_group, gf)
        if group is None:
            continue
        t.text(group, "group_name", f"{gf}.group_name")
        instances = t.items(group.get("instance_list"), f"{gf}.instance_list")
        count = t.digits(group, "instance_count", f"{gf}.instance_count", required=False)
        if count is not None and instances and count != len(instances):
            t.add(f"{gf}.instance_count", group.get("instance_count"),
                  f"says {count} but instance_list has {len(instances)}")
        for ii, raw_inst in enumerate(instances):
            inf = f"{gf}.instance_list[{ii}]"
            inst = t.obj(raw_inst, inf)
            if inst is None:
                continue
            pod = t.text(inst, "pod_name", f"{inf}.pod_name")
            sid = t.text(inst, "server_id", f"{inf}.server_id", max_len=64)
            devices = t.items(inst.get("devices"), f"{inf}.devices")
            dev = t.obj(devices[0], f"{inf}.devices[0]") if devices else None
            if dev is None:
                continue
            device_id = t.digits(dev, "device_id", f"{inf}.devices[0].device_id", hi=64)
            t.ip(dev, "device_ip", f"{inf}.devices[0].device_ip", required=False)
            if pod is None or sid is None or device_id is None:
                continue
            rank_id = int(pod) if digits(pod) else len(ranks)
            ranks.append(TableRank(rank_id=rank_id, device_id=device_id, server=sid, pod=pod))
    return ranks


def _v20(t: Table, data: dict[str, Any]) -> list[TableRank]:
    count = t.integer(data, "rank_count", "rank_count", lo=1, hi=MAX_RANKS)
    entries = t.items(data.get("rank_list"), "rank_list")
    if count is not None and entries and count != len(entries):
        t.add("rank_count", count, f"says {count} but rank_list has {len(entries)} ranks")
    ranks: list[TableRank] = []
    local_seen: dict[str, set[int]] = {}
    for ri, raw_entry in enumerate(entries):
        rf = f"rank_list[{ri}]"
        entry = t.obj(raw_entry, rf)
        if entry is None:
            continue
        rank_id = t.integer(entry, "rank_id", f"{rf}.rank_id", lo=0, hi=MAX_RANK_ID)
        local_id = t.integer(entry, "local_id", f"{rf}.local_id", lo=0, hi=64)
        device_id = t.integer(entry, "device_id", f"{rf}.device_id", lo=0, hi=64)
        for port in ("device_port", "host_port"):
            t.port(entry, port, f"{rf}.{port}", as_int=True)
        server = "0"
        levels = t.items(entry.get("level_list"), f"{rf}.level_list", limit=8, required=False)
        for li, raw_level in enumerate(levels):
            lf = f"{rf}.level_list[{li}]"
            level = t.obj(raw_level, lf)
            if level is None:
                continue
            layer = t.integer(level, "net_layer", f"{lf}.net_layer", lo=0, hi=7)
            if layer is not None and layer != li:
                t.add(f"{lf}.net_layer", layer, "layers must be numbered consecutively from 0")
            inst = t.text(level, "net_instance_id", f"{lf}.net_instance_id", max_len=1024)
            net_type = level.get("net_type")
            allowed = ("TOPO_FILE_DESC",) if layer == 0 else ("CLOS", "TOPO_FILE_DESC")
            if net_type not in allowed:
                t.add(f"{lf}.net_type", _plain(net_type), f"got {_kind(net_type)}; layer "
                      f"{layer} allows " + " or ".join(allowed))
            if layer == 0:
                server = str(inst)
            addrs = t.items(level.get("rank_addr_list"), f"{lf}.rank_addr_list", limit=24,
                            required=False)
            for ai, raw_addr in enumerate(addrs):
                af = f"{lf}.rank_addr_list[{ai}]"
                addr = t.obj(raw_addr, af)
                if addr is None:
                    continue
                kind = addr.get("addr_type")
                if kind not in ("EID", "IPV4", "IPV6"):
                    t.add(f"{af}.addr_type", _plain(kind), f"got {_kind(kind)}; expected EID, "
                          "IPV4 or IPV6")
                text = t.text(addr, "addr", f"{af}.addr", max_len=256)
                if kind in ("IPV4", "IPV6") and text is not None:
                    try:
                        ip: Any = ipaddress.ip_address(text)
                    except ValueError:
                        ip = None
                    if ip is None or ip.version != (4 if kind == "IPV4" else 6):
                        t.add(f"{af}.addr", text, f"is not an {kind} address")
                ports = t.items(addr.get("ports"), f"{af}.ports", limit=16, required=False)
                for pi, port in enumerate(ports):
                    if not isinstance(port, str) or len(port) > 32 or not (
                            port == "d2h" or ADDR_PORT.fullmatch(port)):
                        t.add(f"{af}.ports[{pi}]", _plain(port), f"got {_kind(port)}; "
                              "expected \"<die>/<port>\" such as \"0/1\" (host NIC: "
                              "\"d2h\"), at most 32 characters")
        if rank_id is None or local_id is None or device_id is None:
            continue
        seen = local_seen.setdefault(server, set())
        if local_id in seen:
            t.add(f"{rf}.local_id", local_id, f"{local_id} appears twice within server "
                  f"{server!r}")
        seen.add(local_id)
        ranks.append(TableRank(rank_id=rank_id, device_id=device_id, server=server))
    return ranks


def _check_rank_ids(t: Table, ranks: list[TableRank], field: str) -> None:
    ids = sorted(r.rank_id for r in ranks)
    if not ids:
        return
    if len(ids) > MAX_RANKS or ids[-1] > MAX_RANK_ID:
        t.add(field, min(len(ids), ids[-1]), f"{len(ids)} ranks, largest id {ids[-1]}: at most "
              f"{MAX_RANKS} ranks with ids 0..{MAX_RANK_ID} are supported (docs/limits.md)")
        return
    if len(set(ids)) != len(ids):
        dup = next(a for a, b in itertools.pairwise(ids) if a == b)
        t.add(field, dup, f"rank_id {dup} appears twice; rank ids must be unique")
    elif ids != list(range(len(ids))):
        present = set(ids)  # the first ten gaps, in O(ranks) whatever the largest id
        missing = list(itertools.islice((i for i in range(len(ids) + 10)
                                         if i not in present), 10))
        t.add(field, ids[:10], f"rank ids must be 0..{len(ids) - 1} without gaps, got "
              f"{ids[:10]}{'...' if len(ids) > 10 else ''} (missing "
              f"{', '.join(map(str, missing))})")
