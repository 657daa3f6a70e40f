"""The msprof database ``PROF_*/msprof_{ts14}.db`` (SQLite, standard library).

The tables, columns, enum tables and string interning are those msprof documents for its DB
export (Ascend/msprof ``docs/en/user_guide/profile_data_file_references_db.md``) and that the
public analysers (msprof-analyze 26.2.0: ``cluster -m ...``, ``advisor``) query: every string
column holds an id into ``STRING_IDS``; times are integer ns since the epoch. Tables a reader
requires are always created, empty when there is nothing to put in them (a reader then reports
"no data" instead of failing).

The writer is independent of where the records come from: :class:`MsprofDb` takes plain
tuples (one method per table), so the msprof export and the torch profiler share it. It writes
to a temporary file next to the target and renames it on :meth:`MsprofDb.commit` (a complete
database or none); rows go in through ``executemany`` over iterators, so memory stays bounded
whatever the number of tasks.

Example (a writer fed from a list of records)::

    with MsprofDb(path, device_id=0) as db:
        db.add_tasks([(start_ns, end_ns, 0, conn_id, gid, pid, "AI_CORE", 0, 0, 1, 1)])
        db.add_compute_info([(gid, "MatMul_1", "MatMulV2", "AI_CORE", 8, ...)])
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterable
from typing import Any

import numpy as np

from geplug.profiling.layout import mkstemp_near
from geplug.profiling.sqlite_pages import (
    PageAppender,
    SegmentExpander,
    encode_ints,
    encode_values,
)

__all__ = [
    "API_TYPES",
    "HCCL_DATA_TYPES",
    "MEMCPY_OPERATIONS",
    "MSTX_EVENT_TYPES",
    "SCHEMA",
    "SCHEMA_VERSION",
    "MsprofDb",
    "pmu_db_name",
]

SCHEMA_VERSION = "1.0.2"
"""``META_DATA.SCHEMA_VERSION`` (the documented example version)."""

SCHEMA: dict[str, str] = {
    "STRING_IDS": "id INTEGER PRIMARY KEY, value TEXT",
    "META_DATA": "name TEXT, value TEXT",
    "SESSION_TIME_INFO": "startTimeNs INTEGER, endTimeNs INTEGER",
    "NPU_INFO": "id INTEGER, name TEXT",
    "HOST_INFO": "hostUid TEXT, hostName TEXT",
    "RANK_DEVICE_MAP": "rankId INTEGER, deviceId INTEGER",
    "TASK": ("startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER, "
             "globalTaskId INTEGER, globalPid INTEGER, taskType INTEGER, contextId INTEGER, "
             "streamId INTEGER, taskId INTEGER, modelId INTEGER"),
    "COMPUTE_TASK_INFO": ("name INTEGER, globalTaskId INTEGER PRIMARY KEY, blockNum INTEGER, "
                          "mixBlockNum INTEGER, taskType INTEGER, opType INTEGER, "
                          "inputFormats INTEGER, inputDataTypes INTEGER, inputShapes INTEGER, "
                          "outputFormats INTEGER, outputDataTypes INTEGER, "
                          "outputShapes INTEGER, attrInfo INTEGER, opState INTEGER, "
                          "hf32Eligible INTEGER"),
    "TASK_PMU_INFO": "globalTaskId INTEGER, name INTEGER, value NUMERIC",
    "COMMUNICATION_OP": ("opName INTEGER, startNs INTEGER, endNs INTEGER, "
                         "connectionId INTEGER, groupName INTEGER, opId INTEGER PRIMARY KEY, "
                         "relay INTEGER, retry INTEGER, dataType INTEGER, algType INTEGER, "
                         "count NUMERIC, opType INTEGER, deviceId INTEGER"),
    "COMMUNICATION_TASK_INFO": ("name INTEGER, globalTaskId INTEGER, taskType INTEGER, "
                                "planeId INTEGER, groupName INTEGER, notifyId INTEGER, "
                                "rdmaType INTEGER, srcRank INTEGER, dstRank INTEGER, "
                                "transportType INTEGER, size INTEGER, dataType INTEGER, "
                                "linkType INTEGER, opId INTEGER, isMaster INTEGER, "
                                "bandwidth NUMERIC"),
    "COMMUNICATION_SCHEDULE_TASK_INFO": ("name INTEGER, globalTaskId INTEGER PRIMARY KEY, "
                                         "taskType INTEGER, opType INTEGER"),
    "CANN_API": ("startNs INTEGER, endNs INTEGER, type INTEGER, globalTid INTEGER, "
                 "connectionId INTEGER, name INTEGER"),
    "MSTX_EVENTS": ("startNs INTEGER, endNs INTEGER, eventType INTEGER, rangeId INTEGER, "
                    "category INTEGER, message INTEGER, globalTid INTEGER, "
                    "endGlobalTid INTEGER, domainId INTEGER, connectionId INTEGER"),
    "AICORE_FREQ": "deviceId INTEGER, timestampNs NUMERIC, freq INTEGER",
    "STEP_TIME": "id INTEGER, startNs INTEGER, endNs INTEGER",
    "CONNECTION_IDS": "id INTEGER, connectionId INTEGER",
    "PYTORCH_API": ("startNs INTEGER, endNs INTEGER, globalTid INTEGER, connectionId INTEGER, "
                    "name INTEGER, sequenceNumber INTEGER, fwdThreadId INTEGER, "
                    "inputDtypes INTEGER, inputShapes INTEGER, callchainId INTEGER, "
                    "type INTEGER"),
    "NPU_MEM": ("type INTEGER, ddr NUMERIC, hbm NUMERIC, timestampNs INTEGER, "
                "deviceId INTEGER"),
    "NPU_MODULE_MEM": ("moduleId INTEGER, timestampNs INTEGER, totalReserved NUMERIC, "
                       "deviceId INTEGER"),
    "NPU_OP_MEM": ("operatorName INTEGER, addr INTEGER, type INTEGER, size INTEGER, "
                   "timestampNs INTEGER, globalTid INTEGER, totalAllocate NUMERIC, "
                   "totalReserve NUMERIC, component INTEGER, deviceId INTEGER"),
    "MEMCPY_INFO": "globalTaskId NUMERIC, size NUMERIC, memcpyOperation NUMERIC",
    "ENUM_MODULE": "id INTEGER PRIMARY KEY, name TEXT",
    "ENUM_API_TYPE": "id INTEGER PRIMARY KEY, name TEXT",
    "ENUM_HCCL_DATA_TYPE": "id INTEGER PRIMARY KEY, name TEXT",
    "ENUM_HCCL_LINK_TYPE": "id INTEGER PRIMARY KEY, name TEXT",
    "ENUM_HCCL_TRANSPORT_TYPE": "id INTEGER PRIMARY KEY, name TEXT",
    "ENUM_HCCL_RDMA_TYPE": "id INTEGER PRIMARY KEY, name TEXT",
    "ENUM_MSTX_EVENT_TYPE": "id INTEGER PRIMARY KEY, name TEXT",
    "ENUM_MEMCPY_OPERATION": "id INTEGER PRIMARY KEY, name TEXT",
}
"""Table -> column definitions (names and types as documented). ``STEP_TIME`` (one row per
step: Iteration ID, start, end), ``CONNECTION_IDS`` and ``PYTORCH_API`` are the framework
tables of torch_npu's database that msprof-analyze's recipes join against; a run without a
framework layer leaves the last two empty (the torch profiler fills them)."""

API_TYPES = {"acl": 20000, "model": 15000, "node": 10000, "communication": 5500,
             "runtime": 5000, "op": 50001, "queue": 50002, "trace": 50003, "mstx": 50004}
"""``ENUM_API_TYPE``: API level -> id."""
HCCL_DATA_TYPES = {"INT8": 0, "INT16": 1, "INT32": 2, "FP16": 3, "FP32": 4, "INT64": 5,
                   "UINT64": 6, "UINT8": 7, "UINT16": 8, "UINT32": 9, "FP64": 10, "BFP16": 11,
                   "INT128": 12, "RESERVED": 255, "N/A": 65534, "INVALID_TYPE": 65535}
_LINK_TYPES = {"ON_CHIP": 0, "HCCS": 1, "PCIE": 2, "ROCE": 3, "SIO": 4, "HCCS_SW": 5,
               "STANDARD_ROCE": 6, "RESERVED": 255, "N/A": 65534, "INVALID_TYPE": 65535}
_TRANSPORT_TYPES = {"SDMA": 0, "RDMA": 1, "LOCAL": 2, "RESERVED": 255, "N/A": 65534,
                    "INVALID_TYPE": 65535}
_RDMA_TYPES = {"RDMA_SEND_NOTIFY": 0, "RDMA_SEND_PAYLOAD": 1, "RESERVED": 255, "N/A": 65534,
               "INVALID_TYPE": 65535}
MSTX_EVENT_TYPES = {"marker": 0, "push/pop": 1, "start/end": 2, "marker_ex": 3}
MEMCPY_OPERATIONS = {"host to host": 0, "host to device": 1, "device to host": 2,
           "device to device": 3, "managed memory": 4, "addr device to device": 5,
           "host to device ex": 6, "device to host ex": 7, "other": 65535}
"""``ENUM_MEMCPY_OPERATION``: a copy's direction -> id (``MEMCPY_INFO.memcpyOperation``)."""
MODULES = {name: i for i, name in enumerate((
    "SLOG", "IDEDD", "SCC", "HCCL", "FMK", "CCU", "DVPP", "RUNTIME", "CCE", "HDC", "DRV",
    "NET"))}
