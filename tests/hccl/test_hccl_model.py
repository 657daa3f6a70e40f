"""The HCCL model: algorithms, link sharing, settings and faults (geplug.hccl)."""

from __future__ import annotations

import attrs
import pytest

from geplug.errors import HcclError
from geplug.hccl import Topology, read_faults, read_settings, simulate
from geplug.hccl.model import plan
from geplug.plugin import get_manager

pytestmark = pytest.mark.requires_products("atlas_a2")

MB64 = 64 * 2**20


def a2():
    return get_manager().products().get("atlas_a2")


def test_a2_server_is_a_full_mesh_of_eight_over_hccs_and_servers_talk_rdma():
    topo = Topology.generated(a2(), 16)
    assert topo.servers == 2 and topo.per_server() == 8
    assert topo.route(0, 7).link == "HCCS"
    assert topo.route(0, 8).link == "RDMA"


@pytest.mark.parametrize(("ranks", "kind", "measured"), [
    (2, "allgather", 38), (4, "allgather", 64), (8, "allgather", 149),
    (2, "allreduce", 18), (4, "allreduce", 30), (8, "allreduce", 72),
])
def test_torch_collectives_on_910b_are_predicted_within_25_percent(ranks, kind, measured):
    # limulidae README (hardware.md): algorithm bandwidth, all_gather over the output size
    cost = simulate(Topology.generated(a2(), ranks), kind, MB64, read_settings({}))
    size = MB64 * ranks if kind == "allgather" else MB64
    predicted = size / cost.duration_us / 1e3
    assert 0.75 <= predicted / measured <= 1.25, predicted


def test_peer_to_peer_copy_uses_the_whole_hccs_link():
    cost = simulate(Topology.generated(a2(), 2), "send", MB64, read_settings({}), root=0, peer=1)
    assert 0.75 <= (MB64 / cost.duration_us / 1e3) / 54.7 <= 1.25  # FlagPerf P2P 54.7 GB/s


def test_default_level1_algorithm_is_halving_doubling_for_power_of_two_servers_ring_else():
    s = read_settings({})
    assert plan(Topology.generated(a2(), 32), "allreduce", MB64, s)[0] == "mesh+H-D_R"
    assert plan(Topology.generated(a2(), 24), "allreduce", MB64, s)[0] == "mesh+ring"


def test_hccl_algo_chooses_the_server_algorithm():
    s = read_settings({"HCCL_ALGO": "level0:NA;level1:ring"})
    assert plan(Topology.generated(a2(), 32), "allreduce", MB64, s)[0] == "mesh+ring"
    per_op = read_settings({"HCCL_ALGO": "allreduce=level0:NA;level1:NB"})
    assert plan(Topology.generated(a2(), 32), "allreduce", MB64, per_op)[0] == "mesh+NB"
    assert plan(Topology.generated(a2(), 32), "allgather", MB64, per_op)[0] == "mesh+H-D_R"


@pytest.mark.parametrize(("name", "value", "words"), [
    ("HCCL_ALGO", "level1:fast", "not one of"),
    ("HCCL_ALGO", "level0:ring;level1:ring", "level0"),
    ("HCCL_ALGO", "allreduce=level0:NA;level1:pairwise", "only for alltoall"),
    ("HCCL_BUFFSIZE", "0", ">= 1"),
    ("HCCL_CONNECT_TIMEOUT", "60", "[120, 7200]"),
    ("HCCL_EXEC_TIMEOUT", "soon", "number of seconds"),
])
def test_bad_hccl_settings_name_the_variable_and_the_range(name, value, words):
    with pytest.raises(HcclError) as err:
        read_settings({name: value})
    assert name in str(err.value) and words in str(err.value)


def test_exec_timeout_rounds_down_to_68_where_the_product_says_so():
    assert read_settings({"HCCL_EXEC_TIMEOUT": "600"}, exec_timeout_step_s=68).exec_timeout_s == 544
    assert read_settings({"HCCL_EXEC_TIMEOUT": "600"}).exec_timeout_s == 600


def test_data_over_the_buffer_runs_in_loops_that_pay_latency_again():
    topo = Topology.generated(a2(), 8)
    big = simulate(topo, "allreduce", 512 * 2**20, read_settings({}))
    small_buffer = simulate(topo, "allreduce", 512 * 2**20, read_settings({"HCCL_BUFFSIZE": "1"}))
    assert small_buffer.duration_us > big.duration_us


def test_a_shared_pcie_bus_is_contended_where_the_hccs_mesh_is_not():
    product = a2()
    shared = attrs.evolve(product, topology=attrs.evolve(product.topology, intra_layout="shared"))
    mesh = simulate(Topology.generated(product, 8), "allgather", MB64, read_settings({}))
    bus = simulate(Topology.generated(shared, 8), "allgather", MB64, read_settings({}))
    assert bus.duration_us > 5 * mesh.duration_us  # 56 flows share one bus


def test_slow_link_slows_the_collective_that_uses_it():
    topo = Topology.generated(a2(), 16)
    s = read_settings({})
    plain = simulate(topo, "allreduce", MB64, s)
    slow = simulate(topo, "allreduce", MB64, s, read_faults({"GEPLUG_SIM_SLOW_LINK": "0-8:0.1"}))
    assert slow.duration_us > 2 * plain.duration_us


def test_down_link_fails_with_the_socket_timeout_code():
    with pytest.raises(HcclError) as err:
        simulate(Topology.generated(a2(), 16), "allreduce", MB64, read_settings({}),
                 read_faults({"GEPLUG_SIM_DOWN_LINK": "0-8"}))
    assert err.value.code == "EI0006" and "0-8" in str(err.value)


def test_ring_transit_per_rank_is_the_bytes_over_the_effective_link():
    topo = Topology.generated(a2(), 16)
    cost = simulate(topo, "allreduce", MB64, read_settings({"HCCL_ALGO": "level0:NA;level1:ring"}))
    rdma = cost.ranks[0].links["RDMA"]
    assert rdma[0] == pytest.approx(2 * (MB64 / 8) / 2)  # 2(m-1) steps of (S/k)/m, m = 2


@pytest.mark.parametrize(("raw", "name"), [("x", "GEPLUG_SIM_SLOW_RANK"),
                                           ("3:0.5", "GEPLUG_SIM_SLOW_RANK"),
                                           ("0-0", "GEPLUG_SIM_SLOW_LINK"),
                                           ("3", "GEPLUG_SIM_NIC_IP")])
def test_bad_fault_values_name_the_variable(raw, name):
    with pytest.raises(HcclError) as err:
        read_faults({name: raw})
    assert name in str(err.value)


def test_fault_naming_a_rank_outside_the_job_is_refused():
    with pytest.raises(HcclError, match="job has 8 ranks"):
        read_faults({"GEPLUG_SIM_SLOW_RANK": "9"}).check_ranks(8)


def test_product_without_topology_cannot_simulate_collectives():
    bare = attrs.evolve(a2(), topology=None)
    with pytest.raises(HcclError, match=r"\[topology\]"):
        Topology.generated(bare, 8)
