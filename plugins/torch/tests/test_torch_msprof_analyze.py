"""msprof-analyze 26.2.0 (the public analyser) on geplug_torch's ``*_ascend_pt`` directories.

The same GPT trains on atlas_train (base) and atlas_a2 (comparison) under the profiler with
the text and database exports; ``msprof-analyze compare`` must report per-op differences
equal to the kernel durations geplug wrote, and ``advisor all`` must run its schedule and
computation analyses with geplug's numbers. Runs in the torch tox env (which installs
msprof-analyze==26.2.0); skipped where msprof-analyze is absent.
"""

from __future__ import annotations

import csv
import glob
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
import zipfile
from collections import defaultdict

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("msprof_analyze", reason="the torch tox env installs msprof-analyze")

import geplug_torch  # noqa: E402
from geplug_torch import profiler as P  # noqa: E402
from test_torch_hccl_ddp import msprof_analyze_tool  # noqa: E402
from torch_helpers import GPT, train  # noqa: E402

pytestmark = pytest.mark.geplug_requires_products("atlas_a2", "atlas_train")

_MODELS: dict = {}
"""Collection root -> the compiled model (its memory plans)."""
_NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main",
       "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships"}


def _column(ref: str) -> int:
    n = 0
    for ch in re.match(r"[A-Z]+", ref).group(0):
        n = n * 26 + ord(ch) - 64
    return n - 1


def _xlsx(path):
    """Every sheet of an .xlsx as rows of strings (the analysers write xlsx; no openpyxl)."""
    t = f"{{{_NS['m']}}}t"
    with zipfile.ZipFile(path) as z:
        shared = ["".join(x.text or "" for x in si.iter(t)) for si in
                  ET.fromstring(z.read("xl/sharedStrings.xml")).findall("m:si", _NS)]
        rels = {r.get("Id"): r.get("Target")
                for r in ET.fromstring(z.read("xl/_rels/workbook.xml.rels"))}
        sheets = {}
        for s in ET.fromstring(z.read("xl/workbook.xml")).find("m:sheets", _NS):
            target = rels[s.get(f"{{{_NS['r']}}}id")].lstrip("/").removeprefix("xl/")
            rows = []
            for row in ET.fromstring(z.read("xl/" + target)).iter(f"{{{_NS['m']}}}row"):
                cells = {}
                for c in row.findall("m:c", _NS):
                    v = c.find("m:v", _NS)
                    text = "" if v is None else (shared[int(v.text)] if c.get("t") == "s"
                                                 else v.text or "")
                    cells[_column(c.get("r"))] = text
                rows.append([cells.get(i, "") for i in range(max(cells, default=-1) + 1)])
            sheets[s.get("name")] = rows
    return sheets



def _run(args, out):
    os.makedirs(out, exist_ok=True)
    # cwd: advisor also writes operator_tuning_file_*.cfg into the working directory
    proc = subprocess.run([msprof_analyze_tool(), *args, "-o", str(out)], capture_output=True,
                          text=True, timeout=600, check=False, cwd=str(out))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (xlsx,) = glob.glob(os.path.join(str(out), "**", "*.xlsx"), recursive=True)
    return _xlsx(xlsx), proc.stdout + proc.stderr


def _collect(product, out, *, memory=False):
    torch._dynamo.reset()
    torch.manual_seed(0)
    be = geplug_torch.backend(product=product,
                              config={"precision_mode": "must_keep_origin_dtype"})
    compiled = torch.compile(GPT(layers=1), backend=be)
    exp = P._ExperimentalConfig(profiler_level=P.ProfilerLevel.Level1,
                                export_type=[P.ExportType.Text, P.ExportType.Db])
    with P.profile(activities=[P.ProfilerActivity.CPU, P.ProfilerActivity.NPU],
                   schedule=P.schedule(wait=1, warmup=0, active=1, repeat=1),
                   on_trace_ready=P.tensorboard_trace_handler(str(out), "worker0"),
                   record_shapes=True, profile_memory=memory,
                   experimental_config=exp) as prof:
        train(compiled, 3, prof=prof)
    be.shutdown()
    (root,) = prof.outputs
    (model,) = be.models
    _MODELS[root] = model
    return root


def _kernels(root):
    path = os.path.join(root, "ASCEND_PROFILER_OUTPUT", "kernel_details.csv")
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("msprof_analyze")
    base = _collect("atlas_train", tmp / "base")
    comparison = _collect("atlas_a2", tmp / "comparison", memory=True)
    text = {}
    for name, root in (("base", base), ("comparison", comparison)):
        text[name] = str(tmp / "text" / name / os.path.basename(root))
        shutil.copytree(root, text[name], ignore=shutil.ignore_patterns("*.db"))
    return {"tmp": tmp, "base": base, "comparison": comparison, "text": text}


