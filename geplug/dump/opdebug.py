"""The Opdebug overflow record both ways: build it and decode it (formats.md §3.1, §3.2).

The record is output[0] of an ``Opdebug.Node_OpDebug...`` file. :func:`overflow_record`
writes the new layout (magic 0x5A5A5A5A); :func:`parse_overflow_record` reads the new layout
and the old 2048-byte one.
"""

from __future__ import annotations

import struct

import attrs

from geplug.dump.ids import ACC_AICPU
from geplug.errors import DumpError

__all__ = [
    "NOT_SET",
    "OPDEBUG_MAGIC",
    "STATUS_OVERFLOW",
    "OverflowRecord",
    "overflow_record",
    "parse_overflow_record",
]

OPDEBUG_MAGIC = 0x5A5A5A5A
NOT_SET = 65535
"""context_id / thread_id value meaning "not set" (formats.md §3.1)."""
STATUS_OVERFLOW = 0x1
"""The record's ``status``: non-zero, as readers require; geplug sets bit 0 (simulated)."""


def overflow_record(
    *,
    acc: int,
    model_id: int,
    stream_id: int,
    task_id: int,
    task_type: int,
    context_id: int = NOT_SET,
    thread_id: int = NOT_SET,
    status: int = STATUS_OVERFLOW,
) -> bytes:
    """The new-layout overflow record (formats.md §3.1), version 0.

    AIC/AIV: 11 u64 fields (data_len 88); AICPU: 8 u64 fields (data_len 64). The simulated
    ``pc_start`` / ``para_base`` addresses are derived from the task id.
    """
    if acc == ACC_AICPU:
        fields = [model_id, stream_id, task_id, task_type, context_id, 0, thread_id, status]
    else:
        pc_start = 0x1240_0000_0000 + (task_id << 12)
        para_base = 0x1280_0000_0000 + (task_id << 10)
        fields = [model_id, stream_id, task_id, task_type, context_id, thread_id, pc_start,
                  para_base, 0, 0, status]
    body = struct.pack(f"<{len(fields)}Q", *fields)
    return struct.pack("<6I", OPDEBUG_MAGIC, 0, 1, acc, 0, len(body)) + body


@attrs.frozen(kw_only=True)
class OverflowRecord:
    """A decoded Opdebug overflow record (formats.md §3.1 new layout, §3.2 old layout)."""

    layout: str
    """``new`` (magic) or ``old`` (2048-byte record)."""
    version: int
    valid: int
    acc_type: str
    """AIC, AIV, AICPU, SDMA (or ``AICORE`` for the old layout)."""
    fields: dict[str, int]

    @property
    def task_id(self) -> int:
        """The task id of the overflowing op."""
        return self.fields["task_id"]

    @property
    def stream_id(self) -> int:
        """The stream id of the overflowing op."""
        return self.fields["stream_id"]

    @property
    def status(self) -> int:
        """Non-zero for a valid record."""
        return self.fields["status"]


_ACC = {0: "AIC", 1: "AIV", 2: "AICPU", 3: "SDMA"}
_FIELDS = {
    "AIC": ("model_id", "stream_id", "task_id", "task_type", "context_id", "thread_id",
            "pc_start", "para_base", "core_id", "block_id", "status"),
    "SDMA": ("model_id", "stream_id", "task_id", "task_type", "context_id", "thread_id",
             "src_addr", "dst_addr", "channel_id", "status"),
    "AICPU": ("model_id", "stream_id", "task_id", "task_type", "context_id", "cpu_id",
              "thread_id", "status"),
}
_FIELDS["AIV"] = _FIELDS["AIC"]


def parse_overflow_record(data: bytes, *, path: str = "") -> OverflowRecord:
    """Decode an overflow record (formats.md §3.1 new layout with the magic, or §3.2 old)."""
    if len(data) >= 24 and struct.unpack_from("<I", data, 0)[0] == OPDEBUG_MAGIC:
        _, version, valid, acc, _, data_len = struct.unpack_from("<6I", data, 0)
        acc_name = _ACC.get(acc, str(acc))
        names = list(_FIELDS.get(acc_name, ()))
        if version == 1 and acc_name in ("AIC", "AIV"):
            names = [*names[:-1], "status", "status1", "status2", "status3"]
        count = data_len // 8
        if 24 + data_len > len(data) or count < len(names):
            raise DumpError(f"overflow record in {path!r} is truncated: data_len {data_len}, "
                            f"{len(data) - 24} bytes present", path=path)
        values = struct.unpack_from(f"<{count}Q", data, 24)
        return OverflowRecord(layout="new", version=version, valid=valid, acc_type=acc_name,
                              fields=dict(zip(names, values, strict=False)))
    if len(data) == 2048:
        ai_core = struct.unpack_from("<6Q", data, 256)
        kernel_code, block_idx, status = struct.unpack_from("<3Q", data, 1024)
        keys = ("model_id", "stream_id", "task_id", "task_type", "pc_start", "para_base")
        fields = dict(zip(keys, ai_core, strict=True))
        fields.update(kernel_code=kernel_code, block_idx=block_idx, status=status)
        return OverflowRecord(layout="old", version=0, valid=1, acc_type="AICORE",
                              fields=fields)
    raise DumpError(f"{path!r} holds no overflow record: {len(data)} bytes without the magic "
                    "0x5A5A5A5A and not the 2048-byte old layout of an Opdebug overflow file",
                    path=path)
