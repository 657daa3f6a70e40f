"""The public Ascend analysers as test oracles: msprof-analyze 26.2.0 on a 2-rank geplug run.

Runs in the ``realtools`` tox env (which installs ``msprof-analyze==26.2.0`` from PyPI); skipped
elsewhere. Two ``geplug run`` processes with RANK_ID 0 and 1 and one RANK_TABLE_FILE write
their ``PROF_*`` directories into one cluster directory; every ``msprof-analyze cluster -m``
mode and ``advisor all`` run on it, and the assertions compare their outputs with the numbers
geplug wrote (its own msprof database and CSVs): op counts and durations, launches, per-rank
computing / free time, full shapes in the advisor's report.
"""

from __future__ import annotations

import csv
import glob
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from geplug.testing.plugin import require_product

pytest.importorskip("msprof_analyze", reason="the realtools tox env installs msprof-analyze")
pytestmark = pytest.mark.requires_products("atlas_a2")

MODES = (
    "all", "communication_time", "communication_matrix", "cluster_time_summary", "pp_chart",
    "slow_link", "free_analysis", "communication_group_map", "mstx2commop", "cann_api_sum",
    "cluster_time_compare_summary", "cluster_compare_baseline", "operator_mfu",
    "computational_op_masking", "compute_op_sum", "slow_rank", "calibrate_npu_gpu",
    "export_summary", "communication_bottleneck", "communication_matrix_sum", "mstx_sum",
    "freq_analysis", "p2p_pairing", "communication_time_sum", "module_statistic",
    "ep_load_balance", "hccl_sum",
)
"""Every ``cluster -m`` choice of msprof-analyze 26.2.0."""
STEPS = 3


def msprof_analyze_tool() -> str:
    """The ``msprof-analyze`` of the venv running the tests (skips the test without it)."""
    found = shutil.which("msprof-analyze") or os.path.join(os.path.dirname(sys.executable),
                                                           "msprof-analyze")
    if not os.path.exists(found):
        pytest.skip("msprof-analyze is not on PATH")
    return found


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A 2-rank run (DB and text copies) and every analyser's output on it."""
    import onnx
    from geplug_simulator.demo import build_cnn

    root = tmp_path_factory.mktemp("cluster")
    model = root / "cnn.onnx"
    onnx.save(build_cnn(), str(model))
    table = {"status": "completed", "version": "1.0", "server_count": "1", "server_list": [{
        "server_id": "10.0.0.1", "device": [
            {"device_id": str(d), "device_ip": f"192.168.0.{d}", "rank_id": str(d)}
            for d in range(2)]}]}
    (root / "rank_table.json").write_text(json.dumps(table))
    prof = root / "prof"
    (root / "prof.toml").write_text(
        "profiling_mode = true\n[profiling_options]\n"
        f'output = "{prof}"\ntask_time = "l1"\ntraining_trace = "on"\n'
        'aic_metrics = "PipeUtilization"\nl2 = "on"\nruntime_api = "on"\n')
    for rank in (0, 1):
        env = dict(os.environ, RANK_ID=str(rank), RANK_TABLE_FILE=str(root / "rank_table.json"))
        subprocess.run(["geplug", "run", "--product", "atlas_a2", "--config",
                        str(root / "prof.toml"), "--steps", str(STEPS), str(model)],
                       env=env, check=True, capture_output=True, text=True)
    # the text route (a PROF_* directory without its database)
    text = root / "text"
    shutil.copytree(prof, text)
    for db in glob.glob(str(text / "PROF_*" / "msprof_*.db")):
        os.remove(db)
    tool = msprof_analyze_tool()

    def run(args: tuple[str, ...]) -> tuple[str, subprocess.CompletedProcess[str]]:
        name, *rest = args
        out = root / "out" / name
        proc = subprocess.run([tool, *rest, "-o", str(out)], capture_output=True, text=True,
                              timeout=600, cwd=root)
        return name, proc

    jobs: list[tuple[str, ...]] = []
    for mode in MODES:
        extra: list[str] = []
        if mode == "cluster_time_compare_summary":
            extra = ["--bp", str(prof)]
        if mode == "calibrate_npu_gpu":  # needs an nsys GPU profile: none exists here
            timeline = glob.glob(str(prof / "PROF_*" / "mindstudio_profiler_output" /
                                     "msprof_*.json"))[0]
            extra = ["--baseline_profiling_path", timeline]
        jobs.append((mode, "cluster", "-d", str(prof), "-m", mode, *extra))
    jobs.append(("text_all", "cluster", "-d", str(text), "-m", "all"))
    jobs.append(("advisor", "advisor", "all", "-d", str(prof)))
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = dict(pool.map(run, jobs))
    ranks = {}
    for d in glob.glob(str(prof / "PROF_*")):
        info = json.loads(Path(glob.glob(os.path.join(d, "device_*", "info.json.*"))[0])
                          .read_text())
        ranks[info["rank_id"]] = d
    return {"root": root, "prof": prof, "results": results, "ranks": ranks}


