"""Rank tables v1.0 / legacy / v1.2 / v2.0 and the environment priorities (options.md §14-15)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from geplug.errors import ConfigError, RankTableError
from geplug.runtime.rank import read_rank_info
from geplug.testing.plugin import require_product


def _v10(servers: int = 2, per: int = 2) -> dict[str, Any]:
    return {"status": "completed", "version": "1.0", "server_count": str(servers),
            "server_list": [{"server_id": f"10.0.0.{s}", "device": [
                {"device_id": str(d), "device_ip": f"192.168.{s}.{d}",
                 "rank_id": str(s * per + d)} for d in range(per)]} for s in range(servers)]}


def _v12() -> dict[str, Any]:
    return {"status": "completed", "version": "1.2", "server_list": [{
        "server_id": "node0", "host_ip": "10.0.0.1", "device": [
            {"device_id": str(d), "super_device_id": str(100 + d), "rank_id": str(d)}
            for d in range(4)]}],
        "super_pod_list": [{"super_pod_id": "0", "server_list": [{"server_id": "node0"}]}]}


def _v20() -> dict[str, Any]:
    def level(server: str) -> list[dict[str, Any]]:
        return [{"net_layer": 0, "net_instance_id": server, "net_type": "TOPO_FILE_DESC",
                 "rank_addr_list": [{"addr_type": "EID", "addr": "eid0", "ports": ["0/1"]}]}]

    return {"version": "2.0", "rank_count": 4, "rank_list": [
        {"rank_id": r, "local_id": r % 2, "device_id": r % 2, "level_list": level(f"s{r // 2}")}
        for r in range(4)]}


def _legacy() -> dict[str, Any]:
    return {"status": "completed", "group_count": "1", "group_list": [{
        "group_name": "hccl_world_group", "instance_count": "2", "device_count": "2",
        "instance_list": [{"pod_name": str(i), "server_id": "10.0.0.1",
                           "devices": [{"device_id": str(i), "device_ip": f"192.168.0.{i}"}]}
                          for i in range(2)]}]}


def _env(tmp_path: Path, table: Any, **extra: str) -> dict[str, str]:
    path = tmp_path / "rank_table.json"
    path.write_text(json.dumps(table) if not isinstance(table, str) else table)
    return {"RANK_TABLE_FILE": str(path), **extra}


def test_v10_gives_rank_local_rank_and_device(tmp_path: Path) -> None:
    info = read_rank_info(_env(tmp_path, _v10(), RANK_ID="3"), require_product("atlas_a2"))
    assert (info.rank_id, info.rank_size, info.local_rank_id, info.local_rank_size,
            info.device_id, info.table_version) == (3, 4, 1, 2, 1, "1.0")


def test_table_device_id_overrides_ascend_device_id(tmp_path: Path) -> None:
    env = _env(tmp_path, _v10(), RANK_ID="0", ASCEND_DEVICE_ID="7")
    assert read_rank_info(env, require_product("atlas_a2")).device_id == 0


def test_v12_on_a3(tmp_path: Path) -> None:
    info = read_rank_info(_env(tmp_path, _v12(), RANK_ID="2"), require_product("atlas_a3"))
    assert (info.rank_size, info.local_rank_size, info.device_id) == (4, 4, 2)


def test_v12_empty_super_device_id_is_ei0004(tmp_path: Path) -> None:
    table = _v12()
    table["server_list"][0]["device"][1]["super_device_id"] = ""
    with pytest.raises(RankTableError) as info:
        read_rank_info(_env(tmp_path, table, RANK_ID="0"), require_product("atlas_a3"))
    assert info.value.code == "EI0004" and "super_device_id" in info.value.field


def test_v20_on_350_groups_servers_by_layer_0(tmp_path: Path) -> None:
    info = read_rank_info(_env(tmp_path, _v20(), RANK_ID="3"), require_product("atlas_350"))
    assert (info.rank_size, info.local_rank_id, info.local_rank_size) == (4, 1, 2)


def test_v20_layer_0_must_be_topo_file_desc(tmp_path: Path) -> None:
    table = _v20()
    table["rank_list"][1]["level_list"][0]["net_type"] = "CLOS"
    with pytest.raises(RankTableError) as info:
        read_rank_info(_env(tmp_path, table, RANK_ID="0"), require_product("atlas_350"))
    assert info.value.field == "rank_list[1].level_list[0].net_type"


def test_v20_numbers_must_be_json_ints(tmp_path: Path) -> None:
    table = _v20()
    table["rank_count"] = "4"
    with pytest.raises(RankTableError, match="rank_count"):
        read_rank_info(_env(tmp_path, table, RANK_ID="0"), require_product("atlas_350"))


def test_legacy_template_uses_pod_name(tmp_path: Path) -> None:
    env = _env(tmp_path, _legacy(), POD_NAME="1")
    info = read_rank_info(env, require_product("atlas_train"))
    assert (info.rank_id, info.rank_size, info.table_version) == (1, 2, "legacy")


def test_version_not_accepted_by_product_names_it(tmp_path: Path) -> None:
    with pytest.raises(RankTableError) as info:
        read_rank_info(_env(tmp_path, _v20(), RANK_ID="0"), require_product("atlas_a2"))
    assert info.value.field == "version" and "rank_table.json" in str(info.value)


def test_legacy_template_refused_on_a2(tmp_path: Path) -> None:
    with pytest.raises(RankTableError):
        read_rank_info(_env(tmp_path, _legacy(), POD_NAME="0"), require_product("atlas_a2"))


@pytest.mark.parametrize(("mutate", "field"), [
    (lambda t: t.update(status="initializing"), "status"),
    (lambda t: t.update(server_count="3"), "server_count"),
    (lambda t: t["server_list"][1].update(server_id="10.0.0.0"), "server_list[1].server_id"),
    (lambda t: t["server_list"][0]["device"][0].update(rank_id="9"), "rank_id"),
    (lambda t: t["server_list"][0]["device"][0].update(device_ip="999.1.1.1"),
     "server_list[0].device[0].device_ip"),
    (lambda t: t["server_list"][0]["device"][0].update(device_id=1),
     "server_list[0].device[0].device_id"),
])
def test_v10_errors_name_the_field(tmp_path: Path, mutate: Any, field: str) -> None:
    table = _v10()
    mutate(table)
    with pytest.raises(RankTableError) as info:
        read_rank_info(_env(tmp_path, table, RANK_ID="0"), require_product("atlas_a2"))
    assert info.value.field == field


def test_interleaved_ranks_are_refused(tmp_path: Path) -> None:
    table = _v10()
    table["server_list"][0]["device"][1]["rank_id"] = "2"
    table["server_list"][1]["device"][0]["rank_id"] = "1"
    with pytest.raises(RankTableError, match="interleave"):
        read_rank_info(_env(tmp_path, table, RANK_ID="0"), require_product("atlas_a2"))


def test_missing_table_is_ei0004(tmp_path: Path) -> None:
    with pytest.raises(RankTableError) as info:
        read_rank_info({"RANK_TABLE_FILE": str(tmp_path / "no.json")},
                       require_product("atlas_a2"))
    assert info.value.code == "EI0004"


def test_table_with_comments_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RankTableError, match="comments"):
        read_rank_info(_env(tmp_path, '{"version": "1.0"} // x'), require_product("atlas_a2"))


def test_rank_id_not_in_table_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RankTableError, match="RANK_ID 9"):
        read_rank_info(_env(tmp_path, _v10(), RANK_ID="9"), require_product("atlas_a2"))


def test_without_table_env_gives_rank_and_device() -> None:
    info = read_rank_info({"RANK_ID": "1", "RANK_SIZE": "4", "DEVICE_ID": "5"},
                          require_product("atlas_a2"))
    assert (info.rank_id, info.rank_size, info.device_id) == (1, 4, 5)


def test_without_anything_defaults_to_single_rank() -> None:
    info = read_rank_info({}, require_product("atlas_a2"))
    assert (info.rank_id, info.rank_size, info.local_rank_id, info.local_rank_size) == \
        (0, 1, 0, 1)


def test_bad_rank_size_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="RANK_SIZE"):
        read_rank_info({"RANK_SIZE": "four"}, require_product("atlas_a2"))
