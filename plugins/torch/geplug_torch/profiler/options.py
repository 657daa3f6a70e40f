"""torch_npu.profiler's option types: activities, levels, metrics, export types, schedule.

The names and values follow ``torch_npu.profiler`` (``ProfilerActivity.CPU/NPU``,
``ProfilerLevel.Level_none/Level0/Level1/Level2``, ``AiCMetrics.*``, ``ExportType.Text/Db``,
``schedule(wait, active, warmup, repeat, skip_first)``, ``tensorboard_trace_handler``).
Where torch_npu resets an invalid value with a warning, geplug refuses it with a
:class:`~geplug.errors.ProfilingError` naming the field, the value and the accepted values
(options.md §12: "reject").
"""

from __future__ import annotations

import enum
import os
import socket
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from geplug.errors import ProfilingError

__all__ = [
    "AiCMetrics",
    "ExportType",
    "ProfilerAction",
    "ProfilerActivity",
    "ProfilerLevel",
    "TraceHandler",
    "_ExperimentalConfig",
    "schedule",
    "tensorboard_trace_handler",
]


class ProfilerActivity(enum.Enum):
    """What is collected: host (framework ops) and device (NPU tasks)."""

    CPU = "CPU"
    NPU = "NPU"


class ProfilerLevel(str, enum.Enum):
    """torch_npu's collection levels (their string values are torch_npu's)."""

    Level_none = "Level_none"
    Level0 = "Level0"
    Level1 = "Level1"
    Level2 = "Level2"


class AiCMetrics(str, enum.Enum):
    """aic_metrics groups (values: the msprof group names)."""

    AiCoreNone = "AiCoreNone"
    PipeUtilization = "PipeUtilization"
    ArithmeticUtilization = "ArithmeticUtilization"
    Memory = "Memory"
    MemoryL0 = "MemoryL0"
    MemoryUB = "MemoryUB"
    ResourceConflictRatio = "ResourceConflictRatio"
    L2Cache = "L2Cache"
    MemoryAccess = "MemoryAccess"


class ExportType(str, enum.Enum):
    """Output forms: text files (CSV/JSON) and/or the SQLite database."""

    Text = "text"
    Db = "db"


