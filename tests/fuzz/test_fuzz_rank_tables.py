"""Fuzz: rank tables of every version (1.0, 1.2, 2.0, the legacy template) - generated from
each version's shape with hostile values, and mutated bytes of valid tables - plus the rank
environment variables (RANK_ID, RANK_SIZE, ASCEND_DEVICE_ID, DEVICE_ID, RANK_TABLE_FILE)."""

from __future__ import annotations

import json
import os
import time

from fuzz_support import NASTY_TEXT, SCALARS, count, deep, mutate, nested, scratch, unchanged
from hypothesis import given
from hypothesis import strategies as st

from geplug.errors import GeplugError, RankTableError
from geplug.runtime.rank_table import read_rank_table

_VALUE = st.one_of(SCALARS, st.integers(0, 10).map(str), st.just("4000000000"),
                   st.just("192.168.1.1"), st.just("fe80::1"), st.integers(0, 70000).map(str),
                   nested(depth=6))


def _maybe(draw: st.DrawFn, value: object) -> object:
    return draw(_VALUE) if draw(st.integers(0, 5)) == 0 else value


@st.composite
def v1x(draw: st.DrawFn, version: str) -> dict[str, object]:
    servers = []
    rank = 0
    for s in range(draw(st.integers(0, 3))):
        devices = []
        for d in range(draw(st.integers(0, 4))):
            dev = {"device_id": str(d), "device_ip": f"192.168.{s}.{d + 1}",
                   "rank_id": str(rank)}
            if version == "1.2":
                dev.update(super_device_id=str(d), device_port="16666", host_port="6000")
            devices.append({k: _maybe(draw, v) for k, v in dev.items()})
            rank += 1
        servers.append({"server_id": _maybe(draw, f"node{s}"), "device": _maybe(draw, devices),
                        "host_ip": _maybe(draw, f"10.0.0.{s + 1}")})
    table: dict[str, object] = {"version": version, "server_count": _maybe(draw, str(len(servers))),
                                "server_list": _maybe(draw, servers),
                                "status": _maybe(draw, "completed")}
    if version == "1.2" and draw(st.booleans()):
        table["super_pod_list"] = _maybe(draw, [{"super_pod_id": "0", "server_list": [
            {"server_id": f"node{s}"} for s in range(len(servers))]}])
    return table


@st.composite
def v20(draw: st.DrawFn) -> dict[str, object]:
    ranks = [{k: _maybe(draw, v) for k, v in {
        "rank_id": r, "local_id": r % 8, "device_id": r % 8,
        "level_list": [{"net_layer": 0, "net_instance_id": "s0", "net_type": "TOPO_FILE_DESC",
                        "rank_addr_type": "IPV4", "rank_addrs": [{"addr": "10.0.0.1",
                                                                  "ports": ["0/1"]}]}]}.items()}
        for r in range(draw(st.integers(0, 5)))]
    return {"version": "2.0", "rank_count": _maybe(draw, len(ranks)),
            "rank_list": _maybe(draw, ranks), "status": _maybe(draw, "completed")}


@st.composite
def legacy(draw: st.DrawFn) -> dict[str, object]:
    inst = [{"pod_name": _maybe(draw, str(i)), "server_id": _maybe(draw, "node0"),
             "devices": _maybe(draw, [{"device_id": str(i), "device_ip": "192.168.0.1"}])}
            for i in range(draw(st.integers(0, 4)))]
    return {"status": "completed", "group_count": "1", "group_list": [_maybe(draw, {
        "group_name": "g", "instance_count": _maybe(draw, str(len(inst))),
        "instance_list": _maybe(draw, inst)})]}


@st.composite
def tables(draw: st.DrawFn) -> bytes:
    if draw(st.integers(0, 20)) == 0:  # nesting past the limit (and past json's recursion)
        n = draw(st.sampled_from([40, 900, 5000]))
        return ('{"version": "1.0", "server_list": ' + "[" * n + "]" * n + "}").encode()
    table = draw(st.one_of(v1x("1.0"), v1x("1.2"), v20(), legacy(),
                           st.dictionaries(NASTY_TEXT, _VALUE, max_size=5),
                           st.just({"version": "1.0", "server_list": deep(60)})))
    text = json.dumps(table, allow_nan=True).encode()
    return mutate(text, draw) if draw(st.integers(0, 3)) == 0 else text


@given(data=tables())
def test_any_rank_table_is_read_or_refused_clearly(sample_product: object, data: bytes) -> None:
    count("rank table")
    with scratch() as tmp:
        path = os.path.join(tmp, "rank_table.json")
        with open(path, "wb") as fh:
            fh.write(data)
        started = time.perf_counter()
        with unchanged(tmp):
            try:
                read_rank_table(path, sample_product)  # type: ignore[arg-type]
            except RankTableError as exc:
                assert "rank_table.json" in str(exc)
                for issue in exc.issues:
                    assert issue.field and issue.message
        assert time.perf_counter() - started < 10


@given(data=tables(), env=st.fixed_dictionaries({}, optional={
    "RANK_ID": NASTY_TEXT, "RANK_SIZE": NASTY_TEXT, "ASCEND_DEVICE_ID": NASTY_TEXT,
    "DEVICE_ID": NASTY_TEXT, "HCCL_INTER_HCCS_DISABLE": NASTY_TEXT}))
def test_rank_queries_from_the_environment(sample_product: object, data: bytes,
                                           env: dict[str, str]) -> None:
    from geplug.runtime.rank import read_rank_info

    count("rank environment")
    env = {k: v.replace("\x00", "") for k, v in env.items()}
    with scratch() as tmp:
        path = os.path.join(tmp, "rank_table.json")
        with open(path, "wb") as fh:
            fh.write(data)
        env["RANK_TABLE_FILE"] = path
        try:
            read_rank_info(env, sample_product)  # type: ignore[arg-type]
        except GeplugError as exc:  # RankTableError, or a clear error about a variable
            assert str(exc)
