"""The data-dump writer: one §2.1 file per op execution on a dump step (options.md §4).

``dump_mode`` picks the tensors: ``input``, ``output`` (default) or ``all`` (inputs and
outputs in one file). A collective op arrives as two events, ``phase`` ``before`` (inputs)
and ``after`` (outputs); each becomes its own file, as the real stack writes them
(options.md §4.4).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from geplug.config.rules.dump import DUMP_MODES
from geplug.dump.encode import TensorPayload, encode_dump
from geplug.dump.fileio import publish
from geplug.dump.ids import ffts_suffix
from geplug.dump.naming import dump_file_name

if TYPE_CHECKING:
    from geplug.dump.layout import DumpLayout
    from geplug.events import DumpEvent, TensorRecord

__all__ = ["DUMP_MODES", "DataDumpWriter", "select_tensors"]



def _payloads(event: DumpEvent, tensors: tuple[TensorRecord, ...]) -> list[TensorPayload]:
    return [
        TensorPayload(array=t.array, format=t.format, original_name=event.op.name,
                      original_index=i)
        for i, t in enumerate(tensors)
    ]


def select_tensors(
    event: DumpEvent, mode: str
) -> tuple[tuple[TensorRecord, ...], tuple[TensorRecord, ...]]:
    """The (inputs, outputs) ``mode`` dumps from ``event`` (either may be empty)."""
    want_in = mode in ("input", "all") and event.phase in ("all", "before")
    want_out = mode in ("output", "all") and event.phase in ("all", "after")
    return (event.inputs if want_in else ()), (event.outputs if want_out else ())


class DataDumpWriter:
    """Writes data dump files into a :class:`DumpLayout`."""

    def __init__(self, layout: DumpLayout, *, ffts_plus: bool) -> None:
        self.layout = layout
        self.ffts_plus = ffts_plus

    def write(self, event: DumpEvent, *, mode: str = "output") -> list[str]:
        """Write ``event``'s tensors selected by ``mode``; returns the path (or nothing)."""
        inputs, outputs = select_tensors(event, mode)
        if not inputs and not outputs:
            return []
        return [self.write_tensors(event, inputs, outputs)]

    def write_tensors(
        self,
        event: DumpEvent,
        inputs: tuple[TensorRecord, ...],
        outputs: tuple[TensorRecord, ...],
    ) -> str:
        """Write one file holding ``inputs`` and ``outputs`` of ``event``'s op."""
        run, op = event.run, event.op
        directory = self.layout.step_dir(run.model_name, run.model_id, run.step)
        suffix = ffts_suffix(op, self.ffts_plus, self.layout.device_id)
        chunks = encode_dump(
            op_name=op.name,
            dump_time=event.timestamp_us,
            inputs=_payloads(event, inputs),
            outputs=_payloads(event, outputs),
            address_seed=op.task_id,
        )

        def name_for(ts: int) -> str:
            return dump_file_name(op.op_type, op.name, op.task_id, op.stream_id, ts, suffix)

        return publish(directory, name_for, event.timestamp_us, chunks)