def _log(cluster: dict[str, Any], mode: str) -> str:
    proc = cluster["results"][mode]
    return proc.stdout + proc.stderr


def _out_db(cluster: dict[str, Any], mode: str) -> sqlite3.Connection:
    found = glob.glob(str(cluster["root"] / "out" / mode / "**" / "cluster_analysis.db"),
                      recursive=True)
    assert found, f"{mode} wrote no cluster_analysis.db:\n{_log(cluster, mode)[-2000:]}"
    return sqlite3.connect(found[0])


def _geplug_db(cluster: dict[str, Any], rank: int) -> sqlite3.Connection:
    (path,) = glob.glob(os.path.join(cluster["ranks"][rank], "msprof_*.db"))
    return sqlite3.connect(path)


def _compute_ns(cluster: dict[str, Any], rank: int) -> int:
    conn = _geplug_db(cluster, rank)
    return conn.execute("SELECT SUM(t.endNs - t.startNs) FROM COMPUTE_TASK_INFO c JOIN TASK t "
                        "ON t.globalTaskId = c.globalTaskId").fetchone()[0]


@pytest.mark.parametrize("mode", [*MODES, "advisor", "text_all"])
def test_every_analysis_runs_to_completion_on_geplug_output(cluster, mode):
    proc = cluster["results"][mode]
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-3000:]
    if mode == "calibrate_npu_gpu":  # compares against a GPU (nsys) baseline geplug lacks
        assert "Failed to analyze GPU profile" in log, log[-3000:]
        return
    assert "Traceback" not in log, log[-3000:]
    assert "only supports DB as input data" not in log
    assert "has not been fully parsed" not in log


def test_both_ranks_are_found_as_msprof_db_data(cluster):
    assert sorted(cluster["ranks"]) == [0, 1]
    assert "2 ranks, data type: db, profiling type: msprof" in _log(cluster, "all")


def test_cluster_step_trace_carries_geplugs_computing_time_per_rank(cluster):
    conn = _out_db(cluster, "all")
    rows = conn.execute("SELECT `index`, computing, free FROM ClusterStepTraceTime "
                        "WHERE type = 'rank'").fetchall()
    got = {int(r[0]): (r[1], r[2]) for r in rows}
    assert sorted(got) == [0, 1]
    for rank in (0, 1):
        assert got[rank][0] == pytest.approx(_compute_ns(cluster, rank) / 1000, abs=1e-3)
        assert got[rank][1] > 0  # the host gaps between steps


def test_text_route_cluster_step_trace_time_csv_carries_computing_and_free(cluster):
    (path,) = glob.glob(str(cluster["root"] / "out" / "text_all" / "**" /
                            "cluster_step_trace_time.csv"), recursive=True)
    with open(path, newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["Type"] == "rank"]
    got = {int(r["Index"]): r for r in rows}
    assert sorted(got) == [0, 1]
    for rank in (0, 1):
        assert float(got[rank]["Computing"]) == pytest.approx(
            _compute_ns(cluster, rank) / 1000, abs=1e-2)
        assert float(got[rank]["Free"]) > 0
        assert float(got[rank]["Communication(Not Overlapped)"]) == 0


def test_compute_op_sum_counts_and_durations_are_geplugs(cluster):
    conn = _out_db(cluster, "compute_op_sum")
    got = {r[0]: (r[1], r[2]) for r in conn.execute(
        "SELECT OpType, Count, SumNs FROM ComputeOpAllRankStats")}
    expect: dict[str, list[int]] = {}
    for rank in (0, 1):
        for op_type, n, total in _geplug_db(cluster, rank).execute(
                "SELECT s.value, COUNT(*), SUM(t.endNs - t.startNs) FROM COMPUTE_TASK_INFO c "
                "JOIN TASK t ON t.globalTaskId = c.globalTaskId JOIN STRING_IDS s ON "
                "s.id = c.opType GROUP BY s.value"):
            e = expect.setdefault(op_type, [0, 0])
            e[0] += n
            e[1] += total
    assert got and set(got) == set(expect)
    for op_type, (n, total) in expect.items():
        assert got[op_type][0] == n and got[op_type][1] == pytest.approx(total)
    assert got["Conv2D"][0] == 2 * 2 * STEPS  # two convolutions per step, on two ranks


def test_cann_api_sum_counts_one_launch_per_kernel(cluster):
    conn = _out_db(cluster, "cann_api_sum")
    launches = conn.execute("SELECT totalCount FROM CannApiSum WHERE name = 'launch'").fetchone()
    # every task but the host<->device copies (MEMCPY_ASYNC: no kernel launch)
    tasks = sum(_geplug_db(cluster, r).execute(
        "SELECT COUNT(*) FROM TASK WHERE taskType NOT IN "
        "(SELECT id FROM STRING_IDS WHERE value = 'MEMCPY_ASYNC')").fetchone()[0]
        for r in (0, 1))
    assert launches == (tasks,)


