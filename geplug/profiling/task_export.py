"""The task pass of the shutdown export: raw task records -> every per-task output at once.

One streaming pass over the binary task records (numpy chunks, :meth:`RecordLog.chunks`)
writes op_summary, task_time, the device and launch parts of the timeline (kernels on one track
per stream, the modelled host launch of each kernel on the CANN ``Node`` thread, and a
``HostToDevice`` flow from each launch to its kernel) and the msprof database's TASK,
COMPUTE_TASK_INFO, TASK_PMU_INFO, CANN_API and communication rows - so the text files and the
database are formatted from the same integers and never disagree. What does not change between
executions of an op is formatted once per op signature; per task only the times are formatted
(integer ns, :func:`~geplug.profiling.layout.fmt_ns`). Busy intervals (compute and
communication, merged) are kept as compact integer arrays for the Overlap Analysis track.

Host launches are **modelled**: a launch lasts at most the product's ``launch_overhead_us``,
ends when its kernel starts (or 1 ns after it starts when the host is behind) and never overlaps
the previous launch on the host thread; its ``connectionId`` is the task's ``globalTaskId``.
"""

from __future__ import annotations

import csv
import io
import json
from array import array
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from geplug.profiling import hccl as hccl_mod
from geplug.profiling.layout import dtype_name, fmt_list, format_name, quoted_shapes
from geplug.profiling.msprof_db import API_TYPES, HCCL_DATA_TYPES, MsprofDb, pmu_db_name
from geplug.profiling.pmu import PmuModel, TaskWork
from geplug.profiling.task_collector import OpSig, TaskRow
from geplug.profiling.timeline import PIDS, TimelineWriter

if TYPE_CHECKING:
    from geplug.profiling.session import ProfilingSession

__all__ = ["LAUNCH_NAME", "TaskPass"]

NA = "N/A"
LAUNCH_NAME = "launch"
"""Name of the modelled per-op launch (CANN ``Node`` level, timeline and CANN_API)."""
LAUNCH_TID = 4
"""The CANN thread of node-level calls (launches)."""
_J = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_HCCL_DTYPES = {"float16": "FP16", "float32": "FP32", "bfloat16": "BFP16", "int8": "INT8",
                "int16": "INT16", "int32": "INT32", "int64": "INT64", "uint8": "UINT8",
                "float64": "FP64"}
_DTYPE_BYTES = {"FP16": 2, "BFP16": 2, "FP32": 4, "INT8": 1, "INT16": 2, "INT32": 4,
                "INT64": 8, "UINT8": 1, "FP64": 8}


