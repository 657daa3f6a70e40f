"""The overflow (Opdebug) writer: enable_dump_debug (options.md §4.5-4.6, formats.md §3).

An op whose inputs are normal but whose outputs overflow - inf or NaN, or on products whose
``dump.overflow_mode`` is ``saturation`` the saturated float16 extreme (|x| >= 65500, the
"abnormally huge" values of options.md §4.6) - produces, in its step directory:
``Opdebug.Node_OpDebug.{task_id}.{stream_id}.{timestamp}`` holding the new-layout overflow
record (magic 0x5A5A5A5A) as output[0], the op's own dump file (inputs and outputs) with the
same task and stream ids, a line in ``overflow_summary.json`` / ``.txt`` in the dump root, and
an :class:`OverflowWarning` (once per op).

``dump_debug_mode`` (options.md §4.6): ``aicore_overflow`` reports ops on the AI Core,
``all`` every op (AI CPU too). The simulator has no separate atomic-add path, so
``atomic_overflow`` alone reports nothing; this is documented in docs/dump.md.
"""

from __future__ import annotations

import json
import threading
import warnings
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from geplug.dump.encode import TensorPayload, encode_dump
from geplug.dump.fileio import ClaimedFiles, publish
from geplug.dump.ids import ACC_AICPU, acc_type, ffts_suffix, task_type_code
from geplug.dump.naming import dump_file_name
from geplug.dump.opdebug import NOT_SET, OPDEBUG_MAGIC, overflow_record
from geplug.errors import OverflowWarning

if TYPE_CHECKING:
    from geplug.dump.data_writer import DataDumpWriter
    from geplug.dump.layout import DumpLayout
    from geplug.events import DumpEvent, TensorRecord

__all__ = [
    "HUGE_FP16",
    "OPDEBUG_MAGIC",
    "OverflowFinding",
    "OverflowWarning",
    "OverflowWriter",
    "TensorOverflow",
    "find_overflow",
    "overflow_record",
]

HUGE_FP16 = 65500.0
"""float16 magnitudes at or above this are the saturated extreme (options.md §4.6)."""
_FLOAT_KINDS = ("f", "V")


@attrs.frozen(kw_only=True)
class TensorOverflow:
    """Why one output counts as overflowed."""

    index: int
    dtype: str
    shape: tuple[int, ...]
    nan: int
    pos_inf: int
    neg_inf: int
    saturated: int
    max_abs_finite: float


@attrs.frozen(kw_only=True)
class OverflowFinding:
    """An overflow at one op execution."""

    outputs: tuple[TensorOverflow, ...]
    acc_type: int


def _is_float(array: np.ndarray) -> bool:
    return array.dtype.kind == "f" or array.dtype.name in ("bfloat16", "float8_e5m2",
                                                             "float8_e4m3fn")


def _abnormal(array: np.ndarray, saturation: bool) -> bool:
    if not _is_float(array) or array.size == 0:
        return False
    if not np.isfinite(array).all():
        return True
    return saturation and array.dtype == np.float16 and bool(
        (np.abs(array) >= HUGE_FP16).any()
    )


def _describe(index: int, t: TensorRecord, saturation: bool) -> TensorOverflow | None:
    arr = t.array
    if not _abnormal(arr, saturation):
        return None
    wide = arr.astype(np.float64)
    finite = np.isfinite(wide)
    saturated = (
        int((np.abs(wide) >= HUGE_FP16).sum())
        if saturation and arr.dtype == np.float16 else 0
    )
    return TensorOverflow(
        index=index,
        dtype=arr.dtype.name,
        shape=tuple(int(d) for d in arr.shape),
        nan=int(np.isnan(wide).sum()),
        pos_inf=int(np.isposinf(wide).sum()),
        neg_inf=int(np.isneginf(wide).sum()),
        saturated=saturated,
        max_abs_finite=float(np.abs(wide[finite]).max()) if finite.any() else 0.0,
    )


def find_overflow(event: DumpEvent, *, saturation: bool, debug_mode: str) -> OverflowFinding | None:
    """The overflow ``event``'s op starts, or ``None``.

    Reported only when every floating input is normal (an overflow carried in from an
    earlier op is that op's) and some floating output is not. ``debug_mode`` filters by
    engine (module docstring).
    """
    kind = acc_type(event.op)
    if debug_mode == "atomic_overflow" or (debug_mode == "aicore_overflow" and kind == ACC_AICPU):
        return None
    if any(_abnormal(t.array, saturation) for t in event.inputs):
        return None
    found = tuple(
        d for i, t in enumerate(event.outputs) if (d := _describe(i, t, saturation)) is not None
    )
    if not found:
        return None
    return OverflowFinding(outputs=found, acc_type=kind)