def test_free_analysis_finds_the_gaps_between_steps(cluster):
    conn = _out_db(cluster, "free_analysis")
    ranks = {r[0] for r in conn.execute("SELECT rankId FROM FreeAnalysis")}
    assert ranks == {0, 1}


@pytest.mark.parametrize("mode", ["hccl_sum", "communication_time_sum",
                                  "communication_matrix_sum", "cluster_time_summary"])
def test_communication_analyses_report_that_there_is_no_communication(cluster, mode):
    log = _log(cluster, mode).lower()
    assert "no stats data" in log or "no communication" in log or "is none" in log \
        or "no data" in log, log[-2000:]


def test_advisor_shows_full_shapes_and_geplugs_op_durations(cluster):
    (xlsx,) = glob.glob(str(cluster["root"] / "out" / "advisor" / "**" / "*.xlsx"),
                        recursive=True)
    with zipfile.ZipFile(xlsx) as z:
        strings = z.read("xl/sharedStrings.xml").decode()
    # pool1's input, 1x32x64x64 held in NC1HWC0 (two C0 blocks of 16), not cut by one
    # char at each end
    assert "shape: 1,2,64,64,16 " in strings
    assert '"1,2,64,64,16"' in strings
    # the advisor's core-count check lists the tasks whose block dim is not a multiple of
    # the AI cores (AI_CORE) or vector cores (AI_VECTOR_CORE): the longest such task as
    # geplug recorded it (name, shapes and block dim all come from the device model: fusion
    # names, the multi-core split), so it is looked up, not assumed
    compute = require_product("atlas_a2").compute
    conn = _geplug_db(cluster, 0)
    name, shapes, dur = conn.execute(
        "SELECT n.value, i.value, t.endNs - t.startNs FROM COMPUTE_TASK_INFO c JOIN TASK t ON "
        "t.globalTaskId = c.globalTaskId JOIN STRING_IDS n ON n.id = c.name JOIN STRING_IDS i "
        "ON i.id = c.inputShapes JOIN STRING_IDS y ON y.id = c.taskType WHERE "
        "(y.value = 'AI_CORE' AND c.blockNum % ? != 0) OR "
        "(y.value = 'AI_VECTOR_CORE' AND c.blockNum % ? != 0) "
        "ORDER BY t.endNs - t.startNs DESC LIMIT 1",
        (compute.ai_cores, compute.vector_cores)).fetchone()
    assert f"<t>{name}</t>" in strings
    assert f"<t>{shapes}</t>" in strings  # the quoted cell, whole
    assert f"<t>{dur / 1000:.3f}</t>" in strings


FRAMEWORK_TABLES = {"PYTORCH_CALLCHAINS", "MEMORY_RECORD", "OP_MEMORY", "GC_RECORD",
                    "FRAMEWORK_API"}
"""Tables msprof-analyze reads only from torch_npu's framework database
(``ascend_pytorch_profiler_{rank}.db``), which msprof's own database never holds."""


def _tables_msprof_analyze_reads() -> set[str]:
    """Every upper-case table name after FROM / JOIN in msprof-analyze's installed source,
    plus the tables its DatabaseService and existence checks name."""
    import re

    import msprof_analyze

    root = Path(msprof_analyze.__file__).parent
    found: set[str] = set()
    pattern = re.compile(r"\b(?:FROM|JOIN)\s+([A-Z][A-Z_]{2,})\b")
    for path in root.rglob("*.py"):
        if "test" in path.parts:
            continue
        found.update(pattern.findall(path.read_text(errors="replace")))
    from msprof_analyze.prof_common.database_service import DatabaseService

    found.update(t for t in DatabaseService.TABLE_TS_DICT if t.isupper())
    return found


def test_geplugs_database_has_every_msprof_table_msprof_analyze_reads(cluster):
    reads = _tables_msprof_analyze_reads()
    assert {"TASK", "COMPUTE_TASK_INFO", "STRING_IDS", "CANN_API"} <= reads  # the scan works
    ours = {r[0] for r in _geplug_db(cluster, 0).execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'")}
    # sampled system data (ACC_PMU, NIC, ROCE, LLC, HBM, DDR, HCCS, PCIE, SAMPLE_PMU_TIMELINE)
    # only exists when its sampler ran; DatabaseService skips an absent table
    sampled = {"ACC_PMU", "NIC", "LLC", "SAMPLE_PMU_TIMELINE", "HBM", "DDR", "HCCS", "PCIE"}
    # nsys's SQLite export (calibrate_npu_gpu's GPU baseline) and a CTE name of mstx2commop
    other = {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS",
             "MSTX_COMMUNICATION_DATA"}
    missing = reads - ours - FRAMEWORK_TABLES - sampled - other
    assert not missing, f"msprof-analyze reads {sorted(missing)}, which geplug does not write"