"""``ENUM_MODULE`` (the component ids of NPU_MODULE_MEM), msprof's documented table."""
MODULES.update({name: i for i, name in enumerate((
    "DEVMM", "KERNEL", "LIBMEDIA", "CCECPU"), start=22)})
MODULES.update({name: i for i, name in enumerate((
    "ROS", "HCCP", "ROCE", "TEFUSION", "PROFILING", "DP", "APP", "TS", "TSDUMP", "AICPU", "LP",
    "TDT", "FE", "MD", "MB", "ME", "IMU", "IMP", "GE"), start=27)})
MODULES.update({name: i for i, name in enumerate((
    "CAMERA", "ASCENDCL", "TEEOS", "ISP", "SIS", "HSM", "DSS", "PROCMGR", "BBOX", "AIVECTOR",
    "TBE", "FV", "MDCMAP", "TUNE", "HSS", "FFTS", "OP", "UDF", "HICAID", "TSYNC", "AUDIO",
    "TPRT", "ASCENDCKERNEL", "ASYS", "ATRACE", "RTC", "SYSMONITOR", "AMP", "ADETECT", "MBUFF",
    "CUSTOM"), start=47)})
_ENUMS = {
    "ENUM_MODULE": MODULES,
    "ENUM_API_TYPE": API_TYPES,
    "ENUM_HCCL_DATA_TYPE": HCCL_DATA_TYPES,
    "ENUM_HCCL_LINK_TYPE": _LINK_TYPES,
    "ENUM_HCCL_TRANSPORT_TYPE": _TRANSPORT_TYPES,
    "ENUM_HCCL_RDMA_TYPE": _RDMA_TYPES,
    "ENUM_MSTX_EVENT_TYPE": MSTX_EVENT_TYPES,
    "ENUM_MEMCPY_OPERATION": MEMCPY_OPERATIONS,
}
_INDEXES = (
    "CREATE INDEX TaskIndex ON TASK (startNs, globalTaskId)",
    "CREATE INDEX CommunicationTaskIndex ON COMMUNICATION_TASK_INFO (globalTaskId)",
)
PAGE_PMU_MAX_ROWS = 1 << 20
"""Template PMU rows (one per distinct step's task and metric) up to which TASK_PMU_INFO is
written as pages (:mod:`.sqlite_pages`, held in memory meanwhile); beyond (nearly every step
distinct), SQLite expands them itself (slower, the same rows)."""
_PAGE_BLOCK_ROWS = 1 << 18
"""TASK_PMU_INFO rows encoded per block of the page writer (bounds its memory)."""


