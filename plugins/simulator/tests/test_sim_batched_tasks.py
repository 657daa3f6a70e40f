"""One batched StepTasksEvent per step; per-task events only for third-party plugins."""

from __future__ import annotations

import glob
import json
import os
import sqlite3
from contextlib import closing

import numpy as np
from sim_helpers import any_product, make_system, overflow_model

from geplug.events import StepTasksEvent, TaskEvent

X = {"x": np.ones((1, 4), np.float32)}


def test_each_step_sends_one_batched_record_of_the_static_task_table(recorder):
    manager, rec = recorder
    compiled = make_system(any_product(), manager, profiling_mode=True).compile(overflow_model())
    compiled.run(X)
    compiled.run(X)
    batches = [e for e in rec.profiles if isinstance(e, StepTasksEvent)]
    assert [b.run.step for b in batches] == [0, 1]
    assert batches[0].table is batches[1].table  # built once per compiled shape
    table = batches[0].table
    assert [t.op.name for t in table.tasks] == ["big", "small"]
    assert table.offset_ns.tolist() == [0, int(table.duration_ns[0])]  # back to back
    assert batches[1].start_ns >= batches[0].start_ns + table.span_ns


def test_a_third_party_plugin_still_gets_each_task_marked_in_batch(recorder):
    manager, rec = recorder
    compiled = make_system(any_product(), manager, profiling_mode=True).compile(overflow_model())
    compiled.run(X)
    (batch,) = [e for e in rec.profiles if isinstance(e, StepTasksEvent)]
    tasks = [e for e in rec.profiles if isinstance(e, TaskEvent)]
    assert [t.op.name for t in tasks] == ["big", "small"] and all(t.in_batch for t in tasks)
    assert [round(t.start_us * 1000) for t in tasks] == \
        (batch.start_ns + batch.table.offset_ns).tolist()


def test_without_third_party_profile_plugins_no_per_task_event_is_built(tmp_path, monkeypatch):
    import geplug
    from geplug.events import expand_tasks

    calls = []

    def counting(event):  # type: ignore[no-untyped-def]
        calls.append(event)
        return iter(())

    import geplug_simulator.emit as emit_mod

    monkeypatch.setattr(emit_mod, "expand_tasks", counting)
    cfg = {"profiling_mode": True,
           "profiling_options": json.dumps({"output": str(tmp_path), "task_time": "l1"})}
    # open_device (the ACL path) serves every product; initialize_system refuses the inference
    # products (atlas_infer, atlas_200i_a2), which may be the only ones installed
    with geplug.open_device(any_product().name, cfg) as system:
        assert not system.manager.has_external("geplug_profile")
        model = system.compile(overflow_model())
        for _ in range(3):
            model.run(X)
    assert calls == [] and expand_tasks is not None
    # ... and the built-in collectors expanded the batches: 2 tasks x 3 steps in the database
    # (besides the host<->device copies, MEMCPY_ASYNC tasks without compute info)
    (db,) = glob.glob(os.path.join(str(tmp_path), "PROF_*", "msprof_*.db"))
    with closing(sqlite3.connect(db)) as con:
        assert con.execute("SELECT COUNT(*) FROM TASK t JOIN COMPUTE_TASK_INFO c "
                           "ON c.globalTaskId = t.globalTaskId").fetchone() == (6,)


def _profiled_run(tmp_path, manager, steps: int = 3):  # type: ignore[no-untyped-def]
    """Rows of the summaries a profiled run writes (times dropped: host time varies)."""
    import csv

    import geplug

    product = any_product()
    # the iteration trace exists only where the product trains (the inference series refuse
    # training_trace); there the step_trace rows are compared too
    training = product.supports("runtime.training")
    options = {"output": str(tmp_path), "task_time": "l1", "runtime_api": "on",
               **({"training_trace": "on"} if training else {})}
    cfg = {"profiling_mode": True, "profiling_options": json.dumps(options)}
    with geplug.open_device(product.name, cfg, manager=manager) as system:
        model = system.compile(overflow_model())
        for _ in range(steps):
            model.run(X)
    out: dict[str, object] = {}
    summaries = [("op_summary", ("Op Name", "Task Duration(us)")),
                 ("api_statistic", ("API Name", "Count"))]
    if training:
        summaries.append(("step_trace", ("Iteration ID", "FP to BP Time(us)")))
    for stem, keep in summaries:
        (path,) = glob.glob(os.path.join(str(tmp_path), "PROF_*", "mindstudio_profiler_output",
                                         f"{stem}_*.csv"))
        with open(path, newline="") as fh:
            out[stem] = sorted(tuple(r[k] for k in keep) for r in csv.DictReader(fh))
    (db,) = glob.glob(os.path.join(str(tmp_path), "PROF_*", "msprof_*.db"))
    with closing(sqlite3.connect(db)) as con:  # closed: an open one warns on Python 3.13
        out["steps"] = con.execute("SELECT COUNT(*) FROM STEP_TIME").fetchone()
    return out


def test_the_whole_step_record_gives_the_same_profile_as_separate_events(tmp_path):
    from geplug.hookspecs import hookimpl
    from geplug.plugin import PluginManager

    class ThirdParty:
        GEPLUG_PLUGIN_API = 1

        @hookimpl
        def geplug_profile(self, event):  # type: ignore[no-untyped-def]
            return None

    plain = PluginManager().load()
    assert not plain.has_external("geplug_profile")  # the simulator sends one record a step
    manager = PluginManager().load()
    manager.register(ThirdParty(), "third_party")
    assert manager.has_external("geplug_profile")  # a third party: the separate events
    whole = _profiled_run(tmp_path / "whole", plain)
    separate = _profiled_run(tmp_path / "separate", manager)
    assert whole == separate
    assert whole["steps"] == (3,) and len(whole["op_summary"]) == 6  # type: ignore[arg-type]
