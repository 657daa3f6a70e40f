"""The timeline as Perfetto imports it: no dropped slice, launch->kernel flows, overlap and
step tracks (checked with the independent importer rules of ``trace_check``)."""

from __future__ import annotations

import itertools
import time

from prof_helpers import OPS, make_system, timeline
from trace_check import check, to_ns

from geplug.events import GraphEvent, OpRecord, RunInfo, StepEvent, TaskEvent
from geplug.profiling.overlap import THREADS


def _drive_ns(system, durations_ns, steps=3, gap_ns=1001):  # type: ignore[no-untyped-def]
    """Back-to-back tasks with awkward integer-ns durations (run base = now, µs)."""
    base = int(time.time() * 1e6)
    ops = [OpRecord(name=f"op{i}", op_type="Add", task_id=i + 1) for i in range(len(durations_ns))]
    system.emit_profile(GraphEvent(run=RunInfo(system=system, model_name="m", model_id=1, step=-1,
                                               time_base_us=base), ops=ops))
    t = 7
    for step in range(steps):
        run = RunInfo(system=system, model_name="m", model_id=1, step=step, time_base_us=base)
        system.emit_profile(StepEvent(run=run, phase="begin", time_us=t / 1000))
        for op, d in zip(ops, durations_ns, strict=True):
            system.emit_profile(TaskEvent(run=run, op=op, start_us=t / 1000, duration_us=d / 1000))
            t += d
        system.emit_profile(StepEvent(run=run, phase="end", time_us=t / 1000))
        t += gap_ns


def test_back_to_back_kernels_with_odd_ns_durations_are_all_kept(manager, tmp_path):
    system = make_system(manager, tmp_path, task_time="l1")
    durations = [1, 333, 1001, 12345, 7, 999_999, 2, 1_234_567]
    _drive_ns(system, durations, steps=4)
    system.shutdown()
    result = check(timeline(tmp_path))
    assert result.dropped == [] and result.unterminated == []
    kernels = [s for ss in result.tracks_of("Ascend Hardware").values() for s in ss]
    assert len(kernels) == len(durations) * 4
    assert sorted(k.end - k.start for k in kernels) == sorted(durations * 4)
    ordered = sorted(kernels, key=lambda k: k.start)
    assert all(a.end == b.start for a, b in itertools.pairwise(ordered)
               if b.name != "op0")  # exactly back to back, never 1 ns inside


def test_every_kernel_has_a_host_to_device_flow_from_its_launch(manager, tmp_path):
    system = make_system(manager, tmp_path)
    _drive_ns(system, [5000, 3000, 4000], steps=2)
    system.shutdown()
    result = check(timeline(tmp_path))
    assert result.unbound_flows == []
    cann = result.process_names
    assert len(result.flows) == 6
    for launch, kernel in result.flows:
        assert cann[launch.track[0]] == "CANN" and launch.name == "launch"
        assert cann[kernel.track[0]] == "Ascend Hardware"
        assert launch.args["connection_id"] == kernel.args["connection_id"]
        assert launch.end <= kernel.start + 1


def test_one_track_per_stream(manager, tmp_path):
    system = make_system(manager, tmp_path)
    base = int(time.time() * 1e6)
    ops = [OpRecord(name="a", op_type="Add", task_id=1, stream_id=0),
           OpRecord(name="b", op_type="Mul", task_id=2, stream_id=5)]
    run = RunInfo(system=system, model_name="m", model_id=1, step=0, time_base_us=base)
    system.emit_profile(StepEvent(run=run, phase="begin", time_us=0.0))
    for op in ops:  # the same start on two streams: concurrent, not overlapping
        system.emit_profile(TaskEvent(run=run, op=op, start_us=1.0, duration_us=2.0))
    system.emit_profile(StepEvent(run=run, phase="end", time_us=4.0))
    system.shutdown()
    events = timeline(tmp_path)
    result = check(events)
    hw = result.tracks_of("Ascend Hardware")
    assert sorted(hw) == [0, 5] and result.dropped == []
    names = {result.thread_names[(s.track[0], tid)] for tid, ss in hw.items() for s in ss}
    assert names == {"Stream 0", "Stream 5"}


