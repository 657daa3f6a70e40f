"""``ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_{rank}.db``: torch_npu's database export.

torch_npu's DB is msprof's database (``STRING_IDS``, ``TASK``, ``COMPUTE_TASK_INFO``,
``CANN_API``, ``COMMUNICATION_*``, ``ENUM_*``, ``META_DATA``, ...) plus the framework tables
msprof-analyze 26.2.0 joins against (``compare_tools/.../npu_profiling_db_parser.py``,
``advisor/dataset/timeline_op_collector/timeline_op_sql.py``, the cluster recipes):

- ``PYTORCH_API`` (startNs, endNs, globalTid, connectionId, name, sequenceNumber,
  fwdThreadId, inputDtypes, inputShapes, callchainId, type): one row per framework op,
  ``type`` the ``ENUM_API_TYPE`` id of ``op``, strings as ``STRING_IDS`` ids;
- ``CONNECTION_IDS`` (id, connectionId): ``PYTORCH_API.connectionId`` -> the
  ``TASK.connectionId`` of each kernel the op launched (the torch-to-NPU flow);
- ``STEP_TIME`` (id, startNs, endNs): one row per profiled step;
- ``OP_MEMORY`` and ``MEMORY_RECORD`` with ``profile_memory=True``, from ``NPU_OP_MEM``
  (:mod:`geplug_torch.profiler.memory`).

Connection ids start at 1 (the compare tool ignores a kernel whose id is 0).

So the file is derived, not re-measured: a copy of the collection's ``PROF_*/msprof_*.db``
(written by the core's profiling writers) with the framework rows added; complete or absent.
"""

from __future__ import annotations

import glob
import os
import sqlite3
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from geplug.profiling.layout import atomic_sqlite
from geplug.profiling.msprof_db import API_TYPES
from geplug_torch.profiler.hostops import host_ops, ns
from geplug_torch.profiler.memory import memory_tables

if TYPE_CHECKING:
    from geplug_torch.profiler.profile import Collection

__all__ = ["write_pytorch_db"]


def _msprof_db(prof_dirs: Iterable[str]) -> str | None:
    for d in prof_dirs:
        found = sorted(glob.glob(os.path.join(d, "msprof_*.db")))
        if found:
            return found[-1]
    return None


class _Strings:
    """``STRING_IDS`` of the copied database, extended on demand."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.ids = {str(v): int(i) for i, v in conn.execute("SELECT id, value FROM STRING_IDS")}
        self.next = max(self.ids.values(), default=-1) + 1

    def __call__(self, value: str) -> int:
        got = self.ids.get(value)
        if got is None:
            got = self.ids[value] = self.next
            self.conn.execute("INSERT INTO STRING_IDS VALUES (?, ?)", (got, value))
            self.next += 1
        return got


_CONNECTED = ("TASK", "CANN_API", "COMMUNICATION_OP", "MSTX_EVENTS")
"""The msprof tables whose ``connectionId`` links a launch to its tasks."""


def _nonzero_connections(conn: sqlite3.Connection) -> None:
    """Shift every ``connectionId`` by one when the ids start at 0: msprof-analyze's
    compare drops a kernel whose connection id is 0 (``if data_bean.connection_id``), so
    the first op would lose its kernel. Links between the tables are kept."""
    low = min((r[0] for t in _CONNECTED
               for r in conn.execute(f"SELECT MIN(connectionId) FROM {t}") if r[0] is not None),
              default=1)
    if low == 0:
        for t in _CONNECTED:
            conn.execute(f"UPDATE {t} SET connectionId = connectionId + 1 "
                         "WHERE connectionId IS NOT NULL")


def _kernel_connections(conn: sqlite3.Connection) -> dict[tuple[str, int], int]:
    """(kernel name, startNs) -> the TASK's connectionId."""
    rows = conn.execute(
        "SELECT s.value, t.startNs, t.connectionId FROM TASK t "
        "JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId "
        "JOIN STRING_IDS s ON s.id = c.name")
    return {(str(name), int(start)): int(cid) for name, start, cid in rows}


def _framework_rows(c: Collection, sid: _Strings, kernels: dict[tuple[str, int], int],
                    global_tid: int) -> tuple[list[tuple[Any, ...]], list[tuple[int, int]]]:
    api: list[tuple[Any, ...]] = []
    links: list[tuple[int, int]] = []
    op_type = API_TYPES["op"]
    for seq, h in enumerate(host_ops(c)):
        op = h.op
        inputs = op.call_inputs or op.inputs
        shapes = ";".join(",".join(str(d) for d in m.shape) for m in inputs)
        dtypes = ";".join(m.dtype for m in inputs)
        cid = kernels.get((op.record.name, h.kernel_ns))
        conn_ref = None
        if cid is not None:
            conn_ref = len(links)
            links.append((conn_ref, cid))
        api.append((h.begin_ns, h.end_ns, global_tid, conn_ref, sid(f"aten::{op.aten}"), seq,
                    0, sid(dtypes if c.prof.record_shapes else ""),
                    sid(shapes if c.prof.record_shapes else ""), None, op_type))
    return api, links


def _step_rows(c: Collection) -> list[tuple[int, int, int]]:
    spans: dict[int, list[int]] = {}
    for m in c.steps:
        t = ns(m.base_us, m.time_us)
        s = spans.setdefault(m.step, [t, t])
        s[0], s[1] = min(s[0], t), max(s[1], t)
    return [(step, v[0], v[1]) for step, v in sorted(spans.items())]


def write_pytorch_db(path: str, prof_dirs: list[str], c: Collection,
                     metadata: dict[str, str] | None = None,
                     comm_names: dict[str, str] | None = None) -> str | None:
    """Write ``path`` from the collection's msprof database and framework ops (module
    docstring), ``metadata`` added to ``META_DATA`` (torch_npu's ``parallel_group_info``)
    and each group name of ``comm_names`` replaced by its communicator name, which is how
    torch_npu's ``COMMUNICATION_OP.groupName`` names the group (the key msprof-analyze
    looks up in ``parallel_group_info``); ``None`` when the collection has no msprof
    database (no NPU activity)."""
    source = _msprof_db(prof_dirs)
    if source is None:
        return None
    with atomic_sqlite(path) as dst:
        src = sqlite3.connect(source)
        try:
            src.backup(dst)
        finally:
            src.close()
        _nonzero_connections(dst)
        for group, comm_name in sorted((comm_names or {}).items()):
            dst.execute("UPDATE STRING_IDS SET value = ? WHERE value = ?", (comm_name, group))
        sid = _Strings(dst)
        global_tid = (os.getpid() << 32) | 1
        steps = _step_rows(c)
        # the steps first: readers nest ops under the op that started before them
        api = [(begin, end, global_tid, None, sid(f"ProfilerStep#{step}"), None, 0,
                sid(""), sid(""), None, API_TYPES["op"]) for step, begin, end in steps]
        rows, links = _framework_rows(c, sid, _kernel_connections(dst), global_tid)
        api += rows
        dst.executemany("INSERT INTO PYTORCH_API VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        api)
        dst.executemany("INSERT INTO CONNECTION_IDS VALUES (?, ?)", links)
        dst.execute("DELETE FROM STEP_TIME")
        dst.executemany("INSERT INTO STEP_TIME VALUES (?, ?, ?)", steps)
        memory_tables(dst, sid)
        dst.executemany("INSERT INTO META_DATA VALUES (?, ?)", sorted((metadata or {}).items()))
    return path
