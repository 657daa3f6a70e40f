"""The exception-dump writer: an AI Core error's tensors (options.md §8, formats.md §4).

Files go to ``{root}/extra-info/data-dump/{device_id}/`` (the resolved
``exception_dump_dir``) under the older GE name ``{op_type}.{op_name}.{task_id}.{now_us}``
(no stream id; sanitised as formats.md §2.6), which the offline reader regex also accepts;
the newer ``exception_info.{a}.{b}.{ts17}`` form is not used because the meaning of ``a`` and
``b`` is undocumented. Content (§2.1 layout, header version 2.0):

- level 1 (normal, L1): inputs (with ``arg_index``), outputs, the workspace as ``space[0]``;
- level 2 (lite, L0): the same plus the tiling data as ``space[1]``;
- both: a ``dfx_message`` starting ``[AIC_INFO]`` with the node, task, sizes and ``args(...)``.

The host log line readers grep (``dump exception to file ...``) goes to the ``geplug.dump``
logger; level 1 also logs the op name, kernel and every tensor's dtype, shape and format.
"""

from __future__ import annotations

import logging

from geplug.dump.encode import TensorPayload, encode_dump
from geplug.dump.fileio import ensure_dir, publish
from geplug.dump.naming import dump_file_name
from geplug.events import DumpEvent

__all__ = ["ExceptionDumpWriter"]

log = logging.getLogger("geplug.dump")

def _dfx_message(event: DumpEvent, level: int, addresses: list[int]) -> str:
    op = event.op
    parts = [
        f"[AIC_INFO] node_name:{op.name}, node_type:{op.op_type}, stream_id:{op.stream_id}, "
        f"task_id:{op.task_id}, block_dim:{op.block_dim}, dump level:{level}, "
        f"workspace_size:{len(event.workspace)}, tiling_data_size:"
        f"{len(event.tiling) if level == 2 else 0}",
        "args(" + ", ".join(f"0x{a:x}" for a in addresses) + ")",
    ]
    if level == 2 and event.tiling:
        parts.append(f"[TILING_DATA] {event.tiling[:256].hex()}")
    if event.message:
        parts.append(f"[ERROR] {event.message}")
    return "\n".join(parts)


class ExceptionDumpWriter:
    """Writes exception dumps for one system."""

    def write(self, event: DumpEvent, *, level: int, directory: str) -> list[str]:
        """Write the exception dump of ``event``'s op at ``level`` (1 or 2) into
        ``directory``; returns the path."""
        ensure_dir(directory)
        op = event.op
        inputs = [TensorPayload(array=t.array, format=t.format) for t in event.inputs]
        outputs = [
            TensorPayload(array=t.array, format=t.format, original_name=op.name,
                          original_index=i)
            for i, t in enumerate(event.outputs)
        ]
        spaces = [event.workspace]
        if level == 2:
            spaces.append(event.tiling)
        base = 0x12C0_0000_0000 + (op.task_id << 20)
        addresses = [base + 0x1000 * i for i in range(len(inputs) + len(outputs))]
        chunks = encode_dump(
            op_name=op.name,
            dump_time=event.timestamp_us,
            inputs=inputs,
            outputs=outputs,
            spaces=spaces,
            dfx_message=_dfx_message(event, level, addresses),
            exception=True,
            address_seed=op.task_id,
        )

        def name_for(ts: int) -> str:
            return dump_file_name(op.op_type, op.name, op.task_id, None, ts)

        path = publish(directory, name_for, event.timestamp_us, chunks)
        log.warning("dump exception to file %s", path)
        if level == 1:
            _log_tensors(event)
        return [path]


def _log_tensors(event: DumpEvent) -> None:
    """The normal (L1) dump's host-log lines: op name, kernel and each tensor's description
    (options.md §8). The simulator has no real kernel names; the op type stands in."""
    op = event.op
    log.warning("[AIC_INFO] node_name:%s, node_type:%s, kernel_name:%s, task_id:%d, "
                "stream_id:%d", op.name, op.op_type, op.op_type, op.task_id, op.stream_id)
    for kind, tensors in (("input", event.inputs), ("output", event.outputs)):
        for i, t in enumerate(tensors):
            log.warning("[AIC_INFO] %s[%d] dtype:%s, shape:%s, format:%s", kind, i, t.dtype,
                        list(t.shape), t.format)
