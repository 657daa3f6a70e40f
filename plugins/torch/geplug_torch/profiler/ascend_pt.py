"""The ``*_ascend_pt`` directory torch_npu's profiler writes (formats.md §6.3), derived.

``PROF_*/`` inside it is written by the core's profiling writers (the collection's systems
have ``profiling_options.output`` set to this directory). ``ASCEND_PROFILER_OUTPUT/`` is
derived from that directory's summaries - nothing is measured twice:

- ``kernel_details.csv``: op_summary's rows in torch_npu's column names (Name, Type,
  Accelerator Core, Start Time(us), ...), ``Step Id`` added, dtypes/formats without the
  ``DT_``/``FORMAT_`` prefixes (formats.md §6.4);
- ``op_statistic.csv``, ``api_statistic.csv``: the PROF files' rows (op_statistic without
  the msprof-only Device_id column);
- ``trace_view.json``: the PROF timeline (Ascend Hardware, CANN) plus the framework ops
  (``aten::*``, cat ``cpu_op``, one ``ProfilerStep#N`` per step) and their ``async_npu``
  flows to the kernels they launched, and the ``Overlap Analysis`` process (Computing /
  Communication / Communication(Not Overlapped) / Free per step, replacing PROF's
  whole-run one) that cluster readers compute step times from;
- ``step_trace_time.csv``: per step, from the step's compute and communication intervals
  (:mod:`geplug_torch.profiler.steptime`: the same numbers as the Overlap Analysis track);
- ``communication.json`` / ``communication_matrix.json``: PROF's per-op entries grouped per
  step as torch_npu writes them, ``{"step{N}": {"collective": {...}, "p2p": {...}}}``;
- ``operator_details.csv``: per framework op and input shapes, its device time;
- ``operator_memory.csv``, ``memory_record.csv``, ``npu_module_mem.csv`` with
  ``profile_memory=True``: the CANN memory records in torch_npu's columns
  (:mod:`geplug_torch.profiler.memory`);
- ``ascend_pytorch_profiler_{rank}.db`` when ``export_type`` names ``ExportType.Db``: the
  msprof database plus torch_npu's framework tables (:mod:`geplug_torch.profiler.ptdb`),
  and ``analysis.db`` beside it (:mod:`geplug_torch.profiler.analysisdb`).

Framework ops are placed on the simulated device clock at their kernel's start (the host
is not timed per op); documented in docs/torch.md.
"""

from __future__ import annotations

import csv
import json
import os
from collections import defaultdict, deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from geplug.profiling.layout import AtomicFile, fmt, fmt_ns, write_json
from geplug.profiling.overlap import THREADS
from geplug.profiling.reader import find_prof_dirs, output_file, output_files
from geplug_torch.profiler.analysisdb import write_analysis_db
from geplug_torch.profiler.groups import double_hash, parallel_groups
from geplug_torch.profiler.hostops import host_ops
from geplug_torch.profiler.memory import memory_csvs
from geplug_torch.profiler.options import ExportType
from geplug_torch.profiler.ptdb import write_pytorch_db
from geplug_torch.profiler.steptime import StepTime, step_times

if TYPE_CHECKING:
    from geplug_torch.profiler.profile import Collection

__all__ = ["OUTPUT", "STEP_TRACE_TIME_HEADER", "write_ascend_pt"]

OUTPUT = "ASCEND_PROFILER_OUTPUT"
STEP_TRACE_TIME_HEADER = [
    "Device_id", "Step", "Computing", "Communication(Not Overlapped)", "Overlapped",
    "Communication", "Free", "Stage", "Bubble",
    "Communication(Not Overlapped and Exclude Receive)", "Preparing",
]
OPERATOR_DETAILS_HEADER = [
    "Name", "Input Shapes", "Call Stack", "Host Self Duration(us)", "Host Total Duration(us)",
    "Device Self Duration(us)", "Device Total Duration(us)",
    "Device Self Duration With AICore(us)", "Device Total Duration With AICore(us)",
]
_KERNEL_RENAMES = {
    "Op Name": "Name", "OP Type": "Type", "Task Type": "Accelerator Core",
    "Task Start Time(us)": "Start Time(us)", "Task Duration(us)": "Duration(us)",
    "Task Wait Time(us)": "Wait Time(us)",
}
_KERNEL_DROP = frozenset({"Model Name", "Infer ID"})
_PYTHON_PID = 10
_OVERLAP_PID = 11