@pytest.fixture(scope="module")
def compared(compared_db):
    return compared_db[0]


@pytest.fixture(scope="module")
def compared_db(runs):
    return _run(["compare", "-d", runs["comparison"], "-bp", runs["base"]],
                runs["tmp"] / "compare_db")


@pytest.fixture(scope="module")
def compared_text(runs):
    return _run(["compare", "-d", runs["text"]["comparison"], "-bp", runs["text"]["base"]],
                runs["tmp"] / "compare_text")


def _operator_rows(sheets):
    rows = sheets["OperatorCompare"]
    header = rows[1]
    return header, [r for r in rows[2:] if len(r) >= len(header) - 2]


def _kernel_durations(detail):
    """``name, id, core, [input shapes: ...] [duration: d]`` lines -> {kernel: duration}."""
    found = re.findall(r"^(.*?), \d+, \w+, \[input shapes: [^\]]*\] \[duration: ([\d.]+)\]",
                       detail, flags=re.M)
    return {name: float(d) for name, d in found}


def _check_per_op(sheets, runs):
    header, rows = _operator_rows(sheets)
    base = {k["Name"]: float(k["Duration(us)"]) for k in _kernels(runs["base"])}
    comp = {k["Name"]: float(k["Duration(us)"]) for k in _kernels(runs["comparison"])}
    dur = [i for i, h in enumerate(header) if h == "Device Duration(us)"]
    det = [i for i, h in enumerate(header) if h == "Kernel Details"]
    diff = header.index("Diff Duration(us)")
    checked = differing = 0
    for r in rows:
        b, c = _kernel_durations(r[det[0]]), _kernel_durations(r[det[1]])
        if len(b) != 1 or len(c) != 1:
            continue
        ((bn, bd),) = b.items()
        ((cn, cd),) = c.items()
        assert bd == pytest.approx(base[bn], abs=1e-3) and cd == pytest.approx(comp[cn],
                                                                               abs=1e-3)
        assert float(r[dur[0]]) == pytest.approx(bd, abs=1e-3)
        assert float(r[dur[1]]) == pytest.approx(cd, abs=1e-3)
        assert float(r[diff]) == pytest.approx(cd - bd, abs=0.011)
        checked += 1
        differing += abs(cd - bd) > 0.01
    assert checked >= 20 and differing >= 10, (checked, differing)


def test_compare_reports_geplugs_per_op_differences_from_the_database(compared, runs):
    _check_per_op(compared, runs)


def test_compare_reports_geplugs_per_op_differences_from_the_text_export(compared_text, runs):
    _check_per_op(compared_text[0], runs)


def _mem_usage(log):
    """The two NPU rows' "Mem Usage" cells of compare's printed overall table."""
    lines = [ln for ln in log.splitlines() if ln.startswith("|")]
    header = next(ln for ln in lines if "Mem Usage" in ln)
    col = [c.strip() for c in header.split("|")].index("Mem Usage")
    return [[c.strip() for c in ln.split("|")][col] for ln in lines
            if ln.startswith("| NPU")]


def _plan_peak(model):
    """Weights plus the largest activation peak of the model's graphs (bytes)."""
    weights = {}
    for plan in model.memory_plans:
        weights.update(dict(plan.resident))
    return sum(weights.values()) + max(p.activation_peak_bytes for p in model.memory_plans)


def test_compare_mem_usage_from_text_is_geplugs_device_memory(compared_text, runs):
    model = _MODELS[runs["comparison"]]
    held = _plan_peak(model) + max(p.workspace_bytes for p in model.memory_plans)
    # base: no profile_memory (no memory_record.csv); comparison: APP rows = what is held
    assert _mem_usage(compared_text[1]) == ["0.00G", f"{held / 2**30:.2f}G"]



def test_without_profile_memory_no_memory_files_or_tables(runs):
    import sqlite3

    root = runs["base"]
    out = set(os.listdir(os.path.join(root, "ASCEND_PROFILER_OUTPUT")))
    assert not {"operator_memory.csv", "memory_record.csv", "npu_module_mem.csv"} & out
    conn = sqlite3.connect(os.path.join(root, "ASCEND_PROFILER_OUTPUT",
                                        "ascend_pytorch_profiler_0.db"))
    try:
        tables = {t for (t,) in conn.execute("SELECT name FROM sqlite_master")}
        rows = conn.execute("SELECT COUNT(*) FROM NPU_OP_MEM").fetchone()[0]
    finally:
        conn.close()
    assert not {"OP_MEMORY", "MEMORY_RECORD"} & tables and rows == 0

