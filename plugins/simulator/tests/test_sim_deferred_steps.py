"""Deferred whole-step records (``System.defer_profile``): a profiled step costs a clock
reading and one queued record; the collectors get the steps in batches, in order with every
other event, before a reader looks and before shutdown."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from sim_helpers import any_product, overflow_model

import geplug
from geplug.events import StepBatchEvent, StepTasksEvent, TaskEvent
from geplug.hookspecs import hookimpl
from geplug.plugin import PluginManager
from geplug.profiling.plugin import session_for
from geplug.profiling.session import ProfilingSession

X = {"x": np.ones((1, 4), np.float32)}


def _open(tmp_path: Any, manager: PluginManager | None = None, **options: str) -> Any:
    cfg = {"profiling_mode": True,
           "profiling_options": json.dumps({"output": str(tmp_path), "task_time": "l0",
                                            **options})}
    # open_device serves every product (initialize_system refuses the inference series)
    return geplug.open_device(any_product().name, cfg, manager=manager)


def _seen(monkeypatch: Any) -> list[tuple[str, list[int]]]:
    """(kind, steps) of every event the built-in collectors handle, in order."""
    seen: list[tuple[str, list[int]]] = []
    handle = ProfilingSession.handle

    def spy(self: ProfilingSession, event: Any) -> None:
        steps = (event.steps.tolist() if isinstance(event, StepBatchEvent)
                 else [event.run.step] if hasattr(event, "run") else [])
        seen.append((event.kind, steps))
        handle(self, event)

    monkeypatch.setattr(ProfilingSession, "handle", spy)
    return seen


def test_steps_after_the_first_reach_the_collectors_in_batches_in_order(tmp_path, monkeypatch):
    seen = _seen(monkeypatch)
    with _open(tmp_path, msproftx="on") as system:
        model = system.compile(overflow_model())
        for _ in range(3):
            model.run(X)
        # the first step at once (the PROF_* directory appears with it), the others queued
        assert [k for k, _ in seen if k != "graph"] == ["step_tasks"]
        geplug.mstx.mark("between")  # another event: the queue goes first
        model.run(X)
        model.run(X)
        assert [e for e in seen if e[0] != "graph"] == [
            ("step_tasks", [0]), ("step_batch", [1, 2]), ("marker", [])]
    # shutdown dispatches what is left before the collectors finish
    assert [e for e in seen if e[0] != "graph"][-1] == ("step_batch", [3, 4])


def test_a_reader_of_the_session_sees_every_step_run_so_far(tmp_path):
    with _open(tmp_path) as system:
        model = system.compile(overflow_model())
        for _ in range(5):
            model.run(X)
        session = session_for(system)
        assert session is not None
        assert session.step_times.tolist()[0::3] == [1, 2, 3, 4, 5]


def test_no_more_than_the_bound_wait(tmp_path, monkeypatch):
    import geplug.runtime.system as system_mod

    monkeypatch.setattr(system_mod, "DEFER_MAX_STEPS", 4)
    seen = _seen(monkeypatch)
    with _open(tmp_path) as system:
        model = system.compile(overflow_model())
        for _ in range(10):
            model.run(X)
        batches = [steps for kind, steps in seen if kind == "step_batch"]
        assert batches == [[1, 2, 3, 4], [5, 6, 7, 8]]


def test_the_simulated_clock_is_the_same_deferred_or_not(tmp_path):
    """The deferred steps' times are those the per-step records would have had: the
    exported step times are back to back on the device clock either way."""
    with _open(tmp_path) as system:
        model = system.compile(overflow_model())
        emitter = model._emitter
        for _ in range(6):
            model.run(X)
        clock = emitter.clock_us
        session = session_for(system)
        ends = session.step_times.tolist()[2::3]
        assert ends[-1] == emitter.base_us * 1000 + round(clock * 1000)
        begins = session.step_times.tolist()[1::3]
        assert all(b >= e for b, e in zip(begins[1:], ends[:-1], strict=True))


def test_a_third_party_plugin_that_arrives_later_gets_whole_step_records(tmp_path):
    got: list[Any] = []

    class Late:
        GEPLUG_PLUGIN_API = 1

        @hookimpl
        def geplug_profile(self, event: Any) -> None:
            got.append(event)

    manager = PluginManager().load()
    with _open(tmp_path, manager) as system:
        model = system.compile(overflow_model())
        for _ in range(3):
            model.run(X)
        manager.register(Late(), "late")  # steps 1 and 2 are still queued
        model.run(X)
    steps = [(type(e).__name__, e.run.step) for e in got
             if isinstance(e, StepTasksEvent | TaskEvent)]
    # never a batch: the queued steps one record each, then the separate events
    assert not any(isinstance(e, StepBatchEvent) for e in got)
    assert steps[:2] == [("StepTasksEvent", 1), ("StepTasksEvent", 2)]
    assert got[0].begin_us is not None  # whole-step records
    assert ("TaskEvent", 3) in steps


@settings(max_examples=60, deadline=None)
@given(begins=st.lists(st.floats(min_value=0.0, max_value=1e10, allow_nan=False),
                       min_size=1, max_size=20))
def test_a_batch_walks_each_step_to_the_bit_as_one_record_does(begins):
    with geplug.open_device(any_product().name, {"profiling_mode": True}) as system:
        model = system.compile(overflow_model())
        emitter = model._emitter
        emitter.base_us = 1_700_000_000_000_000
        tpl = emitter.template(X, {"y": np.ones((1, 2), np.float32)})
        records = [(tpl, k, b) for k, b in enumerate(begins)]
        batch = emitter.step_batch(tpl, records)
        for got, (_, step, begin) in zip(batch.records(), records, strict=True):
            want = emitter.step_record(tpl, step, begin)
            assert (got.run.step, got.begin_us, got.start_ns, got.end_us, got.calls) == \
                (want.run.step, want.begin_us, want.start_ns, want.end_us, want.calls)
        system._deferred.clear()  # nothing of these records is for the collectors


def test_each_queued_step_copies_the_bytes_of_its_own_inputs(tmp_path):
    """A model with a symbolic batch: a new input shape re-models the step."""
    from geplug_simulator.demo import build_cnn

    with _open(tmp_path) as system:
        model = system.compile(build_cnn())
        (name,) = model.inputs
        shape = [d or 1 for d in model.inputs[name].shape]
        batches = [1, 1, 3, 3, 1, 2]
        for batch in batches:
            model.run({name: np.zeros([batch, *shape[1:]], np.float32)})
        session = session_for(system)
        h2d = [nbytes for _, direction, nbytes, _, _ in session.copies.rows()
               if direction == "H2D"]
        per_image = 4 * int(np.prod(shape[1:]))
        assert h2d == [b * per_image for b in batches]


def test_an_output_of_data_dependent_size_copies_its_own_bytes_each_step(tmp_path):
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("NonZero", ["x"], ["y"], name="nz")], "nonzero",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [2, "n"])])
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with _open(tmp_path) as system:
        model = system.compile(onnx_model)  # a static input does not fix the output
        counts = [1, 1, 5, 5, 8, 2]
        for n in counts:
            x = np.zeros((1, 8), np.float32)
            x[0, :n] = 1.0
            model.run({"x": x})
        session = session_for(system)
        d2h = [nbytes for _, direction, nbytes, _, _ in session.copies.rows()
               if direction == "D2H"]
        assert d2h == [2 * 8 * n for n in counts]  # int64 indices, 2 x n


def test_two_threads_running_models_of_one_system_lose_no_step(tmp_path, monkeypatch):
    import threading

    import geplug.runtime.system as system_mod

    monkeypatch.setattr(system_mod, "DEFER_MAX_STEPS", 3)  # dispatch often, mid-append
    with _open(tmp_path) as system:
        models = [system.compile(overflow_model()) for _ in range(2)]

        def run(model: Any) -> None:
            for _ in range(150):
                model.run(X)

        threads = [threading.Thread(target=run, args=(m,)) for m in models]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        session = session_for(system)
        assert len(session.step_times) // 3 == 300


def test_a_failing_dispatch_loses_only_its_own_run_of_steps(tmp_path, monkeypatch):
    """A collector failing on one queued run (e.g. a storage warning made an error): the
    error propagates once, the steps queued after that run still reach the profile."""

    import geplug.runtime.system as system_mod

    monkeypatch.setattr(system_mod, "DEFER_MAX_STEPS", 8)
    batch = ProfilingSession.on_step_batch
    failed: list[list[int]] = []

    def once(self: ProfilingSession, event: StepBatchEvent) -> None:
        if not failed and event.run.model_id == first_id:
            failed.append(event.steps.tolist())
            raise RuntimeError("disk trouble")
        batch(self, event)

    monkeypatch.setattr(ProfilingSession, "on_step_batch", once)
    with _open(tmp_path) as system:
        a, b = system.compile(overflow_model()), system.compile(overflow_model())
        first_id = a.model_id
        raised = 0
        for _ in range(20):
            for model in (a, b):
                try:
                    model.run(X)
                except RuntimeError as exc:
                    assert "disk trouble" in str(exc)
                    raised += 1
        session = session_for(system)
        recorded = len(session.step_times) // 3
    assert raised == 1
    assert failed and recorded == 40 - len(failed[0])  # only the failing run is missing


def test_a_source_failing_to_give_its_events_is_named_and_the_rest_kept(tmp_path):
    import pytest

    from geplug.errors import BackendError

    class Broken:
        def deferred_events(self, records: Any) -> Any:
            raise ValueError("no template")

    with _open(tmp_path) as system:
        model = system.compile(overflow_model())
        model.run(X)
        model.run(X)  # queued
        system.defer_profile(Broken(), object())
        model.run(X)  # queued after the broken source's record
        with pytest.raises(BackendError, match=r"Broken failed to give the events of 1 "
                                               r"queued step\(s\): ValueError: no template"):
            system.flush_profile()
        session = session_for(system)
        assert session.step_times.tolist()[0::3] == [1, 2, 3]  # nothing of ours lost
