"""A3 topology: two dies per package over SIO, the super-node over the unified bus."""

from __future__ import annotations

import pytest

from geplug.hccl import Topology
from geplug.plugin import get_manager

pytestmark = pytest.mark.requires_products("atlas_a3")


def test_a3_dies_of_a_package_talk_sio_and_servers_of_a_supernode_talk_ub():
    topo = Topology.generated(get_manager().products().get("atlas_a3"), 32)
    assert topo.servers == 2
    assert topo.route(0, 1).link == "SIO"
    assert topo.route(0, 2).link == "HCCS"
    assert topo.route(0, 16).link == "HCCS"  # same super-node: the unified bus, not RoCE
