"""The backend conformance suite: what every backend must do, on every installed product.

Run it for an installed backend with ``pytest -p geplug.testing
--geplug-backend-conformance=NAME`` (NAME is the backend's plugin name, e.g. ``simulator``),
or import it into a test module of the backend's own package::

    from geplug.testing.backend_conformance import *  # noqa: F403

    GEPLUG_BACKEND_CONFORMANCE = "mybackend"

Each test takes the ``geplug_backend_case`` fixture: ``(backend name, product name)`` over the
selected installed products. Models are the backend's own :meth:`Runtime.sample_models`; each
test opens a device with :func:`geplug.open_device` (``backend=NAME``, strict) in a fresh
directory and checks the contract of :mod:`geplug.backend`: the members, a decision per op,
events in order with their step numbers, dump and profiling files complete after shutdown,
and clear errors (never a traceback of the backend's library) for bad inputs.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from geplug.backend import (
    COMPILED_MEMBERS,
    RUNTIME_MEMBERS,
    SampleModel,
    TensorSpec,
    missing_members,
)
from geplug.errors import ConfigWarning, GeplugError
from geplug.hookspecs import hookimpl
from geplug.precision import OpDecision
from geplug.precision.chains import AI_CORE, AI_CPU

pytest_plugins = ["geplug.testing"]
"""A test module importing this suite turns on geplug's pytest plugin (its fixtures)."""

__all__ = [
    "geplug_backend_workdir",
    "pytest_plugins",
    "test_bad_inputs_are_clear_errors",
    "test_compiled_models_fulfil_the_contract",
    "test_dump_and_profiling_files_are_complete_after_shutdown",
    "test_events_come_in_order_with_their_step_numbers",
    "test_kernel_meta_files_exist",
    "test_run_returns_the_declared_outputs",
    "test_runtime_fulfils_the_contract",
]


class _Recorder:
    """A plugin recording every dump and profiling event in arrival order."""

    GEPLUG_PLUGIN_API = 1

    def __init__(self) -> None:
        self.events: list[Any] = []

    @hookimpl
    def geplug_dump(self, event: Any) -> None:
        self.events.append(event)

    @hookimpl
    def geplug_profile(self, event: Any) -> None:
        self.events.append(event)


def _open(case: tuple[str, str], config: dict[str, Any] | None = None,
          recorder: _Recorder | None = None) -> Any:
    import geplug
    from geplug.plugin import PluginManager

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        manager = PluginManager().load()
    if recorder is not None:
        manager.register(recorder, "backend-conformance-recorder", distribution="geplug",
                         version="", origin="registered")
    backend, product = case
    return geplug.open_device(product=product, config=config or {}, backend=backend,
                              manager=manager)