class ProfilerAction(enum.Enum):
    """What the schedule says for a step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def _enum(kind: type[enum.Enum], field: str, value: Any) -> Any:
    if isinstance(value, kind):
        return value
    for member in kind:
        if value == member.value or value == member.name:
            return member
    accepted = ", ".join(f"{kind.__name__}.{m.name}" for m in kind)
    raise ProfilingError(
        f"_ExperimentalConfig({field}={value!r}) is invalid: expected one of {accepted} "
        "(torch_npu would reset it to the default with a warning; geplug refuses it)")


def _bool(field: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ProfilingError(f"_ExperimentalConfig({field}={value!r}) is invalid: expected "
                             "True or False")
    return value


def _export_types(value: Any) -> tuple[ExportType, ...]:
    items = value if isinstance(value, (list, tuple)) else [value]
    if not items:
        raise ProfilingError("_ExperimentalConfig(export_type=[]) is invalid: name "
                             "ExportType.Text, ExportType.Db or both")
    return tuple(dict.fromkeys(_enum(ExportType, "export_type", v) for v in items))


class _ExperimentalConfig:
    """torch_npu.profiler._ExperimentalConfig (the fields geplug acts on, validated)."""

    def __init__(self, profiler_level: Any = ProfilerLevel.Level0,
                 aic_metrics: Any = AiCMetrics.AiCoreNone, l2_cache: Any = False,
                 op_attr: Any = False, data_simplification: Any = True,
                 record_op_args: Any = False, export_type: Any = ExportType.Text,
                 msprof_tx: Any = False, host_sys: Sequence[Any] = (), **others: Any) -> None:
        if others:
            known = ("profiler_level, aic_metrics, l2_cache, op_attr, data_simplification, "
                     "record_op_args, export_type, msprof_tx, host_sys")
            raise ProfilingError(f"_ExperimentalConfig({next(iter(others))}=...) is not a "
                                 f"field geplug reads; its fields: {known}")
        self.profiler_level: ProfilerLevel = _enum(ProfilerLevel, "profiler_level",
                                                   profiler_level)
        self.aic_metrics: AiCMetrics = _enum(AiCMetrics, "aic_metrics", aic_metrics)
        self.l2_cache = _bool("l2_cache", l2_cache)
        self.op_attr = _bool("op_attr", op_attr)
        self.data_simplification = _bool("data_simplification", data_simplification)
        self.record_op_args = _bool("record_op_args", record_op_args)
        self.export_type: tuple[ExportType, ...] = _export_types(export_type)
        self.msprof_tx = _bool("msprof_tx", msprof_tx)
        self.host_sys: tuple[str, ...] = tuple(str(getattr(h, "value", h)) for h in host_sys)

    def __repr__(self) -> str:
        return (f"_ExperimentalConfig(profiler_level={self.profiler_level.value}, "
                f"aic_metrics={self.aic_metrics.value}, l2_cache={self.l2_cache}, "
                f"export_type={[e.value for e in self.export_type]})")

    def profiling_options(self, output: str, activities: frozenset[ProfilerActivity]
                          ) -> dict[str, str]:
        """The msprof ``profiling_options`` this configuration means (options.md §3.3):
        Level0 = task_time l0; Level1 = l1 with the runtime API (communication comes with
        task_time), and
        PipeUtilization when no metrics group is named (torch_npu's Level1 default);
        Level2 adds AI CPU. ``training_trace`` is on (step times); the profiler leaves it
        out where the product's run mode has no iteration trace (online inference)."""
        level = self.profiler_level
        opts: dict[str, str] = {"output": output, "training_trace": "on"}
        if ProfilerActivity.NPU not in activities or level == ProfilerLevel.Level_none:
            opts["task_time"] = "off"
        elif level == ProfilerLevel.Level0:
            opts["task_time"] = "l0"
        else:
            opts["task_time"] = "l1"
            opts["runtime_api"] = "on"
            if level == ProfilerLevel.Level2:
                opts["aicpu"] = "on"
        metrics = self.aic_metrics
        if metrics == AiCMetrics.AiCoreNone and opts["task_time"] == "l1":
            metrics = AiCMetrics.PipeUtilization
        if metrics != AiCMetrics.AiCoreNone and opts["task_time"] == "l1":
            opts["aic_metrics"] = metrics.value
        if self.l2_cache:
            opts["l2"] = "on"
        if self.msprof_tx:
            opts["msproftx"] = "on"
        if self.host_sys:
            opts["host_sys"] = ",".join(self.host_sys)
        return opts


@attrs.frozen
class _Schedule:
    wait: int
    active: int
    warmup: int
    repeat: int
    skip_first: int

    def __call__(self, step: int) -> ProfilerAction:
        if step < self.skip_first:
            return ProfilerAction.NONE
        step -= self.skip_first
        cycle = self.wait + self.warmup + self.active
        if self.repeat > 0 and step // cycle >= self.repeat:
            return ProfilerAction.NONE
        pos = step % cycle
        if pos < self.wait:
            return ProfilerAction.NONE
        if pos < self.wait + self.warmup:
            return ProfilerAction.WARMUP
        return (ProfilerAction.RECORD_AND_SAVE if pos == cycle - 1
                else ProfilerAction.RECORD)


def schedule(wait: int, active: int, warmup: int = 0, repeat: int = 0,
             skip_first: int = 0) -> Callable[[int], ProfilerAction]:
    """torch_npu.profiler.schedule: skip ``skip_first`` steps, then cycles of ``wait`` idle,
    ``warmup`` and ``active`` recorded steps, ``repeat`` times (0 = until the end)."""
    for name, value in (("wait", wait), ("active", active), ("warmup", warmup),
                        ("repeat", repeat), ("skip_first", skip_first)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ProfilingError(f"schedule({name}={value!r}) is invalid: expected an "
                                 "integer >= 0")
    if active < 1:
        raise ProfilingError(f"schedule(active={active!r}) is invalid: at least one step "
                             "must be recorded (active >= 1)")
    return _Schedule(wait, active, warmup, repeat, skip_first)


@attrs.frozen
class TraceHandler:
    """What ``tensorboard_trace_handler`` returns: where each collection is written."""

    dir_name: str
    worker_name: str

    def __call__(self, prof: Any) -> None:
        """Called by the profiler when a collection is complete (the files exist)."""


def tensorboard_trace_handler(dir_name: str | None = None, worker_name: str | None = None,
                              analyse_flag: bool = True) -> TraceHandler:
    """Write each collection to ``{dir_name}/{worker_name}_{ts17}_ascend_pt`` (worker name
    default ``{hostname}_{pid}``; ``dir_name`` default ``./``)."""
    path = os.path.abspath(dir_name or ".")
    if os.path.exists(path) and not os.path.isdir(path):
        raise ProfilingError(f"tensorboard_trace_handler(dir_name={dir_name!r}): the path "
                             "exists and is not a directory; pass a directory")
    worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
    return TraceHandler(path, worker)