def _ns(base_us: int, start_us: float) -> int:
    return base_us * 1000 + round(start_us * 1000)


_P2P = ("hcom_send", "hcom_receive", "hcom_batchsendrecv")
"""Op-name prefixes readers file under ``p2p`` (formats.md §6.7)."""


def _read_csv(path: str | None) -> tuple[list[str], list[list[str]]]:
    if path is None:
        return [], []
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    return (rows[0], rows[1:]) if rows else ([], [])


class _Out:
    """The files of ASCEND_PROFILER_OUTPUT: CSVs written atomically, kept for the DB."""

    def __init__(self, root: str, text: bool) -> None:
        self.dir = os.path.join(root, OUTPUT)
        os.makedirs(self.dir, exist_ok=True)
        self.text = text
        self.tables: dict[str, tuple[list[str], list[list[str]]]] = {}

    def csv(self, name: str, header: list[str], rows: Iterable[list[str]]) -> None:
        body = [list(r) for r in rows]
        self.tables[name] = (header, body)
        if not self.text:
            return
        with AtomicFile(os.path.join(self.dir, f"{name}.csv"), newline="") as fh:
            w = csv.writer(fh)
            w.writerow(header)
            w.writerows(body)

    def json(self, name: str, data: Any) -> None:
        if self.text:
            with AtomicFile(os.path.join(self.dir, name)) as fh:
                json.dump(data, fh, separators=(",", ":"))


def write_ascend_pt(c: Collection) -> list[str]:
    """Write ``c.root``'s profiler_info, metadata and ASCEND_PROFILER_OUTPUT; returns the
    files of ASCEND_PROFILER_OUTPUT."""
    prof = c.prof
    exp = prof.experimental_config
    rank = 0
    device_id = 0
    for system in c.systems.values():
        rank = int(getattr(system.rank, "rank_id", 0) or 0) if system.rank else 0
        device_id = system.device_id
    prof_dirs = find_prof_dirs(c.root) if c.systems else []
    out = _Out(c.root, ExportType.Text in exp.export_type)
    kernel_rows = _kernel_details(out, prof_dirs, c)
    for stem in ("op_statistic", "api_statistic"):
        header, rows = _merge(prof_dirs, stem)
        if stem == "op_statistic" and header[:1] == ["Device_id"]:
            header, rows = header[1:], [r[1:] for r in rows]
        if header:
            out.csv(stem, header, rows)
    steps = step_times(c)
    out.csv("step_trace_time", STEP_TRACE_TIME_HEADER,
            [st.row(device_id) for st in steps.values()])
    out.csv("operator_details", OPERATOR_DETAILS_HEADER, _operator_rows(c))
    out.json("trace_view.json", _trace_view(c, prof_dirs, steps))
    for name, (header, rows) in memory_csvs(prof_dirs).items():
        out.csv(name, header, rows)
    groups = parallel_groups()
    comm = _communication(out, prof_dirs, c,
                          {g.group: double_hash(g.comm_name) for g in groups})
    meta = ({"parallel_group_info": json.dumps({g.comm_name: g.info() for g in groups})}
            if groups else {})
    if ExportType.Db in exp.export_type:
        written = write_pytorch_db(os.path.join(out.dir, f"ascend_pytorch_profiler_{rank}.db"),
                                   prof_dirs, c, meta,
                                   {g.group: g.comm_name for g in groups})
        if written is not None:  # the analysis database goes with the profiler database
            write_analysis_db(os.path.join(out.dir, "analysis.db"), steps,
                              comm.get("communication.json", {}),
                              comm.get("communication_matrix.json", {}))
    write_json(os.path.join(c.root, f"profiler_info_{rank}.json"), {
        "config": {
            "common_config": {
                "activities": sorted(a.value for a in prof.activities),
                "record_shapes": prof.record_shapes, "profile_memory": prof.profile_memory,
                "with_stack": prof.with_stack,
                "schedule": repr(prof.schedule) if prof.schedule else None,
            },
            "experimental_config": {
                "profiler_level": exp.profiler_level.value,
                "aic_metrics": exp.aic_metrics.value, "l2_cache": exp.l2_cache,
                "data_simplification": exp.data_simplification,
                "export_type": [e.value for e in exp.export_type],
                "msprof_tx": exp.msprof_tx,
            },
        },
        "start_info": {"start_time_ns": c.start_ns, "rank_id": rank},
        "end_info": {"kernels": kernel_rows, "simulated_by": "geplug"},
    })
    write_json(os.path.join(c.root, "profiler_metadata.json"), {
        "ENV_VARIABLES": {k: v for k, v in sorted(os.environ.items())
                          if k.startswith(("ASCEND_", "HCCL_", "RANK", "WORLD_SIZE"))},
        **({"parallel_group_info": {g.comm_name: g.info() for g in groups}} if groups else {}),
    })
    return sorted(os.path.join(out.dir, n) for n in os.listdir(out.dir))


