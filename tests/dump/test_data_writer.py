"""Data dump: dump_mode, collective phases, dump_layer, layout, stats (options.md §4)."""

from __future__ import annotations

import csv
import os
from typing import Any

import numpy as np

from geplug.dump.reader import iter_dump_tree, read_dump
from geplug.dump.stats import STAT_COLUMNS

X, Y = np.arange(4, dtype=np.float32), np.arange(3, dtype=np.float32)


def _kinds(path: str) -> tuple[int, int]:
    dump = read_dump(path)
    return len(dump.inputs), len(dump.outputs)


def test_dump_mode_output_is_the_default(make_system: Any, make_event: Any) -> None:
    system = make_system(enable_dump=True)
    (path,) = system.emit_dump(make_event(system, inputs=[X], outputs=[Y]))[0]
    assert _kinds(path) == (0, 1)


def test_dump_mode_input_writes_inputs_only(make_system: Any, make_event: Any) -> None:
    system = make_system(enable_dump=True, dump_mode="input")
    (path,) = system.emit_dump(make_event(system, inputs=[X, X], outputs=[Y]))[0]
    assert _kinds(path) == (2, 0)


def test_dump_mode_all_writes_inputs_and_outputs_in_one_file(make_system: Any,
                                                             make_event: Any) -> None:
    system = make_system(enable_dump=True, dump_mode="all")
    (path,) = system.emit_dump(make_event(system, inputs=[X], outputs=[Y, Y]))[0]
    assert _kinds(path) == (1, 2)


def test_collective_op_inputs_before_and_outputs_after_are_separate_files(
    make_system: Any, make_event: Any
) -> None:
    system = make_system(enable_dump=True, dump_mode="all")
    common = {"op": "allreduce_1", "op_type": "HcomAllReduce", "task_id": 9, "collective": True}
    before = system.emit_dump(make_event(system, inputs=[X], phase="before", ts=1700000000000001,
                                         **common))
    after = system.emit_dump(make_event(system, outputs=[X * 2], phase="after",
                                        ts=1700000000000002, **common))
    (p_before,), (p_after,) = before[0], after[0]
    assert p_before != p_after
    assert _kinds(p_before) == (1, 0) and _kinds(p_after) == (0, 1)


def test_dump_mode_output_skips_the_before_phase_of_a_collective(
    make_system: Any, make_event: Any
) -> None:
    system = make_system(enable_dump=True, dump_mode="output")
    assert system.emit_dump(make_event(system, inputs=[X], phase="before",
                                       collective=True)) == []


def test_dump_layer_limits_the_ops_dumped(make_system: Any, make_event: Any) -> None:
    system = make_system(enable_dump=True, dump_layer="keep/this other")
    for op in ("keep/this", "drop/that", "other"):
        system.emit_dump(make_event(system, op=op, outputs=[Y]))
    names = sorted(e.read().op_name for e in iter_dump_tree(system.config.dump_root))
    assert names == ["keep/this", "other"]


def test_dump_layer_also_dumps_the_data_op_feeding_a_listed_op(make_system: Any,
                                                               make_event: Any,
                                                               dump_tensor: Any) -> None:
    system = make_system(enable_dump=True, dump_layer="fc1")
    x, w = dump_tensor(X, "x"), dump_tensor(X * 2, "w1")
    system.emit_dump(make_event(system, op="fc1", inputs=[x, w], outputs=[Y], task_id=7,
                                data_inputs=("x",)))
    files = {e.read().op_name: e for e in iter_dump_tree(system.config.dump_root)}
    assert sorted(files) == ["fc1", "x"]
    data = files["x"]
    assert data.parsed.op_type == "Data" and data.parsed.task_id == 7
    assert data.read().outputs[0].array.tolist() == X.tolist()  # type: ignore[union-attr]


def test_dump_layer_dumps_a_shared_data_op_once_per_step(make_system: Any, make_event: Any,
                                                         dump_tensor: Any) -> None:
    system = make_system(enable_dump=True, dump_layer="a b")
    for op in ("a", "b"):
        system.emit_dump(make_event(system, op=op, inputs=[dump_tensor(X, "x")], outputs=[Y],
                                    data_inputs=("x",)))
    types = sorted(e.parsed.op_type for e in iter_dump_tree(system.config.dump_root))
    assert types == ["Data", "MatMulV2", "MatMulV2"]


