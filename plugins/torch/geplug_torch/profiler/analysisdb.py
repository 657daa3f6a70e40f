"""``ASCEND_PROFILER_OUTPUT/analysis.db``: torch_npu's analysis database (``ExportType.Db``).

When ``ascend_pytorch_profiler_{rank}.db`` is present, ``msprof-analyze cluster`` takes the
database route (``data type: db``) and reads each rank's ``analysis.db`` instead of the text
files: ``StepTraceTime`` (step_trace_analysis, cluster_time_summary) and ``CommAnalyzerTime``
/ ``CommAnalyzerBandwidth`` / ``CommAnalyzerMatrix`` (communication_time, hccl_sum,
communication_matrix). Without it those analyses find no data.

geplug writes it from the same records as the text export: one ``StepTraceTime`` row per
step with step_trace_time.csv's numbers (µs), and one communication row per op (and link) of
``communication.json`` / ``communication_matrix.json`` with the step (``step{N}``) and type
(``collective`` / ``p2p``) it is filed under there. The communication tables have msprof's
columns (:data:`geplug.profiling.analyzer_db.SCHEMA`) plus ``step`` and ``type`` (the link
table ``op_name`` too); the group
name is the one after ``@`` in the JSON (the hash of the communicator name). Complete or
absent.
"""

from __future__ import annotations

from typing import Any

from geplug.profiling.analyzer_db import SCHEMA, comm_rows
from geplug.profiling.layout import atomic_sqlite
from geplug_torch.profiler.steptime import StepTime

__all__ = ["write_analysis_db"]

_PER_STEP = ", step TEXT, type TEXT"
"""What torch_npu adds to msprof's communication tables: the step and op type of each row."""

_MATRIX_EXTRA = ", op_name TEXT" + _PER_STEP
"""The link table also has ``op_name``, the ``Op Name`` of each link in
communication_matrix.json: msprof-analyze's matrix recipe groups a PyTorch collection's links
by it (it derives the column itself only from msprof / MindSpore data)."""


def write_analysis_db(path: str, steps: dict[int, StepTime],
                      communication: dict[str, Any], matrix: dict[str, Any]) -> str:
    """Write ``path``: ``steps`` are the step_trace_time steps, ``communication`` and
    ``matrix`` the per-step ``communication*.json`` contents (``{}`` when not distributed)."""
    with atomic_sqlite(path) as conn:
        for table, cols in SCHEMA.items():
            extra = {"StepTraceTime": "", "CommAnalyzerMatrix": _MATRIX_EXTRA}.get(table,
                                                                              _PER_STEP)
            conn.execute(f"CREATE TABLE {table} ({cols}{extra})")
        conn.executemany("INSERT INTO StepTraceTime VALUES (?,?,?,?,?,?,?,?,?,?)",
                         [(st.step, *(v / 1000 for v in st.columns().values()))
                          for st in steps.values()])
        names = sorted(set(communication) | set(matrix))
        for step in names:
            for kind in ("collective", "p2p"):
                times, bands, links = comm_rows(communication.get(step, {}).get(kind, {}),
                                                matrix.get(step, {}).get(kind, {}))
                tail = (step, kind)
                conn.executemany("INSERT INTO CommAnalyzerTime VALUES "
                                 "(?,?,?,?,?,?,?,?,?,?,?,?)", [r + tail for r in times])
                conn.executemany("INSERT INTO CommAnalyzerBandwidth VALUES "
                                 "(?,?,?,?,?,?,?,?,?,?,?,?)", [r + tail for r in bands])
                conn.executemany("INSERT INTO CommAnalyzerMatrix VALUES "
                                 "(?,?,?,?,?,?,?,?,?,?,?)",
                                 [(*r, r[0], *tail) for r in links])
    return path