def _merge(prof_dirs: list[str], stem: str) -> tuple[list[str], list[list[str]]]:
    header: list[str] = []
    rows: list[list[str]] = []
    for d in prof_dirs:
        for part in output_files(d, stem):  # op_summary beyond 1M rows is in slices
            h, r = _read_csv(part)
            if h:
                header = header or h
                rows.extend(r)
    return header, rows


def _step_of(c: Collection) -> dict[str, deque[int]]:
    """Kernel name -> the steps of its executions, in time order."""
    runs: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for run in c.runs:
        for op, start in zip(run.graph.ops, run.starts, strict=True):
            runs[op.record.name].append((_ns(run.base_us, start), run.step))
    return {name: deque(s for _, s in sorted(v)) for name, v in runs.items()}


def _kernel_details(out: _Out, prof_dirs: list[str], c: Collection) -> int:
    header, rows = _merge(prof_dirs, "op_summary")
    if not header:
        return 0
    steps = _step_of(c)
    keep = [i for i, h in enumerate(header) if h not in _KERNEL_DROP]
    new_header = [_KERNEL_RENAMES.get(header[i], header[i]) for i in keep]
    new_header.insert(1, "Step Id")
    name_at = header.index("Op Name")
    start_at = header.index("Task Start Time(us)")
    typed = [i for i, h in enumerate(header) if h.endswith(("Data Types", "Formats"))]
    ordered = sorted(rows, key=lambda r: float(r[start_at].strip() or 0))
    body = []
    for r in ordered:
        r = list(r)
        for i in typed:
            r[i] = r[i].replace("DT_", "").replace("FORMAT_", "")
        queue = steps.get(r[name_at])
        step = str(queue.popleft()) if queue else "N/A"
        new = [r[i] for i in keep]
        new.insert(1, step)
        body.append(new)
    out.csv("kernel_details", new_header, body)
    return len(body)


def _operator_rows(c: Collection) -> list[list[str]]:
    agg: dict[tuple[str, str], float] = defaultdict(float)
    for run in c.runs:
        for op in run.graph.ops:
            shapes = ";".join(",".join(str(d) for d in m.shape)
                              for m in (op.call_inputs or op.inputs))
            agg[(f"aten::{op.aten}", shapes if c.prof.record_shapes else "")] += op.duration_us
    return [[name, shapes, "", fmt(t), fmt(t), fmt(t), fmt(t),
             fmt(t), fmt(t)] for (name, shapes), t in sorted(agg.items())]


