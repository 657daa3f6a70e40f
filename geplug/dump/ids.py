"""Task-type codes and accelerator kinds derived from an op's compiled record."""

from __future__ import annotations

from typing import TYPE_CHECKING

from geplug.dump.naming import TASK_TYPE_CODES

if TYPE_CHECKING:
    from geplug.events import OpRecord

__all__ = ["ACC_AIC", "ACC_AICPU", "ACC_AIV", "acc_type", "ffts_suffix", "task_type_code"]

ACC_AIC, ACC_AIV, ACC_AICPU = 0, 1, 2
"""Opdebug record ``acc_type`` values (formats.md §3.1)."""


def task_type_code(op: OpRecord, ffts_plus: bool) -> int:
    """The file-name task_type code (formats.md §2.6) of ``op``.

    AI CPU ops are AICPU (1), communication ops HCCL (3); AI Core ops are FFTSPLUS (4) on
    products whose declaration says their tasks run as FFTS+ tasks, AICORE (0) elsewhere.
    """
    if op.engine == "AI_CPU" or op.task_type == "AI_CPU":
        return TASK_TYPE_CODES["AICPU"]
    if op.collective or op.task_type == "COMMUNICATION":
        return TASK_TYPE_CODES["HCCL"]
    return TASK_TYPE_CODES["FFTSPLUS" if ffts_plus else "AICORE"]


def ffts_suffix(op: OpRecord, ffts_plus: bool, device_id: int) -> tuple[int, int, int, int] | None:
    """(task_type, context_id, thread_id, device_id) for FFTS+ names, or ``None``."""
    if not ffts_plus:
        return None
    return (task_type_code(op, True), 0, 0, int(device_id))


def acc_type(op: OpRecord) -> int:
    """The Opdebug ``acc_type`` of ``op``: AICPU for AI CPU ops, AIV for vector-core tasks,
    AIC otherwise (formats.md §3.1)."""
    if op.engine == "AI_CPU" or op.task_type == "AI_CPU":
        return ACC_AICPU
    if op.task_type in ("AI_VECTOR_CORE", "MIX_AIV"):
        return ACC_AIV
    return ACC_AIC
