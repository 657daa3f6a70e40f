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
from collections.abc import Callable
from operator import itemgetter
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from geplug.profiling import hccl as hccl_mod
from geplug.profiling import overlap
from geplug.profiling.layout import dtype_name, fmt_list, format_name, quoted_shapes
from geplug.profiling.msprof_db import API_TYPES, HCCL_DATA_TYPES, MsprofDb, pmu_db_name
from geplug.profiling.pmu import PmuModel, TaskWork
from geplug.profiling.sliced_csv import SlicedCsv
from geplug.profiling.task_collector import OpSig, TaskRow
from geplug.profiling.task_templates import TemplateRows
from geplug.profiling.textfill import BlockFormatter, write_pieces
from geplug.profiling.timeline import PIDS, TimelineWriter

if TYPE_CHECKING:
    from geplug.profiling.session import ProfilingSession

__all__ = ["LAUNCH_NAME", "TaskPass", "csv_line"]

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


def csv_line(cells: list[str]) -> str:
    """``cells`` as one CSV line without its terminator (the csv module's quoting)."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow(cells)
    return buf.getvalue()


def _esc(text: str) -> str:
    """``text`` as literal part of a %-template."""
    return text.replace("%", "%%")


_TIME = "%d.%03d"
"""An integer-ns time as µs with exactly three decimals (whole and remainder columns)."""
_SKIP = "%.0s"
"""Consumes one value column and prints nothing (templates share one column list)."""


class _Sig:
    """Everything formatted once per op signature: %-templates filled per block of tasks.

    The timeline template consumes the columns of :meth:`TaskPass._chunk` in order: kernel
    (ts, dur, dur again, connection id, Aicore ms whole/frac, cycles, step), launch (ts, dur,
    connection id), flow start (id, ts) and flow end (id, ts); a column an event does not
    show is consumed by ``%.0s``.
    """

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
        self.sum_pre = (_esc(csv_line(head)) + "," + _TIME + "\t," + _TIME + "," + _TIME +
                        "," + _esc(csv_line(tail)))
        """op_summary up to the PMU block (start, duration, wait columns)."""
        self.task_time = _esc(csv_line([dev, op.name, op.task_type if l1 else NA,
                                         NA if comm else str(op.stream_id),
                                         NA if comm else str(op.task_id)])) + \
            "," + _TIME + "," + _TIME + "," + _TIME + "\n"
        pid = PIDS["Communication"] if comm else PIDS["Ascend Hardware"]
        self.tid = 0 if comm else op.stream_id
        self.pid = pid
        name = _esc(_J(op.name))
        if comm:
            kernel = (',\n{"ph":"X","name":' + name + ',"pid":' + str(pid) + ',"tid":0,"ts":"' +
                      _TIME + '","dur":' + _TIME + ',"cat":"hccl","args":{"notify id":0,'
                      '"duration estimated(us)":' + _TIME + ',"stream id":' +
                      str(op.stream_id) + ',"task id":' + str(op.task_id) + ',"task type":' +
                      _esc(_J(op.op_type)) + ',"size(Byte)":' + str(int(op.bytes_moved)) +
                      ',"data type":' + _esc(_J(op.dtype)) + ',"Device Id":' + dev +
                      ',"connection_id":%d' + _SKIP * 3 + ',"Step":%d}}')
            if not p.hccl:
                kernel = _SKIP * 11
        else:
            ttype = _esc(_J(op.task_type if l1 else NA))
            otype = _esc(_J(op.op_type if l1 else NA))
            kernel = (
                ',\n{"ph":"X","name":' + name + ',"pid":' + str(pid) + ',"tid":' +
                str(op.stream_id) + ',"ts":"' + _TIME + '","dur":' + _TIME + _SKIP * 2 +
                ',"cat":"kernel","args":{"Model Id":' + str(op.model_id) + ',"Task Type":' +
                ttype + ',"Physic Stream Id":' + str(op.stream_id) + ',"Task Id":' +
                str(op.task_id) + ',"Batch Id":0,"Subtask Id":4294967295,"connection_id":%d,'
                '"Device Id":' + dev + ',"Aicore Time(ms)":%d.%06d,"Total Cycle":' +
                ("%d" if l1 else '"N/A"' + _SKIP) + ',"Op Type":' + otype + ',"Step":%d}}')
        launch = (',\n{"ph":"X","name":"' + LAUNCH_NAME + '","pid":' + str(PIDS["CANN"]) +
                  ',"tid":' + str(LAUNCH_TID) + ',"ts":"' + _TIME + '","dur":' + _TIME +
                  ',"cat":"node","args":{"level":"node","Op Name":' + name +
                  ',"connection_id":%d}}')
        flow_s = (',\n{"ph":"s","name":"HostToDevice","cat":"HostToDevice","id":"%d","pid":' +
                  str(PIDS["CANN"]) + ',"tid":' + str(LAUNCH_TID) + ',"ts":"' + _TIME + '"}')
        flow_f = (',\n{"ph":"f","bp":"e","name":"HostToDevice","cat":"HostToDevice","id":"%d",'
                  '"pid":' + str(pid) + ',"tid":' + str(self.tid) + ',"ts":"' + _TIME + '"}')
        if comm and not p.hccl:
            flow_f = _SKIP * 3
        self.events = kernel + launch + flow_s + flow_f
        self.event_count = self.events.count(",\n{")
        """Events one task adds to the timeline (each starts with ``,\\n{``; names are
        JSON-escaped, so the sequence appears nowhere else)."""
        self.cycles_per_ns = p.clock_mhz * op.block_dim / 1000 if l1 else None
        db = p.db
        if db is not None:
            sid = db.sid
            compute: tuple[Any, ...] = (None,) * 14
            if not comm:
                compute = (
                    sid(op.name), op.block_dim, 0, sid(op.task_type), sid(op.op_type),
                    sid(shapes[3]), sid(shapes[2]), sid(shapes[1]), sid(shapes[6]),
                    sid(shapes[5]), sid(shapes[4]), sid(NA), sid("static" if l1 else NA),
                    sid(shapes[0]))
            self.db_sig = (int(comm), sid(op.task_type), op.stream_id, op.task_id,
                           op.model_id, *compute)
            """The static TASK and COMPUTE_TASK_INFO columns (MsprofDb.add_task_sig)."""
        self.work = TaskWork(task_type=op.task_type, duration_us=0.0, flops=op.flops,
                             bytes_moved=op.bytes_moved, cube_fraction=op.cube_fraction,
                             block_dim=op.block_dim, dtype=op.dtype)


_MISSING: Any = object()
SUB_CHUNK = 8192
"""Task records formatted per block (bounds the text and value lists held at once)."""


def _starts_in(starts: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """The segment starts of rows ``lo``..``hi - 1``, relative to ``lo`` (from 0)."""
    inner = starts[(starts > lo) & (starts < hi)] - lo
    return np.concatenate(([0], inner))


class _SigAgg:
    """Per-signature count / total / min / max of task durations (ns), vectorised."""

    def __init__(self) -> None:
        self.n = np.zeros(0, dtype=np.int64)
        self.tot = np.zeros(0, dtype=np.float64)
        self.lo = np.zeros(0, dtype=np.int64)
        self.hi = np.zeros(0, dtype=np.int64)

    def add(self, sig: np.ndarray, d: np.ndarray, top: int) -> None:
        """Add one block (``top``: one more than the largest signature in it)."""
        if top > len(self.n):
            grow = top - len(self.n)
            self.n = np.concatenate((self.n, np.zeros(grow, dtype=np.int64)))
            self.tot = np.concatenate((self.tot, np.zeros(grow)))
            self.lo = np.concatenate((self.lo, np.full(grow, np.iinfo(np.int64).max)))
            self.hi = np.concatenate((self.hi, np.full(grow, -1, dtype=np.int64)))
        size = len(self.n)
        self.n += np.bincount(sig, minlength=size)
        self.tot += np.bincount(sig, weights=d, minlength=size)
        np.minimum.at(self.lo, sig, d)
        np.maximum.at(self.hi, sig, d)

    def stats(self, infos: dict[int, _Sig | None],
              level: str) -> dict[tuple[str, str], list[float]]:
        """(OP Type, Core Type) -> [count, total µs, min µs, max µs]."""
        out: dict[tuple[str, str], list[float]] = {}
        for sig in np.flatnonzero(self.n).tolist():
            info = infos.get(sig)
            if info is None:
                continue
            op = info.op
            key = (op.op_type if level == "l1" else NA, op.task_type if level == "l1" else NA)
            n, tot = int(self.n[sig]), float(self.tot[sig]) / 1000
            lo, hi = int(self.lo[sig]) / 1000, int(self.hi[sig]) / 1000
            got = out.get(key)
            if got is None:
                out[key] = [n, tot, lo, hi]
            else:
                got[0] += n
                got[1] += tot
                got[2] = min(got[2], lo)
                got[3] = max(got[3], hi)
        return out


class TaskPass:
    """Writes every per-task output of ``session`` in one pass (see the module docstring).

    ``timeline`` None writes no text output (the database worker's pass); ``db`` None writes
    no database rows (the text pass beside that worker). Both compute the same PMU keys and
    intern strings in the same order, so either split gives the files of one combined pass.
    """

    def __init__(self, session: ProfilingSession, *, summary: SlicedCsv | None,
                 task_time: IO[str] | None, timeline: TimelineWriter | None,
                 db: MsprofDb | None,
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
        self.compute: Any = np.zeros((0, 2), dtype=np.int64)
        """Merged compute busy intervals, (n, 2) int64 ns."""
        self.comm: list[tuple[int, int]] = []
        """Communication task intervals (ns)."""
        self.count = 0
        self.first_ns: int | None = None
        self.last_ns = 0
        self.extra: list[Callable[[TaskRow], None]] = []
        """Per-task callbacks for the rare outputs whose rows depend on the times (aicpu)."""
        self.static: list[tuple[IO[str], Callable[[TaskRow], list[str] | None]]] = []
        """Outputs with one row per task that depends only on its signature (l2_cache):
        the row (or None for no row) is formatted once per signature."""
        self._static_lines: dict[tuple[int, int], str] = {}

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
            text = self._pmu_text[key] = _esc("," + csv_line(values)) if values else ""
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
        self._sigs = s.tasks.load_sigs()
        self._infos: dict[int, _Sig | None] = {}
        self._text = self.level != "off"
        self._gid = 0
        self._g_prev = 1
        """The launch recurrence's carry: host end minus global task index (see _launches)."""
        self._host_end = 0
        self._compute_parts: list[np.ndarray] = []
        self._sum_keys: dict[int, tuple[int, int]] = {}
        self._sum_templates: list[str] = []
        self._fmt_sum = BlockFormatter(self._sum_templates)
        self._fmt_tt = BlockFormatter([])
        self._fmt_tl = BlockFormatter([])
        self._agg = _SigAgg()
        if self.timeline is not None:
            self.timeline.ensure_launch_thread(LAUNCH_TID)
        self._streams: set[tuple[int, int]] = set()
        db = self.db
        self._rows: TemplateRows | None = None
        if db is not None:
            db.begin_pmu()
            db.begin_task_rows()
            self._rows = TemplateRows(db)
        for chunk in s.tasks.tasks.chunks():
            for lo in range(0, len(chunk), SUB_CHUNK):
                self._chunk(chunk[lo:lo + SUB_CHUNK])
        parts = self._compute_parts
        self.compute = (overlap.merge(parts[0] if len(parts) == 1 else np.concatenate(parts))
                        if parts else np.zeros((0, 2), dtype=np.int64))
        self._compute_parts = []
        self.count = self._gid
        if self._text:
            self.stats = self._agg.stats(self._infos, self.level)
        if db is not None:
            assert self._rows is not None
            self._rows.finish()
            db.end_task_rows(device_id=self.device_id, pid=s.pid,
                             launch_tid=(s.pid << 32) | LAUNCH_TID,
                             launch_type=API_TYPES["node"], launch_name=db.sid(LAUNCH_NAME))
            db.end_pmu()

    def _info(self, sig: int) -> _Sig | None:
        info = self._infos.get(sig, _MISSING)
        if info is _MISSING:
            op = self._sigs.get(sig)
            info = self._infos[sig] = None if op is None else _Sig(op, self)
            if info is not None:
                if self.db is not None:
                    self.db.add_task_sig(sig, info.db_sig)
                if self._text:
                    self._fmt_tl.put(sig, info.events)
                    self._fmt_tt.put(sig, info.task_time)
                key = (info.pid, info.tid)
                if self.timeline is not None and self._text and key not in self._streams \
                        and (self.hccl or not info.comm):
                    self._streams.add(key)
                    self.timeline.ensure_stream(info.pid, info.tid, info.comm)
        return info

    def _launches(self, st: np.ndarray, gid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Modelled host launches, vectorised: a launch ends at ``h_i = max(st_i, h_{i-1} +
        1)`` (it lasts up to ``launch_ns``, ends when its kernel starts, never overlaps the
        previous one), so ``h_i - i`` is a running maximum of ``st_i - i``."""
        g = np.maximum.accumulate(np.concatenate(([self._g_prev], st - gid)))[1:]
        h = g + gid
        prev = np.concatenate(([self._host_end], h[:-1]))
        ls = np.maximum(st - self.launch_ns, prev)
        self._g_prev = int(g[-1])
        self._host_end = int(h[-1])
        return ls, h

    def _chunk(self, chunk: np.ndarray) -> None:
        """Every output of one block of task records."""
        sig = chunk[:, 0]
        usig = np.unique(sig).tolist()
        known = [u for u in usig if self._info(u) is not None]
        if len(known) < len(usig):
            chunk = chunk[np.isin(sig, known)]
            sig = chunk[:, 0]
        n = len(chunk)
        if not n:
            return
        infos = self._infos
        top = max(known) + 1
        comm_of = np.zeros(top, dtype=bool)
        cyc_of = np.zeros(top, dtype=np.float64)
        events_of = np.zeros(top, dtype=np.int64)
        for u in known:
            info = infos[u]
            assert info is not None
            comm_of[u] = info.comm
            cyc_of[u] = info.cycles_per_ns or 0.0
            events_of[u] = info.event_count
        st = chunk[:, 2] + self.session.base_ns
        d = chunk[:, 3]
        wait = chunk[:, 4]
        step = chunk[:, 1]
        end = st + d
        gid = np.arange(self._gid, self._gid + n, dtype=np.int64)
        self._gid += n
        ls, le = self._launches(st, gid)
        comm = comm_of[sig]
        kid = np.full(n, -1, dtype=np.int64)
        if self._text:
            self._agg.add(sig, d, top)
            tidx = self._summary_keys(sig, d, kid, comm)
            starts = np.concatenate(([0], np.flatnonzero(step[1:] != step[:-1]) + 1))
            if self.summary is not None:
                vals = np.column_stack((st // 1000, st % 1000, d // 1000, d % 1000,
                                        wait // 1000, wait % 1000))
                self.summary.write_rows(n, lambda lo, hi: self._fmt_sum.pieces(
                    tidx[lo:hi], vals[lo:hi], _starts_in(starts, lo, hi)))
            if self.task_time is not None:
                vals = np.column_stack((d // 1000, d % 1000, st // 1000, st % 1000,
                                        end // 1000, end % 1000))
                write_pieces(self.task_time, self._fmt_tt.pieces(sig, vals, starts))
            if self.timeline is not None:
                cyc = (d * cyc_of[sig]).astype(np.int64)
                sw, sf, dw, df = st // 1000, st % 1000, d // 1000, d % 1000
                lw, lf, nw, nf = ls // 1000, ls % 1000, (le - ls) // 1000, (le - ls) % 1000
                vals = np.column_stack((sw, sf, dw, df, dw, df, gid, d // 1000000,
                                        d % 1000000, cyc, step, lw, lf, nw, nf, gid, gid, lw,
                                        lf, gid, sw, sf))
                self.timeline.raw_pieces(self._fmt_tl.pieces(sig, vals, starts),
                                         int(events_of[sig].sum()))
            for out, rows in self.static:
                lines = [self._static_line(out, rows, u) for u in range(top)]
                out.write("".join(itemgetter(*sig.tolist())(lines)) if n > 1
                          else lines[int(sig[0])])
        db = self.db
        if self._rows is not None:
            self._rows.add(gid, sig, st, end, ls, le, kid, step)
        cidx = np.flatnonzero(comm)
        if len(cidx):
            for i in cidx.tolist():
                a, b = int(st[i]), int(end[i])
                self.comm.append((a, b))
                if db is not None:
                    info = infos[int(sig[i])]
                    assert info is not None
                    self._db_comm(info, int(gid[i]), a, b)
        comp = ~comm
        if comp.any():
            self._compute_parts.append(overlap.merge(np.stack((st[comp], end[comp]), axis=1)))
            if len(self._compute_parts) >= 64:
                self._compute_parts = [overlap.merge(np.concatenate(self._compute_parts))]
        first, last = int(st.min()), int(end.max())
        if self.first_ns is None or first < self.first_ns:
            self.first_ns = first
        if last > self.last_ns:
            self.last_ns = last
        if self.extra:
            for i in range(n):
                info = infos[int(sig[i])]
                assert info is not None
                row = TaskRow(info.op, int(step[i]), int(st[i]), int(d[i]), int(wait[i]))
                for callback in self.extra:
                    callback(row)

    def _static_line(self, out: IO[str], rows: Callable[[TaskRow], list[str] | None],
                     sig: int) -> str:
        key = (id(out), sig)
        line = self._static_lines.get(key)
        if line is None:
            info = self._infos.get(sig)
            cells = rows(TaskRow(info.op, 0, 0, 0, 0)) if info is not None else None
            line = self._static_lines[key] = csv_line(cells) + "\n" if cells else ""
        return line

    def _summary_keys(self, sig: np.ndarray, d: np.ndarray, kid: np.ndarray,
                      comm: np.ndarray) -> np.ndarray:
        """The op_summary line template of each row (its PMU values depend on the signature
        and the duration: one template per distinct pair), filling ``kid`` (the PMU key of
        each compute row, -1 without PMU)."""
        pmu_on = self.pmu is not None
        key = (sig << 40) | d if pmu_on else sig
        uniq, inv = np.unique(key, return_inverse=True)
        tix = np.empty(len(uniq), dtype=np.int64)
        kix = np.empty(len(uniq), dtype=np.int64)
        for j, k in enumerate(uniq.tolist()):
            got = self._sum_keys.get(k)
            if got is None:
                sg = k >> 40 if pmu_on else k
                info = self._infos[sg]
                assert info is not None
                ptext, pk = self._pmu_values(info, sg, k & ((1 << 40) - 1)) if pmu_on \
                    else ("", -1)
                got = self._sum_keys[k] = (len(self._sum_templates), -1 if info.comm else pk)
                self._sum_templates.append(info.sum_pre + ptext + "\n")
            tix[j], kix[j] = got
        kid[:] = kix[inv]
        return tix[inv]

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