def _load_timeline(prof_dirs: list[str]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for d in prof_dirs:
        path = output_file(d, "msprof", "json")
        if path is not None:
            with open(path, encoding="utf-8") as fh:
                events.extend(json.load(fh))
    return events


def _trace_view(c: Collection, prof_dirs: list[str],
                steps: dict[int, StepTime]) -> list[dict[str, Any]]:
    events = _load_timeline(prof_dirs)
    whole_run = {e["pid"] for e in events if e.get("ph") == "M" and
                 e.get("name") == "process_name" and
                 e.get("args", {}).get("name") == "Overlap Analysis"}
    events = [e for e in events if e.get("pid") not in whole_run]  # replaced per step below
    hw_pid = next((e["pid"] for e in events if e.get("ph") == "M" and
                   e.get("name") == "process_name" and
                   e.get("args", {}).get("name") == "Ascend Hardware"), None)
    kernels = {(e["name"], e["ts"]): e for e in events
               if e.get("ph") == "X" and e.get("pid") == hw_pid}
    events += [
        {"ph": "M", "name": "process_name", "pid": _PYTHON_PID, "tid": 0,
         "args": {"name": "Python"}},
        {"ph": "M", "name": "process_sort_index", "pid": _PYTHON_PID, "tid": 0,
         "args": {"sort_index": 0}},
        {"ph": "M", "name": "thread_name", "pid": _PYTHON_PID, "tid": 1,
         "args": {"name": "Thread 1"}},
    ]
    # the steps before the ops they contain (readers sort by start, stably)
    for step, st in steps.items():
        events.append({"ph": "X", "name": f"ProfilerStep#{step}", "pid": _PYTHON_PID,
                       "tid": 1, "ts": fmt_ns(st.begin_ns),
                       "dur": (st.end_ns - st.begin_ns) / 1000, "cat": "cpu_op", "args": {}})
    flow = 0
    for seq, h in enumerate(host_ops(c)):
        op = h.op
        args: dict[str, Any] = {"Sequence number": seq, "Fwd thread id": 0, "Call stack": ""}
        if c.prof.record_shapes:
            args["Input Dims"] = [list(m.shape) for m in (op.call_inputs or op.inputs)]
            args["Input type"] = [m.dtype for m in (op.call_inputs or op.inputs)]
        ts = fmt_ns(h.begin_ns)
        events.append({"ph": "X", "name": f"aten::{op.aten}", "pid": _PYTHON_PID,
                       "tid": 1, "ts": ts, "dur": (h.end_ns - h.begin_ns) / 1000,
                       "cat": "cpu_op", "args": args})
        kernel = kernels.get((op.record.name, fmt_ns(h.kernel_ns)))
        if kernel is not None:
            flow += 1
            events.append({"ph": "s", "name": "torch_to_npu", "cat": "async_npu",
                           "id": flow, "pid": _PYTHON_PID, "tid": 1, "ts": ts})
            events.append({"ph": "f", "name": "torch_to_npu", "cat": "async_npu",
                           "id": flow, "pid": kernel["pid"], "tid": kernel["tid"],
                           "ts": kernel["ts"], "bp": "e"})
    events += [{"ph": "M", "name": "process_name", "pid": _OVERLAP_PID, "tid": 0,
                "args": {"name": "Overlap Analysis"}}]
    for tid, name in enumerate(THREADS):
        events.append({"ph": "M", "name": "thread_name", "pid": _OVERLAP_PID, "tid": tid,
                       "args": {"name": name}})
    for st in steps.values():
        for tid, name in enumerate(THREADS):
            for begin, end in st.tracks()[name].tolist():
                events.append({"ph": "X", "name": name, "pid": _OVERLAP_PID, "tid": tid,
                               "ts": fmt_ns(begin), "dur": (end - begin) / 1000,
                               "cat": "overlap", "args": {}})
    return events


def _communication(out: _Out, prof_dirs: list[str], c: Collection,
                   group_ids: dict[str, str]) -> dict[str, dict[str, Any]]:
    """communication.json / communication_matrix.json when PROF has them (distributed):
    PROF's flat per-op entries filed under the step each op ran in (``step{N}``), as
    ``collective`` or ``p2p`` by the op's name. ``group_ids`` renames the group after ``@``
    to torch_npu's id of it (the hash of the communicator name, see
    :mod:`geplug_torch.profiler.groups`), which ``parallel_group_info`` resolves. Returns
    what it wrote, by file name (the database export writes the same)."""
    step_of = {r.name: r.step for r in c.comms}
    first = min(step_of.values(), default=min((r.step for r in c.runs), default=0))
    written: dict[str, dict[str, Any]] = {}
    for name in ("communication.json", "communication_matrix.json"):
        merged: dict[str, Any] = {}
        for d in prof_dirs:
            path = os.path.join(d, "analyze", name)
            if os.path.isfile(path):
                with open(path, encoding="utf-8") as fh:
                    merged.update(json.load(fh))
        ops = {k: v for k, v in merged.items() if not k.startswith("Total")}
        if not ops:
            continue
        grouped: dict[int, dict[str, dict[str, Any]]] = {}
        for key, value in ops.items():
            op, _, group = key.partition("@")
            step = grouped.setdefault(step_of.get(op, first), {"collective": {}, "p2p": {}})
            renamed = f"{op}@{group_ids.get(group, group)}" if group else key
            step["p2p" if op.startswith(_P2P) else "collective"][renamed] = value
        written[name] = {f"step{n}": grouped[n] for n in sorted(grouped)}
        out.json(name, written[name])
    return written