def _csv_line(cells: list[str]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow(cells)
    return buf.getvalue()


def _t(ns: int) -> str:
    whole, frac = divmod(ns, 1000)
    return f"{whole}.{frac:03d}"


class _Sig:
    """Everything formatted once per op signature."""

    def __init__(self, op: OpSig, p: TaskPass) -> None:
        level = p.level
        l1 = level == "l1"
        comm = op.comm
        dev = p.dev
        self.op = op
        self.comm = comm
        static = [op.op_type, NA if comm else "static", op.task_type] if l1 else [NA] * 3
        head = [dev, str(op.model_id), NA if comm else str(op.task_id),
                NA if comm else str(op.stream_id), op.name, *static]
        if l1 and not comm:
            shapes = [
                "NO",  # HF32 Eligible: the simulator never runs float32 matmuls as HF32
                quoted_shapes(op.input_shapes),
                fmt_list([dtype_name(d) for d in op.input_dtypes]) or NA,
                fmt_list([format_name(f) for f in op.input_formats]) or NA,
                quoted_shapes(op.output_shapes),
                fmt_list([dtype_name(d) for d in op.output_dtypes]) or NA,
                fmt_list([format_name(f) for f in op.output_formats]) or NA,
            ]
        else:
            shapes = [NA] * 7
        self.shapes = shapes
        tail = [str(op.block_dim) if l1 else "0", NA, *shapes, NA]
        self.sum_head = _csv_line(head) + ","
        self.sum_tail = "," + _csv_line(tail)
        self.tt_head = _csv_line([dev, op.name, op.task_type if l1 else NA,
                                  NA if comm else str(op.stream_id),
                                  NA if comm else str(op.task_id)]) + ","
        # the kernel event: %-template of (ts, dur, connection_id, aicore ms, cycles, step)
        pid = PIDS["Communication"] if comm else PIDS["Ascend Hardware"]
        self.tid = 0 if comm else op.stream_id
        self.pid = pid
        name = _J(op.name).replace("%", "%%")
        if comm:
            args = ('"notify id":0,"duration estimated(us)":%s,"stream id":' +
                    str(op.stream_id) + ',"task id":' + str(op.task_id) + ',"task type":' +
                    _J(op.op_type).replace("%", "%%") + ',"size(Byte)":' +
                    str(int(op.bytes_moved)) + ',"data type":' + _J(op.dtype) +
                    ',"Device Id":' + dev + ',"connection_id":%d,"Step":%d')
            self.kernel = ('{"ph":"X","name":' + name + ',"pid":' + str(pid) + ',"tid":0,'
                           '"ts":"%s","dur":%s,"cat":"hccl","args":{' + args + '}}')
        else:
            ttype = _J(op.task_type if l1 else NA)
            otype = _J(op.op_type if l1 else NA).replace("%", "%%")
            self.kernel = (
                '{"ph":"X","name":' + name + ',"pid":' + str(pid) + ',"tid":' +
                str(op.stream_id) + ',"ts":"%s","dur":%s,"cat":"kernel","args":{"Model Id":' +
                str(op.model_id) + ',"Task Type":' + ttype + ',"Physic Stream Id":' +
                str(op.stream_id) + ',"Task Id":' + str(op.task_id) + ',"Batch Id":0,'
                '"Subtask Id":4294967295,"connection_id":%d,"Device Id":' + dev +
                ',"Aicore Time(ms)":%s,"Total Cycle":%s,"Op Type":' + otype + ',"Step":%d}}')
        self.cycles_per_ns = p.clock_mhz * op.block_dim / 1000 if l1 else None
        self.flow_end = ('{"ph":"f","bp":"e","name":"HostToDevice","cat":"HostToDevice",'
                         '"id":"%d","pid":' + str(pid) + ',"tid":' + str(self.tid) +
                         ',"ts":"%s"}')
        self.launch = ('{"ph":"X","name":"' + LAUNCH_NAME + '","pid":' + str(PIDS["CANN"]) +
                       ',"tid":' + str(LAUNCH_TID) + ',"ts":"%s","dur":%s,"cat":"node",'
                       '"args":{"level":"node","Op Name":' + name +
                       ',"connection_id":%d}}')
        db = p.db
        if db is not None:
            sid = db.sid
            self.db_task = (sid(op.task_type), 0, op.stream_id, op.task_id,
                            op.model_id)
            if not comm:
                self.db_compute = (
                    sid(op.name), op.block_dim, 0, sid(op.task_type), sid(op.op_type),
                    sid(shapes[3]), sid(shapes[2]), sid(shapes[1]), sid(shapes[6]),
                    sid(shapes[5]), sid(shapes[4]), sid(NA), sid("static" if l1 else NA),
                    sid(shapes[0]))
        self.work = TaskWork(task_type=op.task_type, duration_us=0.0, flops=op.flops,
                             bytes_moved=op.bytes_moved, cube_fraction=op.cube_fraction,
                             block_dim=op.block_dim, dtype=op.dtype)


class TaskPass:
    """Writes every per-task output of ``session`` in one pass (see the module docstring)."""

    def __init__(self, session: ProfilingSession, *, summary: IO[str] | None,
                 task_time: IO[str] | None, timeline: TimelineWriter, db: MsprofDb | None,
                 pmu: PmuModel | None, pmu_cols: list[str]) -> None:
        self.session = session
        self.level = session.eff.task_level
        self.dev = str(session.device_id)
        self.device_id = session.device_id
        self.clock_mhz = session.product.compute.clock_mhz
        self.summary = summary
        self.task_time = task_time
        self.timeline = timeline
        self.db = db
        self.pmu = pmu
        self.hccl = session.eff.hccl or session.eff.task_level != "off"
        """Communication tasks go on the timeline (task_time collects them too)."""
        self.launch_ns = max(1, round(session.product.compute.launch_overhead_us * 1000))
        self._pmu_text: dict[tuple[int, int], str] = {}
        self._pmu_key: dict[tuple[int, int], int] = {}
        self._pmu_names = [pmu_db_name(c) for c in pmu_cols]
        self.stats: dict[tuple[str, str], list[float]] = {}
        """(OP Type, Core Type) -> [count, total µs, min µs, max µs] (op_statistic)."""
        self.compute = array("q")
        """Merged compute busy intervals, flattened (start, end, start, end, ...) in ns."""
        self.comm: list[tuple[int, int]] = []
        """Communication task intervals (ns)."""
        self.count = 0
        self.first_ns: int | None = None
        self.last_ns = 0
        self.extra: list[Callable[[TaskRow], None]] = []
        """Per-task callbacks for the rare outputs (aicpu, l2_cache)."""

    def _pmu_values(self, info: _Sig, sig: int, dur: int) -> tuple[str, int]:
        key = (sig, dur)
        text = self._pmu_text.get(key)
        kid = self._pmu_key.get(key, -1)
        if text is None or kid < 0:
            assert self.pmu is not None
            values = self.pmu.values(TaskWork(
                task_type=info.work.task_type, duration_us=dur / 1000, flops=info.work.flops,
                bytes_moved=info.work.bytes_moved, cube_fraction=info.work.cube_fraction,
                block_dim=info.work.block_dim, dtype=info.work.dtype))
            if len(self._pmu_text) >= 65536:
                self._pmu_text.clear()
            text = self._pmu_text[key] = "," + _csv_line(values) if values else ""
            if kid < 0 and self.db is not None:
                kid = self._pmu_key[key] = len(self._pmu_key)
                sid = self.db.sid
                self.db.pmu_keys([(kid, sid(name), float(v) * factor)
                                  for (name, factor), v in zip(self._pmu_names, values, strict=True)
                                  if v != NA])
        return text, kid

    def run(self) -> None:
        """The pass (nothing to do when no task was recorded)."""
        s = self.session
        if not s.record_tasks:
            return
        sigs = s.tasks.load_sigs()
        infos: dict[int, _Sig] = {}
        base_ns = s.base_ns
        level = self.level
        text = level != "off"
        summary = self.summary.write if self.summary is not None else None
        task_time = self.task_time.write if self.task_time is not None else None
        emit = self.timeline.raw
        db = self.db
        pmu_on = self.pmu is not None
        launch_ns = self.launch_ns
        host_end = 0
        gid = 0
        open_s = open_e = -1
        compute = self.compute
        stats = self.stats
        extra = self.extra
        self.timeline.ensure_launch_thread(LAUNCH_TID)
        streams: set[tuple[int, int]] = set()
        if db is not None:
            db.begin_pmu()
        tid_of_host = (s.pid << 32) | LAUNCH_TID
        flow_start = ('{"ph":"s","name":"HostToDevice","cat":"HostToDevice","id":"%d",'
                      f'"pid":{PIDS["CANN"]},"tid":{LAUNCH_TID},' + '"ts":"%s"}')
        for chunk in s.tasks.tasks.chunks():
            sig_l = chunk[:, 0].tolist()
            step_l = chunk[:, 1].tolist()
            start_l = (chunk[:, 2] + base_ns).tolist()
            dur_l = chunk[:, 3].tolist()
            wait_l = chunk[:, 4].tolist()
            db_tasks: list[tuple[Any, ...]] = []
            db_compute: list[tuple[Any, ...]] = []
            db_api: list[tuple[Any, ...]] = []
            db_pmu: list[tuple[int, int]] = []
            for i in range(len(sig_l)):
                sig = sig_l[i]
                info = infos.get(sig)
                if info is None:
                    op = sigs.get(sig)
                    if op is None:
                        continue
                    info = infos[sig] = _Sig(op, self)
                st = start_l[i]
                d = dur_l[i]
                end = st + d
                comm = info.comm
                conn = gid
                # -- modelled host launch (sequential on the host thread) -----------------
                ls = st - launch_ns
                if ls < host_end:
                    ls = host_end
                ln = st - ls if st - ls >= 1 else 1
                host_end = ls + ln
                if text:
                    ts = _t(st)
                    ds = _t(d)
                    if summary is not None:
                        line = info.sum_head + ts + "\t," + ds + "," + _t(wait_l[i]) + \
                            info.sum_tail
                        if pmu_on:
                            ptext, kid = self._pmu_values(info, sig, d)
                            line += ptext
                            if kid >= 0 and not comm:
                                db_pmu.append((gid, kid))
                        summary(line + "\n")
                    if task_time is not None:
                        task_time(info.tt_head + ds + "," + ts + "," + _t(end) + "\n")
                    key = (info.pid, info.tid)
                    if key not in streams and (self.hccl or not comm):
                        streams.add(key)
                        self.timeline.ensure_stream(info.pid, info.tid, comm)
                    dj = repr(d / 1000)
                    if comm:
                        if self.hccl:
                            emit(info.kernel % (ts, dj, dj, conn, step_l[i]))
                    else:
                        cyc = info.cycles_per_ns
                        emit(info.kernel % (ts, dj, conn, repr(round(d / 1e6, 6)),
                                            '"N/A"' if cyc is None else str(int(d * cyc)),
                                            step_l[i]))
                    lts = _t(ls)
                    emit(info.launch % (lts, repr(ln / 1000), conn))
                    emit(flow_start % (conn, lts))
                    if self.hccl or not comm:
                        emit(info.flow_end % (conn, ts))
                    if text:
                        op = info.op
                        skey = (op.op_type if level == "l1" else NA,
                                op.task_type if level == "l1" else NA)
                        du = d / 1000
                        sv = stats.get(skey)
                        if sv is None:
                            stats[skey] = [1, du, du, du]
                        else:
                            sv[0] += 1
                            sv[1] += du
                            if du < sv[2]:
                                sv[2] = du
                            if du > sv[3]:
                                sv[3] = du
                if db is not None:
                    db_tasks.append((st, end, self.device_id, conn, gid, s.pid, *info.db_task))
                    db_api.append((ls, ls + ln, API_TYPES["node"], tid_of_host, conn,
                                   db.sid(LAUNCH_NAME)))
                    if comm:
                        self._db_comm(info, gid, st, end)
                    else:
                        db_compute.append((info.db_compute[0], gid, *info.db_compute[1:]))
                if comm:
                    self.comm.append((st, end))
                else:
                    if st <= open_e:
                        if end > open_e:
                            open_e = end
                        if st < open_s:
                            open_s = st
                    else:
                        if open_e >= 0:
                            compute.append(open_s)
                            compute.append(open_e)
                        open_s, open_e = st, end
                if extra:
                    row = TaskRow(info.op, step_l[i], st, d, wait_l[i])
                    for callback in extra:
                        callback(row)
                if self.first_ns is None or st < self.first_ns:
                    self.first_ns = st
                if end > self.last_ns:
                    self.last_ns = end
                gid += 1
            if db is not None:
                db.add_tasks(db_tasks)
                db.add_compute_info(db_compute)
                db.add_api(db_api)
                db.pmu_tasks(db_pmu)
        if open_e >= 0:
            compute.append(open_s)
            compute.append(open_e)
        self.count = gid
        if db is not None:
            db.end_pmu()

    def _db_comm(self, info: _Sig, gid: int, start: int, end: int) -> None:
        """One COMMUNICATION_OP (with its single task) for a communication task."""
        db = self.db
        assert db is not None
        op = info.op
        sid = db.sid
        rank, size = self.session.rank_info()
        dtype = _HCCL_DTYPES.get(op.dtype, "N/A")
        elem = _DTYPE_BYTES.get(dtype, 1)
        group = sid(hccl_mod.GROUP)
        link = self.session.link_type()
        op_id = gid
        dur = max(1, end - start)
        db.add_comm_ops([(sid(op.name), start, end, gid, group, op_id, 0, 0,
                          HCCL_DATA_TYPES[dtype], sid("N/A"), op.bytes_moved / elem,
                          sid(op.op_type), self.device_id)])
        db.add_comm_tasks([(sid(op.name), gid, sid("Memcpy"), 0, group, 0, 65534, rank,
                            (rank + 1) % size if size > 1 else rank, 0 if size > 1 else 2,
                            int(op.bytes_moved), HCCL_DATA_TYPES[dtype],
                            {"HCCS": 1, "PCIE": 2}.get(link, 65534), op_id, 1,
                            op.bytes_moved / (dur / 1e9))])
