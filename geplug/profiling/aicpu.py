"""aicpu: AI CPU task rows -> ``aicpu_{ts14}.csv`` (options.md §3.3 ``aicpu``).

Column list after msprof's aicpu summary (inferred from msprof docs; formats.md lists the file
name only). Compute vs memcpy split is modelled from the task's FLOPs and bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from geplug.profiling.layout import fmt, fmt_ns

if TYPE_CHECKING:
    from geplug.profiling.task_collector import TaskRow

__all__ = ["HEADER", "is_aicpu", "row"]

HEADER = ["Device_id", "Timestamp(us)", "Node", "Compute_time(us)", "Memcpy_time(us)",
          "Task_time(us)", "Dispatch_time(us)", "Total_time(us)", "Stream ID", "Task ID"]


def is_aicpu(task: TaskRow) -> bool:
    """Whether the task ran on AI CPU."""
    return task.op.task_type == "AI_CPU" or task.op.engine == "AI_CPU"


def row(device_id: int, task: TaskRow) -> list[str]:
    """One aicpu CSV row."""
    work = task.op.flops + task.op.bytes_moved
    share = task.op.flops / work if work > 0 else 1.0
    d = task.duration_us
    return [str(device_id), fmt_ns(task.start_ns), task.op.name, fmt(d * share),
            fmt(d * (1 - share)), fmt(d), fmt(task.wait_us), fmt(d + task.wait_us),
            str(task.op.stream_id), str(task.op.task_id)]