class OverflowWriter:
    """Writes Opdebug files, the overflowing op's dump and the summary for one system."""

    def __init__(self, layout: DumpLayout, data: DataDumpWriter, *, product: str) -> None:
        self.layout = layout
        self.data = data
        self.product = product
        self.entries: list[dict[str, Any]] = []
        self.summary_path: str | None = None
        self._claimed = ClaimedFiles()
        self._warned: set[str] = set()
        self._lock = threading.Lock()

    def write(self, event: DumpEvent, finding: OverflowFinding) -> list[str]:
        """Write the Opdebug file and the op's own dump; update the summary; warn once."""
        run, op = event.run, event.op
        ffts = self.data.ffts_plus
        directory = self.layout.step_dir(run.model_name, run.model_id, run.step)
        suffix = ffts_suffix(op, ffts, self.layout.device_id)
        record = overflow_record(
            acc=finding.acc_type,
            model_id=run.model_id,
            stream_id=op.stream_id,
            task_id=op.task_id,
            task_type=task_type_code(op, ffts),
            context_id=0 if ffts else NOT_SET,
            thread_id=0 if ffts else NOT_SET,
        )
        chunks = encode_dump(
            op_name="Node_OpDebug",
            dump_time=event.timestamp_us,
            outputs=[TensorPayload(array=np.frombuffer(record, dtype=np.uint8),
                                   original_name="Node_OpDebug")],
        )

        def name_for(ts: int) -> str:
            return dump_file_name("Opdebug", "Node_OpDebug", op.task_id, op.stream_id, ts, suffix)

        opdebug = publish(directory, name_for, event.timestamp_us, chunks)
        own = self.data.write_tensors(event, event.inputs, event.outputs)
        summary = self._summarise(event, finding, opdebug, own)
        return [opdebug, own, *summary]

    def _summarise(
        self, event: DumpEvent, finding: OverflowFinding, opdebug: str, own: str
    ) -> list[str]:
        run, op = event.run, event.op
        entry = {
            "step": run.step,
            "model_name": run.model_name,
            "model_id": run.model_id,
            "op_name": op.name,
            "op_type": op.op_type,
            "engine": op.engine,
            "dtype": op.dtype,
            "task_id": op.task_id,
            "stream_id": op.stream_id,
            "acc_type": ("AIC", "AIV", "AICPU")[finding.acc_type],
            "opdebug_file": opdebug,
            "dump_file": own,
            "outputs": [attrs.asdict(t) for t in finding.outputs],
        }
        with self._lock:
            self.entries.append(entry)
            data = {
                "product": self.product,
                "device_id": self.layout.device_id,
                "dump_dir": self.layout.time_dir,
                "first_overflow": self.entries[0],
                "overflows": self.entries,
            }
            root = self.layout.root
            json_path = self._claimed.write(
                root, "overflow_summary", ".json",
                (json.dumps(data, indent=2) + "\n").encode("utf-8"),
            )
            txt_path = self._claimed.write(
                root, "overflow_summary", ".txt", _render_text(data).encode("utf-8")
            )
            self.summary_path = json_path
            first_time = op.name not in self._warned
            self._warned.add(op.name)
        if first_time:
            worst = finding.outputs[0]
            # explicit location: the user's frame is many plugin-call levels up
            warnings.warn_explicit(
                OverflowWarning(
                    f"overflow at op {op.name!r} ({op.op_type}, {op.dtype}) in step {run.step}: "
                    f"output {worst.index} has {worst.pos_inf} +inf, {worst.neg_inf} -inf, "
                    f"{worst.nan} NaN, {worst.saturated} saturated value(s) although its inputs "
                    f"are finite; see {txt_path}"
                ),
                OverflowWarning, filename="geplug-dump", lineno=0, module="geplug.dump.overflow",
            )
        return [json_path, txt_path]


def _render_text(data: dict[str, Any]) -> str:
    lines = [
        f"geplug overflow summary - product {data['product']}, device {data['device_id']}",
        f"dump directory: {data['dump_dir']}",
        f"{len(data['overflows'])} overflow(s); the first one is where the overflow starts.",
        "",
        f"{'step':>5}  {'task':>6}  {'stream':>6}  {'acc':<5}  {'op type':<16}  op name / outputs",
    ]
    for e in data["overflows"]:
        lines.append(
            f"{e['step']:>5}  {e['task_id']:>6}  {e['stream_id']:>6}  {e['acc_type']:<5}  "
            f"{e['op_type']:<16}  {e['op_name']}"
        )
        for t in e["outputs"]:
            lines.append(
                f"{'':>50}output {t['index']} {t['dtype']}{list(t['shape'])}: "
                f"+inf {t['pos_inf']}, -inf {t['neg_inf']}, nan {t['nan']}, "
                f"saturated {t['saturated']}, max |finite| {t['max_abs_finite']:g}"
            )
        lines.append(f"{'':>50}{e['opdebug_file']}")
    return "\n".join(lines) + "\n"
