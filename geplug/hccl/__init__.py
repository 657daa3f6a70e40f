"""The HCCL model: collectives over a job's topology (DESIGN.md "the HCCL model").

- :mod:`geplug.hccl.topology` — ranks, servers, links from the product's ``[topology]`` and a
  rank table or a rank count;
- :mod:`geplug.hccl.model` — HCCL's algorithms as phases of flows, an alpha-beta cost with
  link sharing, per-rank transit times;
- :mod:`geplug.hccl.collectives` — the exact results every rank receives;
- :mod:`geplug.hccl.settings` — HCCL_ALGO, HCCL_BUFFSIZE, HCCL_CONNECT_TIMEOUT,
  HCCL_EXEC_TIMEOUT;
- :mod:`geplug.hccl.report` — one rank's CommInfo of a modelled collective;
- :mod:`geplug.hccl.faults` — slow rank, slow / down link, absent rank, NIC IP mismatch.

No product knowledge lives here: every figure comes from the product's declaration.
"""

from __future__ import annotations

from geplug.hccl.faults import Faults, read_faults
from geplug.hccl.model import KINDS, CollectiveCost, simulate
from geplug.hccl.report import comm_info
from geplug.hccl.settings import HcclSettings, read_settings
from geplug.hccl.topology import Place, Topology

__all__ = ["KINDS", "CollectiveCost", "Faults", "HcclSettings", "Place", "Topology",
           "comm_info", "read_faults", "read_settings", "simulate"]
