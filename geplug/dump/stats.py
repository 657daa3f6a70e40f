"""dump_data = "stats": per-tensor statistics in CSV instead of tensor files (options.md §4.7).

One ``statistic.csv`` per step directory (the real stack's file name; its columns are
inferred from CANN's statistics dump, not from the reference). Rows are buffered per
directory and the file is rewritten whole (temporary name, then rename) when the step
directory changes and at shutdown, so it is always complete.
"""

from __future__ import annotations

import csv
import io
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from geplug.dump.data_writer import select_tensors
from geplug.dump.fileio import ClaimedFiles

if TYPE_CHECKING:
    from geplug.dump.layout import DumpLayout
    from geplug.events import DumpEvent

__all__ = ["STAT_COLUMNS", "StatsWriter", "tensor_stats"]

STAT_COLUMNS = (
    "Op Type", "Op Name", "Task ID", "Stream ID", "Timestamp", "Input/Output", "Slot",
    "Data Size", "Data Type", "Format", "Shape", "Max Value", "Min Value", "Avg Value",
    "L2Norm Value", "Count", "Nan Count", "Negative Inf Count", "Positive Inf Count",
)


def tensor_stats(array: np.ndarray) -> dict[str, Any]:
    """max, min, mean over the finite values, the L2 norm of every value (inf / NaN when the
    tensor holds them, as a norm of the data would), and counts of NaN / -inf / +inf."""
    wide = np.asarray(array).astype(np.float64).reshape(-1)
    finite = wide[np.isfinite(wide)]
    return {
        "max": float(finite.max()) if finite.size else float("nan"),
        "min": float(finite.min()) if finite.size else float("nan"),
        "mean": float(finite.mean()) if finite.size else float("nan"),
        "l2norm": float(np.sqrt(np.dot(wide, wide))) if wide.size else 0.0,
        "count": int(wide.size),
        "nan": int(np.isnan(wide).sum()),
        "neg_inf": int(np.isneginf(wide).sum()),
        "pos_inf": int(np.isposinf(wide).sum()),
    }


class StatsWriter:
    """Collects statistics rows for one system and writes ``statistic.csv`` files."""

    def __init__(self, layout: DumpLayout) -> None:
        self.layout = layout
        self._rows: dict[str, list[list[Any]]] = {}
        self._current: str | None = None
        self._claimed = ClaimedFiles()
        self._lock = threading.Lock()

    def add(self, event: DumpEvent, *, mode: str) -> list[str]:
        """Record the statistics of ``event``'s selected tensors; returns files completed."""
        run, op = event.run, event.op
        directory = self.layout.step_dir(run.model_name, run.model_id, run.step)
        inputs, outputs = select_tensors(event, mode)
        rows = []
        for kind, tensors in (("Input", inputs), ("Output", outputs)):
            for slot, t in enumerate(tensors):
                s = tensor_stats(t.array)
                rows.append([
                    op.op_type, op.name, op.task_id, op.stream_id, event.timestamp_us, kind,
                    slot, t.array.nbytes, t.array.dtype.name, t.format,
                    "(" + ",".join(str(d) for d in t.array.shape) + ")", s["max"], s["min"],
                    s["mean"], s["l2norm"], s["count"], s["nan"], s["neg_inf"], s["pos_inf"],
                ])
        written: list[str] = []
        with self._lock:
            if self._current is not None and self._current != directory:
                written.append(self._flush(self._current))
            self._current = directory
            self._rows.setdefault(directory, []).extend(rows)
        return written

    def _flush(self, directory: str) -> str:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(STAT_COLUMNS)
        writer.writerows(self._rows.get(directory, []))
        return self._claimed.write(directory, "statistic", ".csv", buf.getvalue().encode())

    def close(self) -> list[str]:
        """Write every pending file; returns their paths."""
        with self._lock:
            paths = [self._flush(d) for d in self._rows if self._rows[d]]
            self._rows.clear()
            self._current = None
        return paths
