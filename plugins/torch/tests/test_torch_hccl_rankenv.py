"""The ``hccl`` process group's rank-environment checks (torchrun's vs the Ascend variables)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from geplug_torch.distributed.rankenv import read_job_env, resolve_product

from geplug.errors import HcclError
from geplug.plugin import get_manager

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")


@pytest.fixture
def a2():
    return get_manager().products().get("atlas_a2")


def _table(path, devices: list[int]) -> str:
    table = {"status": "completed", "version": "1.0", "server_count": "1", "server_list": [
        {"server_id": "10.0.0.1", "device": [
            {"device_id": str(d), "device_ip": f"192.168.0.{d + 1}", "rank_id": str(r)}
            for r, d in enumerate(devices)]}]}
    path.write_text(json.dumps(table))
    return str(path)


def test_missing_ascend_variables_are_filled_in_from_torchrun(a2):
    env = {"LOCAL_RANK": "1"}
    job = read_job_env(a2, 1, 2, env)
    assert (env["RANK_ID"], env["RANK_SIZE"], env["DEVICE_ID"]) == ("1", "2", "1")
    assert job.device_id == 1 and job.topology.size == 2


def test_rank_id_differing_from_torchs_rank_is_refused(a2):
    with pytest.raises(HcclError, match=r"RANK_ID=3 but torch.distributed's rank \(RANK\) "
                                        r"is 1.*export RANK_ID=1"):
        read_job_env(a2, 1, 2, {"RANK_ID": "3"})


def test_rank_size_differing_from_the_world_size_is_refused(a2):
    with pytest.raises(HcclError, match=r"RANK_SIZE=8 but the world size \(WORLD_SIZE\) is 2"):
        read_job_env(a2, 0, 2, {"RANK_SIZE": "8"})


def test_rank_table_gives_the_topology_and_the_device(a2, tmp_path):
    env = {"RANK_TABLE_FILE": _table(tmp_path / "rt.json", [4, 6])}
    job = read_job_env(a2, 1, 2, env)
    assert job.device_id == 6 and job.topology.places[1].device_ip == "192.168.0.7"


def test_rank_table_of_another_size_than_the_job_is_refused(a2, tmp_path):
    env = {"RANK_TABLE_FILE": _table(tmp_path / "rt.json", [0, 1, 2, 3])}
    with pytest.raises(HcclError, match=r"lists 4 ranks but the job has WORLD_SIZE 2"):
        read_job_env(a2, 0, 2, env)


def test_device_id_differing_from_the_rank_tables_is_refused(a2, tmp_path):
    env = {"RANK_TABLE_FILE": _table(tmp_path / "rt.json", [4, 6]), "DEVICE_ID": "1"}
    with pytest.raises(HcclError, match=r"DEVICE_ID=1 but rank 1's device_id in .* is 6"):
        read_job_env(a2, 1, 2, env)


def test_a_fault_naming_a_rank_outside_the_job_is_refused(a2):
    with pytest.raises(HcclError, match="GEPLUG_SIM_SLOW_RANK"):
        read_job_env(a2, 0, 2, {"GEPLUG_SIM_SLOW_RANK": "5"})


def test_without_a_backend_or_geplug_product_the_product_question_is_asked():
    with pytest.raises(HcclError, match=r"export GEPLUG_PRODUCT=<product>"):
        resolve_product({})


def test_an_unknown_geplug_product_is_refused_with_the_known_ones():
    with pytest.raises(HcclError, match=r"GEPLUG_PRODUCT='atlas_z9': unknown product "
                                        r"'atlas_z9': did you mean .*'atlas_a2'"):
        resolve_product({"GEPLUG_PRODUCT": "atlas_z9"})


def test_a_slow_rank_of_a_torchrun_job_computes_its_factor_longer():
    from geplug_torch.distributed.rankenv import rank_compute_factor

    env = {"RANK": "3", "WORLD_SIZE": "4", "GEPLUG_SIM_SLOW_RANK": "3:2.5",
           "GEPLUG_SIM_RANK_VARIATION": "0"}
    assert rank_compute_factor(env) == 2.5
    assert rank_compute_factor({**env, "RANK": "1"}) == 1.0


def test_a_process_outside_a_multi_rank_job_never_varies():
    from geplug_torch.distributed.rankenv import rank_compute_factor

    assert rank_compute_factor({"GEPLUG_SIM_SLOW_RANK": "0"}) == 1.0
    assert rank_compute_factor({"RANK": "0", "WORLD_SIZE": "1"}) == 1.0


def _forward_device_time(monkeypatch, env: dict[str, str]) -> tuple[float, list[float]]:
    """One forward of a small compiled MLP: the device clock's advance without its
    host<->device copies (the host link is no slower on a slow rank) and the kernels'
    durations (read from the profiling events the runtime emits)."""
    import geplug_torch
    import torch

    from geplug import hookimpl
    from geplug.events import TaskEvent
    from geplug.hookspecs import PLUGIN_API
    from geplug.plugin import PluginManager, reset_manager

    for k, v in env.items():
        monkeypatch.setenv(k, v)
    seen: list[float] = []

    class Kernels:
        GEPLUG_PLUGIN_API = PLUGIN_API

        @hookimpl
        def geplug_profile(self, event):
            if isinstance(event, TaskEvent) and event.op.task_type != "COMMUNICATION":
                seen.append(event.duration_us)

    before = get_manager()
    fresh = PluginManager().load()
    fresh.register(Kernels(), "kernel_catcher")
    reset_manager(fresh)
    be = geplug_torch.backend(product="atlas_a2", config={"profiling_mode": True,
                                                          "profiling_options": {
                                                              "output": "prof",
                                                              "task_time": "on"}})
    try:
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU())
        with torch.no_grad():
            torch.compile(model, backend=be)(torch.ones(8, 32))
        from geplug.device import copy_us

        product = be.system.product
        copies = [c for m in be.models for g in m.graphs.values() for c in g.copies]
        assert copies  # the input goes in, the result comes back
        return be.runtime.now() - sum(product.compute.launch_overhead_us +
                                      copy_us(c.nbytes, product) for c in copies), seen
    finally:
        be.shutdown()
        reset_manager(before)


def test_a_slow_ranks_kernels_are_longer_not_followed_by_a_gap(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    alone, kernels = _forward_device_time(monkeypatch, {"GEPLUG_SIM_RANK_VARIATION": "0"})
    slow, slow_kernels = _forward_device_time(monkeypatch, {
        "RANK": "3", "WORLD_SIZE": "4", "GEPLUG_SIM_SLOW_RANK": "3",
        "GEPLUG_SIM_RANK_VARIATION": "0"})  # exactly the default factor 2
    assert kernels and len(slow_kernels) == len(kernels)
    assert slow_kernels == pytest.approx([2 * k for k in kernels])
    assert slow == pytest.approx(2 * alone)


def test_hccl_exec_timeout_outside_its_range_fails_init_naming_it(a2):
    with pytest.raises(HcclError, match=r"HCCL_EXEC_TIMEOUT='-1'.*\[0, 2147483647\]"):
        read_job_env(a2, 0, 2, {"HCCL_EXEC_TIMEOUT": "-1"})


def test_a_rank_that_never_joins_is_named_after_the_really_waited_connect_timeout(a2):
    import attrs
    import torch.distributed as dist
    from geplug_torch.distributed.process_group import _rendezvous

    job = read_job_env(a2, 0, 2, {})
    # the real wait is HCCL_CONNECT_TIMEOUT + 20 s (>= 140 s): shortened to 1 s here
    job = attrs.evolve(job, settings=attrs.evolve(job.settings, connect_timeout_s=-19))
    with pytest.raises(HcclError) as err:
        _rendezvous(dist.HashStore(), job)
    assert err.value.code == "EI0006" and err.value.ranks == (1,)
    assert "rank(s) 1 never joined communicator hccl_world_group" in str(err.value)
    assert "(waited)" in str(err.value)


def test_ranks_arriving_further_apart_than_hccl_exec_timeout_fail_with_ei0002(a2):
    from geplug_torch.distributed.timing import CommClock

    job = read_job_env(a2, 0, 2, {"HCCL_EXEC_TIMEOUT": "1"})
    # rank 1 reaches the collective 2 s (simulated) after rank 0
    clock = CommClock(job, lambda arrival: [arrival, arrival + 2e6])
    try:
        with pytest.raises(HcclError) as err:
            clock.collective("allreduce", 1024.0, "float32", (256,))
    finally:
        clock.close()
    assert err.value.code == "EI0002" and err.value.ranks == (1,)
    assert "rank 0 waited 2.0 s (simulated) > HCCL_EXEC_TIMEOUT 1 s" in str(err.value)