def test_without_dump_layer_no_data_op_files_are_added(make_system: Any, make_event: Any,
                                                       dump_tensor: Any) -> None:
    system = make_system(enable_dump=True)
    system.emit_dump(make_event(system, op="fc1", inputs=[dump_tensor(X, "x")], outputs=[Y],
                                data_inputs=("x",)))
    assert [e.parsed.op_type for e in iter_dump_tree(system.config.dump_root)] == ["MatMulV2"]


def test_dynamic_shape_with_exception_dump_1_gets_no_data_dump(make_system: Any,
                                                               make_event: Any,
                                                               tmp_path: Any) -> None:
    system = make_system(enable_dump=True, resolved={
        "exception_dump_level": 1})
    assert system.emit_dump(make_event(system, outputs=[Y], dynamic_shape=True)) == []
    assert len(system.emit_dump(make_event(system, outputs=[Y], dynamic_shape=False))) == 1


def test_dynamic_shape_with_exception_dump_2_keeps_the_data_dump(make_system: Any,
                                                                 make_event: Any,
                                                                 tmp_path: Any) -> None:
    system = make_system(enable_dump=True, resolved={
        "exception_dump_level": 2})
    (paths,) = system.emit_dump(make_event(system, outputs=[Y], dynamic_shape=True))
    assert len(paths) == 1


def test_layout_is_time_device_model_model_id_step(make_system: Any, make_event: Any) -> None:
    system = make_system(enable_dump=True, resolved={"device_id": 3})
    (path,) = system.emit_dump(make_event(system, model_name="g", model_id=6, step=2,
                                          outputs=[Y]))[0]
    rel = os.path.relpath(path, system.config.dump_root).split(os.sep)
    assert len(rel) == 6 and rel[1:5] == ["3", "g", "6", "2"]
    assert len(rel[0]) == 14 and rel[0].isdigit()


def test_one_time_directory_per_system(make_system: Any, make_event: Any) -> None:
    system = make_system(enable_dump=True)
    for step in range(3):
        system.emit_dump(make_event(system, step=step, outputs=[Y]))
    assert len(os.listdir(system.config.dump_root)) == 1


def test_nothing_is_written_when_dumping_is_off(make_system: Any, make_event: Any) -> None:
    system = make_system()
    assert system.emit_dump(make_event(system, outputs=[Y])) == []
    assert os.listdir(system.config.config.dump_path) == []


def test_dump_data_stats_writes_statistic_csv_instead_of_tensors(
    make_system: Any, make_event: Any
) -> None:
    system = make_system(enable_dump=True, dump_mode="all", dump_data="stats")
    data = np.array([1.0, -2.0, np.inf, np.nan], np.float32)
    system.emit_dump(make_event(system, op="a", inputs=[X], outputs=[data]))
    system.shutdown()
    (step_dir,) = {d for d, _, fs in os.walk(system.config.dump_root) if fs}
    assert os.listdir(step_dir) == ["statistic.csv"]
    with open(os.path.join(step_dir, "statistic.csv"), newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert tuple(rows[0].keys()) == STAT_COLUMNS
    out = next(r for r in rows if r["Input/Output"] == "Output")
    assert (out["Max Value"], out["Min Value"], out["Nan Count"], out["Positive Inf Count"]) == (
        "1.0", "-2.0", "1", "1")


def test_statistic_csv_has_the_l2norm_column_msprobe_reads(make_system: Any,
                                                           make_event: Any) -> None:
    # msprobe's statistic reader looks up 'L2Norm Value' by name next to Max/Min/Avg
    system = make_system(enable_dump=True, dump_mode="output", dump_data="stats")
    system.emit_dump(make_event(system, op="a", inputs=[X],
                                outputs=[np.array([3.0, -4.0], np.float32)]))
    system.shutdown()
    (step_dir,) = {d for d, _, fs in os.walk(system.config.dump_root) if fs}
    with open(os.path.join(step_dir, "statistic.csv"), newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    assert "L2Norm Value" in STAT_COLUMNS
    assert float(row["L2Norm Value"]) == 5.0
    assert (row["Max Value"], row["Min Value"], row["Avg Value"]) == ("3.0", "-4.0", "-0.5")
