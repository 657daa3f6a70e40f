"""The simulator's per-task cost record; the model itself is the core's device model.

Every figure comes from :mod:`geplug.device.cost` (calibrated, sourced ``[compute]``
fields of the product) through :func:`geplug.device.build_device_model`; this module only
keeps the record the simulator's events and kernel descriptions read.
"""

from __future__ import annotations

import attrs

from geplug.device.ir import dtype_bytes, numel

__all__ = ["OpCost", "dtype_bytes", "numel"]


@attrs.frozen
class OpCost:
    """The modelled work and time of one task on the simulated device."""

    flops: float
    bytes_moved: float
    duration_us: float
    """Task overhead plus the busy time (the task's duration on its stream)."""
    block_dim: int
    cube_fraction: float
    task_type: str