def test_overlap_analysis_sums_to_the_simulated_busy_and_free_time(manager, tmp_path):
    system = make_system(manager, tmp_path, hccl="on")
    base = int(time.time() * 1e6)
    comp = OPS[0]
    comm = OPS[2]  # allreduce1, COMMUNICATION
    run = RunInfo(system=system, model_name="m", model_id=1, step=0, time_base_us=base)
    system.emit_profile(StepEvent(run=run, phase="begin", time_us=0.0))
    # compute 0-10, comm 5-15 (5 overlapped), compute 20-30, comm 40-45
    for op, s, d in ((comp, 0, 10), (comm, 5, 10), (comp, 20, 10), (comm, 40, 5)):
        system.emit_profile(TaskEvent(run=run, op=op, start_us=float(s), duration_us=float(d)))
    system.emit_profile(StepEvent(run=run, phase="end", time_us=50.0))
    system.shutdown()
    result = check(timeline(tmp_path))
    assert result.dropped == []
    tracks = result.tracks_of("Overlap Analysis")
    totals = {result.thread_names[(s.track[0], tid)]: 0 for tid, ss in tracks.items() for s in ss}
    for tid, ss in tracks.items():
        for s in ss:
            assert s.name == result.thread_names[(s.track[0], tid)]
            totals[s.name] += s.end - s.start
    assert set(totals) == set(THREADS)
    assert totals == {"Computing": 20_000, "Communication": 15_000,
                      "Communication(Not Overlapped)": 10_000, "Free": 15_000}


def test_step_trace_track_nests_exactly_with_training_trace(manager, tmp_path):
    system = make_system(manager, tmp_path, training_trace="on")
    _drive_ns(system, [4001, 2999], steps=3)
    system.shutdown()
    result = check(timeline(tmp_path))
    assert result.dropped == []
    (slices,) = result.tracks_of("Step Trace").values()
    names = [s.name for s in slices]
    for n in (1, 2, 3):
        assert f"Iteration {n}" in names and f"FP_BP Time {n}" in names
    fpbp = next(s for s in slices if s.name == "FP_BP Time 2")
    assert fpbp.end - fpbp.start == 4001 + 2999 and fpbp.depth == 1


def test_api_calls_keep_exact_ns_and_never_overlap(manager, tmp_path):
    from geplug.events import ApiCall

    system = make_system(manager, tmp_path, runtime_api="on")
    base = int(time.time() * 1e6)
    run = RunInfo(system=system, model_name="m", model_id=1, step=0, time_base_us=base)
    t = 0.0
    for d in (1.001, 0.333, 2.7):  # back-to-back copies, as the simulator emits them
        system.emit_profile(ApiCall(run=run, name="aclrtMemcpy", start_us=t, duration_us=d))
        t += d
    system.shutdown()
    events = [e for e in timeline(tmp_path) if e.get("name") == "aclrtMemcpy"]
    result = check(events)
    assert len(result.slices) == 3 and result.dropped == []
    starts = [to_ns(e["ts"]) - base * 1000 for e in events]
    assert starts == [0, 1001, 1334]


def test_long_runs_rendered_by_numpy_keep_every_slice_and_flow(manager, tmp_path, monkeypatch):
    # 60 equal steps x 8 kernels: the text export renders these runs with numpy
    # (geplug.profiling.textfill), not per-event %; Perfetto's rules must still keep them all
    from geplug.profiling.textfill import BlockFormatter

    rendered: list[int] = []
    real = BlockFormatter._render

    def spy(self, seg_idx, *args, **kwargs):  # type: ignore[no-untyped-def]
        rendered.append(len(seg_idx))
        return real(self, seg_idx, *args, **kwargs)

    monkeypatch.setattr(BlockFormatter, "_render", spy)
    system = make_system(manager, tmp_path, task_time="l1")
    durations = [1, 333, 1001, 12345, 7, 999_999, 2, 1_234_567]
    _drive_ns(system, durations, steps=60)
    system.shutdown()
    assert rendered, "the numpy renderer was not used"
    result = check(timeline(tmp_path))
    assert result.dropped == [] and result.unterminated == [] and result.unbound_flows == []
    kernels = [s for ss in result.tracks_of("Ascend Hardware").values() for s in ss]
    assert sorted(k.end - k.start for k in kernels) == sorted(durations * 60)
    assert len(result.flows) == len(durations) * 60
    ordered = sorted(kernels, key=lambda k: k.start)
    assert all(a.end == b.start for a, b in itertools.pairwise(ordered) if b.name != "op0")