def test_compare_kernel_statistics_are_geplugs_kernel_totals(compared, runs):
    rows = compared["KernelCompare"]
    header = rows[1]
    total = [i for i, h in enumerate(header) if h == "Total Duration(us)"]
    calls = [i for i, h in enumerate(header) if h == "Calls"]
    want = []
    for side in ("base", "comparison"):
        sums = defaultdict(float)
        counts = defaultdict(int)
        for k in _kernels(runs[side]):
            key = (k["Type"], k["Input Shapes"])
            sums[key] += float(k["Duration(us)"])
            counts[key] += 1
        want.append((sums, counts))
    checked = 0
    for r in rows[2:]:
        key = (r[1], r[2])
        for side, (sums, counts) in enumerate(want):
            if r[calls[side]] not in ("", "0"):
                assert int(float(r[calls[side]])) == counts[key], (key, side)
                assert float(r[total[side]]) == pytest.approx(sums[key], abs=0.01), (key, side)
                checked += 1
    assert checked >= 20


@pytest.fixture(scope="module")
def advised(runs):
    return _run(["advisor", "all", "-d", runs["comparison"]], runs["tmp"] / "advisor")


def test_advisor_computation_analysis_lists_geplugs_kernels_and_durations(advised, runs):
    sheets, _ = advised
    rows = sheets["AICore核数"]  # the computation analysis: AI Core usage per op
    header = rows[0]
    name, duration = header.index("op_name"), header.index("task_duration")
    kernels = {k["Name"]: float(k["Duration(us)"]) for k in _kernels(runs["comparison"])}
    listed = [r for r in rows[1:] if r and r[name]]
    assert len(listed) >= 20
    for r in listed:
        assert float(r[duration]) == pytest.approx(kernels[r[name]], abs=1e-3), r[name]


def test_advisor_overall_computing_time_is_geplugs_step_computing_time(advised, runs):
    sheets, _ = advised
    rows = {r[0].strip(): r for r in sheets["整网耗时分析"] if r}
    path = os.path.join(runs["comparison"], "ASCEND_PROFILER_OUTPUT", "step_trace_time.csv")
    with open(path, encoding="utf-8", newline="") as fh:
        computing = sum(float(r["Computing"]) for r in csv.DictReader(fh))
    assert float(rows["计算时长"][1]) == pytest.approx(computing / 1000, abs=0.001)


def test_advisor_schedule_analysis_reads_geplugs_framework_ops(advised):
    sheets, log = advised
    # the affinity-API scan (schedule) matched aten::gelu of geplug's torch-op track
    rows = sheets["亲和API接口"]
    assert any("fast_gelu" in cell for r in rows for cell in r), rows
    assert "Scanning timeline for affinity apis" in log


class _SdpaLM(torch.nn.Module):
    """An embedding, one causal scaled_dot_product_attention block and a vocabulary head:
    FlashAttentionScore forward and FlashAttentionScoreGrad backward kernels."""

    def __init__(self, vocab: int = 64, dim: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.tok = torch.nn.Embedding(vocab, dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, idx, targets):
        x = self.tok(idx)
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2)
                   for z in self.qkv(x).split(c, dim=2))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        logits = self.head(x + y.transpose(1, 2).reshape(b, t, c))
        return torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]),
                                                 targets.view(-1))


def test_compare_counts_geplugs_fused_attention_as_flash_attention(tmp_path):
    """``compare``'s overall metrics put FlashAttentionScore(Grad) kernels in its "Flash
    Attention (Forward/Backward)" rows (its kernel_details op-type rule): they must carry
    geplug's kernel durations and counts."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    be = geplug_torch.backend(product="atlas_a2",
                              config={"precision_mode": "must_keep_origin_dtype"})
    compiled = torch.compile(_SdpaLM(), backend=be)
    exp = P._ExperimentalConfig(profiler_level=P.ProfilerLevel.Level1,
                                export_type=[P.ExportType.Text])
    with P.profile(activities=[P.ProfilerActivity.CPU, P.ProfilerActivity.NPU],
                   schedule=P.schedule(wait=1, warmup=0, active=1, repeat=1),
                   on_trace_ready=P.tensorboard_trace_handler(str(tmp_path / "prof"), "w0"),
                   record_shapes=True, experimental_config=exp) as prof:
        train(compiled, 3, prof=prof)
    be.shutdown()
    (root,) = prof.outputs
    kernels = _kernels(root)
    want = {}
    for label, op_type in (("Forward", "FlashAttentionScore"),
                           ("Backward", "FlashAttentionScoreGrad")):
        durations = [float(k["Duration(us)"]) for k in kernels if k["Type"] == op_type]
        assert durations, op_type
        want[label] = (sum(durations) / 1000, len(durations))
    sheets, _ = _run(["compare", "-d", root, "-bp", root], tmp_path / "compare")
    rows = {r[0].strip(): r for r in sheets["OverallMetrics"] if r and r[0]}
    for label, (ms, count) in want.items():
        row = rows[f"Flash Attention ({label})"]
        assert float(row[1]) == pytest.approx(ms, abs=1e-6), label
        assert int(float(row[3])) == count, label
