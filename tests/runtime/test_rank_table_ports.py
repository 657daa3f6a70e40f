"""Rank-table ports (options.md §15.3): v1.2 host_port unique per server, a NIC's primary and
backup ports differ, well-known ports warned; v2.0 addr.ports entries are "<die>/<port>"/d2h."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from geplug.config import SessionConfig, check
from geplug.errors import RankTableError
from geplug.runtime.rank import read_rank_info
from geplug.testing.plugin import require_product


def _v12(**ports: dict[str, str]) -> dict[str, Any]:
    devices = [{"device_id": str(d), "super_device_id": str(100 + d), "rank_id": str(d),
                "device_ip": f"192.168.0.{d}", **ports.get(f"d{d}", {})} for d in range(2)]
    return {"status": "completed", "version": "1.2", "server_list": [{
        "server_id": "node0", "host_ip": "10.0.0.1", "device": devices}],
        "super_pod_list": [{"super_pod_id": "0", "server_list": [{"server_id": "node0"}]}]}


def _v20(ports: list[Any]) -> dict[str, Any]:
    level = [{"net_layer": 0, "net_instance_id": "s0", "net_type": "TOPO_FILE_DESC",
              "rank_addr_list": [{"addr_type": "EID", "addr": "eid0", "ports": ports}]}]
    return {"version": "2.0", "rank_count": 1,
            "rank_list": [{"rank_id": 0, "local_id": 0, "device_id": 0, "level_list": level}]}


def _env(tmp_path: Path, table: Any) -> dict[str, str]:
    path = tmp_path / "rank_table.json"
    path.write_text(json.dumps(table))
    return {"RANK_TABLE_FILE": str(path), "RANK_ID": "0"}


def _fields(exc: RankTableError) -> list[str]:
    return [i.field for i in exc.issues]


def test_v12_host_port_repeated_on_a_server_is_refused(tmp_path: Path) -> None:
    table = _v12(d0={"host_port": "60001"}, d1={"host_port": "60001"})
    with pytest.raises(RankTableError) as info:
        read_rank_info(_env(tmp_path, table), require_product("atlas_a3"))
    assert _fields(info.value) == ["server_list[0].device[1].host_port"]


def test_v12_distinct_host_ports_are_accepted(tmp_path: Path) -> None:
    table = _v12(d0={"host_port": "60001"}, d1={"host_port": "60002"})
    assert read_rank_info(_env(tmp_path, table), require_product("atlas_a3")).rank_size == 2


def test_v12_same_port_as_primary_and_backup_of_a_nic_is_refused(tmp_path: Path) -> None:
    table = _v12(d0={"device_port": "16666"},
                 d1={"backup_device_ip": "192.168.0.0", "backup_device_port": "16666"})
    with pytest.raises(RankTableError) as info:
        read_rank_info(_env(tmp_path, table), require_product("atlas_a3"))
    assert _fields(info.value) == ["server_list[0].device[1].backup_device_port"]


def test_v12_same_port_number_on_different_nics_is_accepted(tmp_path: Path) -> None:
    table = _v12(d0={"device_port": "16666"},
                 d1={"backup_device_ip": "192.168.0.9", "backup_device_port": "16666"})
    assert read_rank_info(_env(tmp_path, table), require_product("atlas_a3")).rank_size == 2


def test_well_known_port_is_a_check_warning(tmp_path: Path) -> None:
    env = _env(tmp_path, _v12(d0={"device_port": "80"}))
    problems = check(SessionConfig(), require_product("atlas_a3"), env=env, cwd=str(tmp_path))
    assert [(p.severity, p.option) for p in problems if "80" in p.message] == [
        ("warning", "RANK_TABLE_FILE:server_list[0].device[0].device_port")]


@pytest.mark.parametrize("port", ["0/1", "d2h", "12/34"])
def test_v20_valid_addr_ports_are_accepted(tmp_path: Path, port: str) -> None:
    assert read_rank_info(_env(tmp_path, _v20([port])), require_product("atlas_350")).rank_size == 1


@pytest.mark.parametrize("port", ["eth0", "1", "0/", "/1", "D2H", "0/1" + "1" * 31])
def test_v20_malformed_addr_ports_are_refused(tmp_path: Path, port: str) -> None:
    with pytest.raises(RankTableError) as info:
        read_rank_info(_env(tmp_path, _v20([port])), require_product("atlas_350"))
    assert _fields(info.value) == [
        "rank_list[0].level_list[0].rank_addr_list[0].ports[0]"]