def pmu_db_name(column: str) -> tuple[str, float]:
    """An op_summary PMU column -> (its ``TASK_PMU_INFO`` metric name, value factor).

    Times are stored in ns (``(us)`` columns × 1000), ``aicore_time`` / ``aiv_time`` under
    their raw names ``aic_total_time`` / ``aiv_total_time``; unit suffixes are dropped.
    """
    factor = 1.0
    name = column
    if name.endswith("(us)"):
        factor = 1000.0
    name = name.split("(", 1)[0]
    return {"aicore_time": "aic_total_time", "aiv_time": "aiv_total_time"}.get(name,
                                                                               name), factor


class MsprofDb:
    """One msprof database being written (see the module docstring)."""

    def __init__(self, path: str, *, device_id: int = 0) -> None:
        self.path = path
        self.device_id = device_id
        fd, self.tmp = mkstemp_near(path)
        os.close(fd)
        self._strings: dict[str, int] = {}
        self._pmu_pages: tuple[Any, ...] | None = None
        """The PMU templates and segments TASK_PMU_INFO is written from after commit (when
        written as pages, :meth:`_plan_pmu_pages`)."""
        try:
            self.conn = sqlite3.connect(self.tmp, isolation_level=None)
            self.conn.execute("PRAGMA page_size = 65536")  # larger pages: faster bulk inserts
            self.conn.execute("PRAGMA journal_mode = OFF")
            self.conn.execute("PRAGMA synchronous = OFF")
            self.conn.execute("PRAGMA temp_store = FILE")  # temp tables on disk, not in RAM
            self.conn.execute("PRAGMA cache_size = -16384")  # 16 MB page cache
            self.conn.execute("BEGIN")
            for table, columns in SCHEMA.items():
                self.conn.execute(f"CREATE TABLE {table} ({columns})")
            for table, values in _ENUMS.items():
                self.conn.executemany(f"INSERT INTO {table} VALUES (?, ?)",
                                      [(v, k) for k, v in values.items()])
            self.conn.executemany("INSERT INTO META_DATA VALUES (?, ?)", [
                ("SCHEMA_VERSION", SCHEMA_VERSION),
                *((f"SCHEMA_VERSION_{part}", v) for part, v in
                  zip(("MAJOR", "MINOR", "MICRO"), SCHEMA_VERSION.split("."), strict=True)),
            ])
        except BaseException:
            self.abort()
            raise

    # -- strings ---------------------------------------------------------------------------

    def sid(self, value: str) -> int:
        """The ``STRING_IDS`` id of ``value`` (interned on first use)."""
        got = self._strings.get(value)
        if got is None:
            got = self._strings[value] = len(self._strings)
        return got

    # -- tables ----------------------------------------------------------------------------

    def _rows(self, table: str, rows: Iterable[tuple[Any, ...]], width: int) -> None:
        marks = ", ".join("?" * width)
        self.conn.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)

    def add_info(self, *, npu_name: str, host_uid: str, host_name: str, rank_id: int,
                 start_ns: int, end_ns: int, freq_mhz: int) -> None:
        """NPU_INFO, HOST_INFO, RANK_DEVICE_MAP, SESSION_TIME_INFO and AICORE_FREQ."""
        dev = self.device_id
        self._rows("NPU_INFO", [(dev, npu_name)], 2)
        self._rows("HOST_INFO", [(host_uid, host_name)], 2)
        self._rows("RANK_DEVICE_MAP", [(rank_id, dev)], 2)
        self._rows("SESSION_TIME_INFO", [(start_ns, end_ns)], 2)
        self._rows("AICORE_FREQ", [(dev, start_ns, int(freq_mhz))], 3)

    def add_tasks(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """TASK rows: (startNs, endNs, deviceId, connectionId, globalTaskId, globalPid,
        taskType id, contextId, streamId, taskId, modelId)."""
        self._rows("TASK", rows, 11)

    def add_compute_info(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """COMPUTE_TASK_INFO rows (15 values, string columns already as ids)."""
        self._rows("COMPUTE_TASK_INFO", rows, 15)

    def add_pmu(self, rows: Iterable[tuple[int, int, float]]) -> None:
        """TASK_PMU_INFO rows: (globalTaskId, metric name id, value)."""
        self._rows("TASK_PMU_INFO", rows, 3)

    def begin_pmu(self) -> None:
        """Start TASK_PMU_INFO by key: tasks with equal work and duration share one key
        (:meth:`pmu_keys`), each task row of a template names its key
        (:meth:`add_template`), and :meth:`end_task_rows` expands them inside SQLite - no
        Python row per metric and task."""
        c = self.conn
        c.execute("CREATE TEMP TABLE pmu_key (k INTEGER, name INTEGER, value NUMERIC)")
        c.execute("CREATE INDEX temp.pmu_key_k ON pmu_key (k)")

    def pmu_keys(self, rows: Iterable[tuple[int, int, float]]) -> None:
        """(key, metric name id, value) rows."""
        self.conn.executemany("INSERT INTO temp.pmu_key VALUES (?, ?, ?)", rows)

    def end_pmu(self) -> None:
        """Drop the PMU keys (their rows were expanded by :meth:`end_task_rows`)."""
        self.conn.execute("DROP TABLE temp.pmu_key")

    def begin_task_rows(self) -> None:
        """Start TASK / COMPUTE_TASK_INFO / launch CANN_API / TASK_PMU_INFO rows as
        templates: the static columns once per op signature (:meth:`add_task_sig`), the
        times of a run of tasks once per distinct *template* - relative to the run's first
        start and first globalTaskId (:meth:`add_template`) - and per run only its template,
        first globalTaskId and base time (:meth:`add_segments`). A run of steps of the same
        compiled model is one template and one short row per step; :meth:`end_task_rows`
        expands them inside SQLite (``segment CROSS JOIN template``: start = base + offset,
        globalTaskId = first + index), in globalTaskId order."""
        c = self.conn
        c.execute("CREATE TEMP TABLE tsig (sig INTEGER PRIMARY KEY, comm INTEGER, tt INTEGER, "
                  "stream INTEGER, taskid INTEGER, model INTEGER, " +
                  ", ".join(f"c{i} INTEGER" for i in range(14)) + ")")
        c.execute("CREATE TEMP TABLE tpl (t INTEGER, i INTEGER, sig INTEGER, st INTEGER, "
                  "en INTEGER, ls INTEGER, le INTEGER, k INTEGER, PRIMARY KEY (t, i)) "
                  "WITHOUT ROWID")
        c.execute("CREATE TEMP TABLE seg (gid0 INTEGER PRIMARY KEY, t INTEGER, base INTEGER)")

    def add_task_sig(self, sig: int, values: tuple[Any, ...]) -> None:
        """One signature: (comm, taskType id, streamId, taskId, modelId, then the 14
        COMPUTE_TASK_INFO columns after globalTaskId, or NULLs for a communication task)."""
        self.conn.execute(f"INSERT INTO temp.tsig VALUES ({', '.join('?' * 20)})",
                          (sig, *values))

    def add_template(self, template: int, rows: Iterable[tuple[int, ...]]) -> None:
        """The rows of one template: (index from the first globalTaskId, signature, startNs,
        endNs, launch startNs, launch endNs - each relative to the base time - and the PMU
        key or -1)."""
        self.conn.executemany(f"INSERT INTO temp.tpl VALUES ({template}, ?, ?, ?, ?, ?, ?, ?)",
                              rows)

    def add_segments(self, rows: Iterable[tuple[int, int, int]]) -> None:
        """(first globalTaskId, template, base time ns) per run of tasks, in globalTaskId
        order."""
        self.conn.executemany("INSERT INTO temp.seg VALUES (?, ?, ?)", rows)

    def end_task_rows(self, *, device_id: int, pid: int, launch_tid: int, launch_type: int,
                      launch_name: int) -> None:
        """Expand the templates into TASK, COMPUTE_TASK_INFO, the launches' CANN_API rows and
        (after :meth:`begin_pmu`) TASK_PMU_INFO (connectionId = globalTaskId). The joins
        are forced nested loops (``CROSS JOIN``) over the segments in globalTaskId order and
        each template in index order, so rows come out in globalTaskId order without a
        sort (bounded memory)."""
        c = self.conn
        loops = ("FROM temp.seg s CROSS JOIN temp.tpl p CROSS JOIN temp.tsig g "
                 "WHERE p.t = s.t AND g.sig = p.sig")
        c.execute("INSERT INTO TASK SELECT s.base + p.st, s.base + p.en, ?, s.gid0 + p.i, "
                  "s.gid0 + p.i, ?, g.tt, 0, g.stream, g.taskid, g.model " + loops,
                  (device_id, pid))
        cols = ", ".join(f"g.c{i}" for i in range(1, 14))
        c.execute(f"INSERT INTO COMPUTE_TASK_INFO SELECT g.c0, s.gid0 + p.i, {cols} " + loops +
                  " AND g.comm = 0")
        c.execute("INSERT INTO CANN_API SELECT s.base + p.ls, s.base + p.le, ?, ?, "
                  "s.gid0 + p.i, ? FROM temp.seg s CROSS JOIN temp.tpl p WHERE p.t = s.t",
                  (launch_type, launch_tid, launch_name))
        has_pmu = c.execute("SELECT 1 FROM temp.sqlite_master WHERE name = 'pmu_key'").fetchone()
        if has_pmu:
            # each template's PMU rows once (metric order = key insertion order), then one
            # scan per segment
            c.execute("CREATE TEMP TABLE tpl_pmu (t INTEGER, i INTEGER, j INTEGER, "
                      "name INTEGER, value NUMERIC, PRIMARY KEY (t, i, j)) WITHOUT ROWID")
            c.execute("INSERT INTO temp.tpl_pmu SELECT p.t, p.i, q.rowid, q.name, q.value "
                      "FROM temp.tpl p CROSS JOIN temp.pmu_key q WHERE p.k >= 0 AND q.k = p.k")
            if not self._plan_pmu_pages():
                c.execute("INSERT INTO TASK_PMU_INFO SELECT s.gid0 + q.i, q.name, q.value "
                          "FROM temp.seg s CROSS JOIN temp.tpl_pmu q WHERE q.t = s.t")
            c.execute("DROP TABLE temp.tpl_pmu")
        c.execute("DROP TABLE temp.seg")
        c.execute("DROP TABLE temp.tpl")
        c.execute("DROP TABLE temp.tsig")

    def _plan_pmu_pages(self) -> bool:
        """Keep what TASK_PMU_INFO is expanded from (each template's PMU rows in order, the
        segments in globalTaskId order) for :meth:`_write_pmu_pages`, when the table is empty
        and the templates are few enough; returns whether it did (else SQLite expands)."""
        c = self.conn
        if c.execute("SELECT EXISTS (SELECT 1 FROM TASK_PMU_INFO)").fetchone()[0]:
            return False
        if c.execute("SELECT count(*) FROM temp.tpl_pmu").fetchone()[0] > PAGE_PMU_MAX_ROWS:
            return False
        rows = c.execute("SELECT t, i, name, value FROM temp.tpl_pmu ORDER BY t, i, j").fetchall()
        values = [r[3] for r in rows]
        if any(not isinstance(v, (int, float)) and v is not None for v in values):
            return False
        tpl = np.array([r[:3] for r in rows], dtype=np.int64).reshape(-1, 3)
        segs = [np.array(c.execute("SELECT gid0, t FROM temp.seg ORDER BY gid0").fetchall(),
                         dtype=np.int64).reshape(-1, 2)]
        self._pmu_pages = (tpl, values, segs)
        return True

    def _write_pmu_pages(self, root: int) -> None:
        """TASK_PMU_INFO as pages appended to the closed database (:mod:`.sqlite_pages`):
        per segment its template's PMU rows, globalTaskId = first id + index - the rows, order
        and storage classes of the ``INSERT ... SELECT`` it replaces."""
        assert self._pmu_pages is not None
        tpl, values, seg_parts = self._pmu_pages
        self._pmu_pages = None
        if not len(tpl):
            return  # no PMU rows: the table stays empty
        segs = np.concatenate(seg_parts)
        # templates differing only outside their PMU rows (e.g. launch times) write the same
        # PMU rows: map each to the first with equal rows, so runs of segments stay long
        bounds = np.searchsorted(tpl[:, 0], np.arange(int(tpl[-1, 0]) + 2))
        same: dict[tuple[bytes, tuple[Any, ...]], int] = {}
        canon = np.arange(len(bounds) - 1, dtype=np.int64)
        for t in range(len(bounds) - 1):
            a, b = int(bounds[t]), int(bounds[t + 1])
            if a < b:
                key = (tpl[a:b, 1:].tobytes(), tuple(map(repr, values[a:b])))
                canon[t] = same.setdefault(key, t)
        seg_t = segs[:, 1]
        known = seg_t < len(canon)
        segs = np.column_stack((segs[:, 0], np.where(known, canon[np.where(known, seg_t, 0)],
                                                     seg_t)))
        app = PageAppender(self.tmp, root)
        try:
            fixed = [encode_ints(tpl[:, 2], format4=app.format4),
                     encode_values(values, format4=app.format4)]
            SegmentExpander(app, tpl[:, 0], tpl[:, 1], fixed,
                            block_rows=_PAGE_BLOCK_ROWS).add(segs[:, 0], segs[:, 1])
            app.finish()
        except BaseException:
            app.abort()
            raise

    def add_api(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """CANN_API rows: (startNs, endNs, type id, globalTid, connectionId, name id)."""
        self._rows("CANN_API", rows, 6)

    add_api_rows = add_api

    def add_mstx(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """MSTX_EVENTS rows (10 values)."""
        self._rows("MSTX_EVENTS", rows, 10)

    def add_comm_ops(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """COMMUNICATION_OP rows (13 values)."""
        self._rows("COMMUNICATION_OP", rows, 13)

    def add_comm_tasks(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """COMMUNICATION_TASK_INFO rows (16 values)."""
        self._rows("COMMUNICATION_TASK_INFO", rows, 16)

    def add_steps(self, rows: Iterable[tuple[int, int, int]]) -> None:
        """STEP_TIME rows: (step id, startNs, endNs)."""
        self._rows("STEP_TIME", rows, 3)

    def add_memcpy(self, rows: Iterable[tuple[int, int, int]]) -> None:
        """MEMCPY_INFO rows: (globalTaskId of the MEMCPY_ASYNC task, size bytes,
        ENUM_MEMCPY_OPERATION id)."""
        self._rows("MEMCPY_INFO", rows, 3)

    def add_npu_mem(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """NPU_MEM rows: (type id, ddr bytes, hbm bytes, timestampNs, deviceId)."""
        self._rows("NPU_MEM", rows, 5)

    def add_npu_module_mem(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """NPU_MODULE_MEM rows: (ENUM_MODULE id, timestampNs, totalReserved bytes,
        deviceId)."""
        self._rows("NPU_MODULE_MEM", rows, 4)

    def add_npu_op_mem(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """NPU_OP_MEM rows: (operatorName id, addr, type id, size bytes, timestampNs,
        globalTid, totalAllocate, totalReserve, component id, deviceId)."""
        self._rows("NPU_OP_MEM", rows, 10)

    # -- finishing -------------------------------------------------------------------------

    def commit(self) -> str:
        """Write STRING_IDS and the indexes, close, and rename into place; returns the path."""
        try:
            self._rows("STRING_IDS", ((i, v) for v, i in self._strings.items()), 2)
            for sql in _INDEXES:
                self.conn.execute(sql)
            self.conn.execute("COMMIT")
            root = self.conn.execute("SELECT rootpage FROM sqlite_master "
                                     "WHERE name = 'TASK_PMU_INFO'").fetchone()[0]
            self.conn.close()
            if self._pmu_pages is not None:
                self._write_pmu_pages(int(root))
            os.replace(self.tmp, self.path)
        except BaseException:
            self.abort()
            raise
        return self.path

    def abort(self) -> None:
        """Drop the temporary database (nothing is left at ``path``)."""
        conn = getattr(self, "conn", None)
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        with contextlib.suppress(OSError):
            os.remove(self.tmp)

    def __enter__(self) -> MsprofDb:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()
