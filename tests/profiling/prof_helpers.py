"""Helpers for the profiling tests: a System built directly and driven with synthetic events.

Tests of behaviour every product shares run on :func:`card`, a small product declared here
(so they run in every tox env, the core-only one included); tests whose effect depends on a
product's declaration take the ``product`` fixture of ``geplug.testing`` (one run per installed
product, skipped where none is installed).
"""

from __future__ import annotations

import csv
import glob
import json
import os
import time
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from geplug.config.model import ProfilingOptions, SessionConfig
from geplug.config.resolve import resolve
from geplug.events import ApiCall, GraphEvent, OpRecord, RunInfo, StepEvent, TaskEvent
from geplug.plugin import PluginManager
from geplug.products import Product, build_product, read_declaration
from geplug.runtime.system import System
from geplug.testing.samples import minimal_toml

_CARD_PROFILING = """
[profiling]
aic_metrics = ["PipeUtilization", "Memory"]
aic_metrics_default = "PipeUtilization"
split_cores = false
l2 = "l2"
instr_profiling = "frequency"
instr_profiling_exclusions = ["aic_metrics"]
sys_io_targets = ["NIC"]
interconnect_targets = ["HCCS", "PCIe"]
host_sys = ["cpu", "mem", "disk", "network", "osrt"]
training_trace = true
[profiling.pmu_columns]
PipeUtilization = ["aicore_time(us)", "total_cycles", "mac_time(us)", "mac_ratio",
                   "vec_time(us)", "vec_ratio", "memory_bound", "cube_utilization(%)"]
Memory = ["aicore_time(us)", "total_cycles", "ub_read_bw(GB/s)", "main_mem_read_bw(GB/s)"]
[profiling.frequencies.sys_hardware_mem_freq]
min = 1
max = 100
default = 50
[profiling.frequencies.sys_io_sampling_freq]
min = 1
max = 100
default = 100
[profiling.frequencies.sys_interconnection_freq]
min = 1
max = 50
default = 50
[profiling.frequencies.dvpp_freq]
min = 1
max = 100
default = 50
[profiling.frequencies.host_sys_usage_freq]
min = 1
max = 50
default = 50
[profiling.frequencies.instr_profiling_freq]
min = 300
max = 30000
default = 1000

"""

OPS = (
    OpRecord(name="conv1", op_type="Conv2D", task_id=1, block_dim=24, dtype="float16"),
    OpRecord(name="relu1", op_type="Relu", task_id=2, block_dim=8, task_type="AI_VECTOR_CORE",
             dtype="float16"),
    OpRecord(name="allreduce1", op_type="HcomAllReduce", task_id=3,
             task_type="COMMUNICATION", collective=True),
    OpRecord(name="where1", op_type="Where", task_id=4, engine="AI_CPU", task_type="AI_CPU"),
    OpRecord(name="fc1", op_type="MatMulV2", task_id=5, block_dim=12, dtype="float16"),
)
CUBE = {"conv1": 1.0, "fc1": 0.9}
DUR = {"conv1": 120.0, "relu1": 30.0, "allreduce1": 50.0, "where1": 80.0, "fc1": 60.0}


_card: list[Product] = []


def card() -> Product:
    """A small test product ("prof_card", unprefixed PMU columns, every sampler declared)."""
    if not _card:
        import tempfile

        toml = minimal_toml("prof_card")
        start, end = toml.index("[profiling]"), toml.index("[debug]")
        toml = toml[:start] + _CARD_PROFILING.lstrip() + toml[end:]
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "capabilities.toml")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(toml)
            _card.append(build_product(read_declaration(path)))
    return _card[0]


@pytest.fixture
def manager() -> Iterator[PluginManager]:
    """A fresh plugin manager (built-ins and installed products)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield PluginManager().load()


def make_system(manager: PluginManager, out: Any, product: Product | None = None,
                **options: str) -> System:
    """A System of ``product`` (default: :func:`card`) with profiling on and ``options`` as
    profiling_options (output = ``out``), resolved by :func:`geplug.config.resolve` (with an
    empty environment) as every real system is."""
    prod = product if product is not None else card()
    opts = ProfilingOptions(output=str(out), **options)
    cfg = resolve(SessionConfig(profiling_mode=True, profiling_options=opts), prod, env={},
                  cwd=str(out))
    return System(product=prod, config=cfg, manager=manager)


def drive(system: System, steps: int = 3, *, gap_us: float = 1000.0, start: float | None = None,
          ops: tuple[OpRecord, ...] = OPS, api: bool = True) -> float:
    """Emit a graph and ``steps`` steps of tasks; returns the end time (µs)."""
    t = time.time() * 1e6 if start is None else start
    system.emit_profile(GraphEvent(run=RunInfo(system=system, model_name="net", model_id=1,
                                               step=-1), ops=ops))
    for step in range(steps):
        run = RunInfo(system=system, model_name="net", model_id=1, step=step)
        system.emit_profile(StepEvent(run=run, phase="begin", time_us=t))
        if api:
            system.emit_profile(ApiCall(run=run, name="aclrtMemcpy", start_us=t,
                                        duration_us=4.0 + step))
        t += 5.0
        for op in ops:
            d = DUR.get(op.name, 10.0)
            system.emit_profile(TaskEvent(
                run=run, op=op, start_us=t, duration_us=d, flops=2e9, bytes_moved=4e6,
                cube_fraction=CUBE.get(op.name, 0.0),
                input_shapes=[(128, 256), (256, 512)], input_dtypes=["float16", "float16"],
                input_formats=["ND", "ND"], output_shapes=[(128, 512)],
                output_dtypes=["float16"], output_formats=["ND"],
            ))
            t += d + 2.0
        system.emit_profile(StepEvent(run=run, phase="end", time_us=t))
        t += gap_us
    return t


def prof_dir(out: Any) -> str:
    """The one PROF_* directory under ``out``."""
    found = glob.glob(os.path.join(str(out), "PROF_*"))
    assert len(found) == 1, found
    return found[0]


def out_file(out: Any, stem: str, ext: str = "csv") -> str | None:
    """``mindstudio_profiler_output/{stem}_{ts14}.{ext}`` or None."""
    from geplug.profiling.reader import output_file

    return output_file(prof_dir(out), stem, ext)


def read_csv(out: Any, stem: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows of one output CSV."""
    path = out_file(out, stem)
    assert path is not None, f"no {stem} CSV"
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


def timeline(out: Any) -> list[dict[str, Any]]:
    """The parsed timeline array."""
    path = out_file(out, "msprof", "json")
    assert path is not None
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def run(manager: PluginManager, out: Any, product: Product | None = None, steps: int = 3,
        **options: str) -> System:
    """Make a system, drive it and shut it down."""
    system = make_system(manager, out, product, **options)
    drive(system, steps)
    system.shutdown()
    return system