@pytest.fixture
def geplug_backend_workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh working directory for one conformance test (files the config writes stay)."""
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def _samples(system: Any) -> list[SampleModel]:
    samples = list(system.runtime.sample_models())
    assert samples, f"backend {system.backend!r}: sample_models() returned no model"
    return samples


def test_runtime_fulfils_the_contract(geplug_backend_case: tuple[str, str],
                                      geplug_backend_workdir: Path) -> None:
    with _open(geplug_backend_case) as system:
        assert missing_members(system.runtime, RUNTIME_MEMBERS) == []
        assert system.runtime.name == geplug_backend_case[0] == system.backend
        assert all(isinstance(s, SampleModel) for s in _samples(system))


def test_compiled_models_fulfil_the_contract(geplug_backend_case: tuple[str, str],
                                             geplug_backend_workdir: Path) -> None:
    with _open(geplug_backend_case) as system:
        for sample in _samples(system):
            compiled = system.compile(sample.model)
            assert missing_members(compiled, COMPILED_MEMBERS) == [], sample.name
            decisions = list(compiled.decisions)
            assert decisions and all(isinstance(d, OpDecision) for d in decisions)
            nodes = [d.node for d in decisions]
            assert len(set(nodes)) == len(nodes), f"{sample.name}: one decision per op"
            product = system.product
            for d in decisions:
                assert d.engine in (AI_CORE, AI_CPU), (d.node, d.engine)
                assert d.reason, f"{sample.name}: {d.node} has no reason"
                entry = product.ops.get(d.op_type)
                if entry is not None and d.dtype:
                    allowed = entry.aicore_dtypes if d.engine == "AI_CORE" else entry.aicpu_dtypes
                    assert not allowed or d.dtype in allowed, (d.node, d.engine, d.dtype)
            # a fused task (issue 10) carries the time of the nodes it runs; a task GE
            # inserts (a format conversion, TransData) has a time of its own
            device = getattr(compiled, "device", None)
            task_of = device.node_task if device is not None else {}
            inserted = {c.name for c in getattr(device, "conversions", ())}
            assert set(compiled.op_times) == {task_of.get(n, n) for n in nodes} | inserted
            assert all(t > 0 and math.isfinite(t) for t in compiled.op_times.values())
            assert compiled.simulated_time_us > 0 and math.isfinite(compiled.simulated_time_us)
            assert list(compiled.inputs) == list(sample.inputs)
            assert all(isinstance(s, TensorSpec) for s in compiled.inputs.values())
            assert isinstance(compiled.model_id, int) and compiled.name


def test_run_returns_the_declared_outputs(geplug_backend_case: tuple[str, str],
                                          geplug_backend_workdir: Path) -> None:
    with _open(geplug_backend_case) as system:
        for sample in _samples(system):
            compiled = system.compile(sample.model)
            outputs = compiled.run(dict(sample.inputs), step=0)
            assert list(outputs) == list(compiled.outputs)
            assert all(isinstance(v, np.ndarray) for v in outputs.values())


def _dump_steps(case: tuple[str, str], steps: str) -> dict[str, str]:
    """``{"dump_step": steps}`` where the product trains (dump_step applies to training
    only), else ``{}`` (every step is dumped)."""
    from geplug.testing.installed import installed_registry

    return {"dump_step": steps} if installed_registry().get(case[1]).runtime.training else {}


def _profiling(out: Path) -> dict[str, Any]:
    options = {"output": str(out), "task_time": "on"}
    return {"profiling_mode": True, "profiling_options": json.dumps(options)}


def test_events_come_in_order_with_their_step_numbers(geplug_backend_case: tuple[str, str],
                                                      geplug_backend_workdir: Path) -> None:
    recorder = _Recorder()
    (geplug_backend_workdir / "dump").mkdir()
    config = {**_profiling(geplug_backend_workdir / "prof"), "enable_dump": True,
              "dump_path": str(geplug_backend_workdir / "dump"),
              **_dump_steps(geplug_backend_case, "0|2")}
    with _open(geplug_backend_case, config, recorder) as system:
        sample = _samples(system)[0]
        compiled = system.compile(sample.model)
        for step in range(3):
            compiled.run(dict(sample.inputs), step=step)
    kinds = [e.kind for e in recorder.events]
    assert "graph" in kinds and "task" in kinds and "data" in kinds, sorted(set(kinds))
    assert kinds.index("graph") < kinds.index("task"), "the graph event comes first"
    steps = [e.run.step for e in recorder.events if e.kind == "task"]
    assert steps == sorted(steps) and set(steps) == {0, 1, 2}
    device = getattr(compiled, "device", None)  # fused tasks run several ops (issue 10)
    task_of = device.node_task if device is not None else {}
    ops = {task_of.get(d.node, d.node) for d in compiled.decisions}
    for step in range(3):
        tasks = [e.op.name for e in recorder.events if e.kind == "task" and e.run.step == step]
        assert set(tasks) <= ops and len(tasks) >= len(ops), (step, tasks)
    dumped = {e.run.step for e in recorder.events if e.kind == "data"}
    expected = {0, 2} if "dump_step" in _dump_steps(geplug_backend_case, "0|2") else {0, 1, 2}
    assert dumped == expected, "data dump events only on the dump steps"


def test_dump_and_profiling_files_are_complete_after_shutdown(
        geplug_backend_case: tuple[str, str], geplug_backend_workdir: Path) -> None:
    from geplug.dump.reader import iter_dump_tree
    from geplug.profiling.reader import find_prof_dirs, summarize

    (geplug_backend_workdir / "dump").mkdir()
    config = {**_profiling(geplug_backend_workdir / "prof"), "enable_dump": True,
              "dump_path": str(geplug_backend_workdir / "dump"),
              **_dump_steps(geplug_backend_case, "0")}
    with _open(geplug_backend_case, config) as system:
        sample = _samples(system)[0]
        compiled = system.compile(sample.model)
        for step in range(2):
            compiled.run(dict(sample.inputs), step=step)
    entries = list(iter_dump_tree(geplug_backend_workdir / "dump"))
    assert entries, "no dump file written"
    for entry in entries:
        entry.read()  # a truncated or partial file raises DumpError
    prof_dirs = find_prof_dirs(str(geplug_backend_workdir / "prof"))
    assert prof_dirs, "no PROF_* directory written"
    assert summarize(prof_dirs[0])["tasks"] > 0, "profiling summary counts no task"
    leftovers = [p for p in Path(geplug_backend_workdir).rglob("*") if p.is_file()
                 and (p.name.endswith((".tmp", ".part"))
                      or (p.stat().st_size == 0 and not p.name.endswith(".lock")))]
    assert leftovers == [], "temporary or empty files left after shutdown"


def test_kernel_meta_files_exist(geplug_backend_case: tuple[str, str],
                                 geplug_backend_workdir: Path) -> None:
    with warnings.catch_warnings():  # op_debug_level is deprecated on the TF front end
        warnings.filterwarnings("ignore", "op_debug_level", ConfigWarning)
        system = _open(geplug_backend_case, {"op_debug_level": 1})
    with system:
        compiled = system.compile(_samples(system)[0].model)
        files = list(compiled.kernel_meta_files)
        expected = bool(system.product.debug.kernel_meta.get("1"))
    assert bool(files) == expected, files
    assert all(os.path.isfile(f) and os.path.getsize(f) > 0 for f in files)


def test_bad_inputs_are_clear_errors(geplug_backend_case: tuple[str, str],
                                     geplug_backend_workdir: Path) -> None:
    with _open(geplug_backend_case) as system:
        sample = _samples(system)[0]
        compiled = system.compile(sample.model)
        first = next(iter(sample.inputs))
        with pytest.raises(GeplugError, match=repr(first).strip("'")):
            compiled.run({}, step=0)
        with pytest.raises(GeplugError, match="step"):
            compiled.run(dict(sample.inputs), step=-1)
        wrong = {k: np.zeros((1,) * (v.ndim + 1), v.dtype) for k, v in sample.inputs.items()}
        with pytest.raises(GeplugError):
            compiled.run(wrong, step=0)
        with pytest.raises(GeplugError, match="no_such_option"):
            system.compile(sample.model, no_such_option=1)
