"""``geplug_torch.profiler``: torch_npu.profiler's API, writing its ``*_ascend_pt`` layout.

    from geplug_torch import profiler
    with profiler.profile(
            activities=[profiler.ProfilerActivity.CPU, profiler.ProfilerActivity.NPU],
            schedule=profiler.schedule(wait=0, warmup=0, active=2, repeat=1),
            on_trace_ready=profiler.tensorboard_trace_handler("./prof"),
            experimental_config=profiler._ExperimentalConfig(
                profiler_level=profiler.ProfilerLevel.Level1)) as prof:
        for batch in data:
            train_step(batch)
            prof.step()
"""

from __future__ import annotations

from geplug_torch.profiler.options import (
    AiCMetrics,
    ExportType,
    ProfilerAction,
    ProfilerActivity,
    ProfilerLevel,
    _ExperimentalConfig,
    schedule,
    tensorboard_trace_handler,
)
from geplug_torch.profiler.profile import profile

__all__ = [
    "AiCMetrics",
    "ExportType",
    "ProfilerAction",
    "ProfilerActivity",
    "ProfilerLevel",
    "_ExperimentalConfig",
    "profile",
    "schedule",
    "supported_activities",
    "tensorboard_trace_handler",
]


def supported_activities() -> set[ProfilerActivity]:
    """Both activities (the simulated device always has an NPU)."""
    return set(ProfilerActivity)
