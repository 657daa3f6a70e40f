"""Overflow detection: Opdebug record, the op's own dump, summary, warning (formats.md §3)."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any

import attrs
import ml_dtypes
import numpy as np
import pytest

from geplug.dump.naming import parse_dump_name
from geplug.dump.overflow import OPDEBUG_MAGIC, OverflowWarning, overflow_record
from geplug.dump.reader import iter_dump_tree, parse_overflow_record, read_dump

FINITE = np.array([1.0, 2.0], np.float16)
OVER = np.array([np.inf, 3.0], np.float16)


def _overflow(system: Any, make_event: Any, **kw: Any) -> list[str]:
    kw.setdefault("inputs", [FINITE])
    kw.setdefault("outputs", [OVER])
    with pytest.warns(OverflowWarning):
        (paths,) = system.emit_dump(make_event(system, **kw))
    return list(paths)


def test_overflow_writes_opdebug_and_the_ops_dump_with_the_same_ids(
    make_system: Any, make_event: Any
) -> None:
    system = make_system(enable_dump_debug=True)
    paths = _overflow(system, make_event, task_id=42, stream_id=1)
    opdebug, own = paths[0], paths[1]
    assert os.path.dirname(opdebug) == os.path.dirname(own)
    a = parse_dump_name(os.path.basename(opdebug))
    b = parse_dump_name(os.path.basename(own))
    assert a is not None and b is not None and a.is_overflow
    assert (a.task_id, a.stream_id) == (b.task_id, b.stream_id) == (42, 1)
    dump = read_dump(own)
    assert len(dump.inputs) == 1 and len(dump.outputs) == 1


def test_opdebug_record_new_layout_aic(make_system: Any, make_event: Any) -> None:
    system = make_system(enable_dump_debug=True)
    paths = _overflow(system, make_event, task_id=7, model_id=3)
    dump = read_dump(paths[0])
    assert dump.op_name == "Node_OpDebug"
    raw = dump.outputs[0].array.tobytes()  # type: ignore[union-attr]
    magic, version, valid, acc, _, data_len = struct.unpack_from("<6I", raw)
    assert (magic, version, valid, acc, data_len) == (OPDEBUG_MAGIC, 0, 1, 0, 88)
    assert len(raw) == 24 + 88
    record = dump.overflow_record()
    assert record is not None and record.task_id == 7 and record.status != 0
    assert record.fields["model_id"] == 3 and record.fields["context_id"] == 65535


def test_ai_cpu_overflow_uses_the_aicpu_record(make_system: Any, make_event: Any) -> None:
    system = make_system(enable_dump_debug=True)
    paths = _overflow(system, make_event, engine="AI_CPU", task_type="AI_CPU")
    record = read_dump(paths[0]).overflow_record()
    assert record is not None and record.acc_type == "AICPU" and len(record.fields) == 8


def test_vector_core_overflow_uses_aiv(make_system: Any, make_event: Any) -> None:
    system = make_system(enable_dump_debug=True)
    paths = _overflow(system, make_event, task_type="AI_VECTOR_CORE")
    record = read_dump(paths[0]).overflow_record()
    assert record is not None and record.acc_type == "AIV"


def test_no_report_when_inputs_already_overflowed(make_system: Any, make_event: Any) -> None:
    system = make_system(enable_dump_debug=True)
    assert system.emit_dump(make_event(system, inputs=[OVER], outputs=[OVER])) == []


def test_no_report_for_finite_outputs(make_system: Any, make_event: Any) -> None:
    system = make_system(enable_dump_debug=True)
    assert system.emit_dump(make_event(system, inputs=[FINITE], outputs=[FINITE])) == []
    assert list(iter_dump_tree(system.config.dump_root)) == []


def test_nan_in_bfloat16_output_is_an_overflow(make_system: Any, make_event: Any) -> None:
    system = make_system(enable_dump_debug=True)
    out = np.array([np.nan, 1.0], ml_dtypes.bfloat16)
    paths = _overflow(system, make_event, outputs=[out])
    assert read_dump(paths[1]).outputs[0].dtype == "bfloat16"


def test_saturation_products_flag_the_fp16_extreme(make_system: Any, make_event: Any,
                                                   plain_product: Any) -> None:
    saturating = attrs.evolve(plain_product,
                              dump=attrs.evolve(plain_product.dump, overflow_mode="saturation"))
    system = make_system(product=saturating, enable_dump_debug=True)
    paths = _overflow(system, make_event, outputs=[np.array([65504.0, 1.0], np.float16)])
    summary = json.loads(Path(paths[2]).read_text())
    assert summary["overflows"][0]["outputs"][0]["saturated"] == 1


def test_inf_nan_products_ignore_the_fp16_extreme(make_system: Any, make_event: Any) -> None:
    system = make_system(enable_dump_debug=True)
    out = np.array([65504.0, 1.0], np.float16)
    assert system.emit_dump(make_event(system, inputs=[FINITE], outputs=[out])) == []


def test_aicore_overflow_mode_ignores_ai_cpu_ops(make_system: Any, make_event: Any) -> None:
    system = make_system(enable_dump_debug=True, dump_debug_mode="aicore_overflow")
    ev = make_event(system, inputs=[FINITE], outputs=[OVER], engine="AI_CPU")
    assert system.emit_dump(ev) == []


def test_summary_lists_every_overflow_and_the_first(make_system: Any, make_event: Any) -> None:
    system = make_system(enable_dump_debug=True)
    _overflow(system, make_event, op="first", step=0)
    paths = _overflow(system, make_event, op="second", step=1)
    json_path, txt_path = paths[2], paths[3]
    assert os.path.dirname(json_path) == system.config.dump_root
    data = json.loads(Path(json_path).read_text())
    assert [o["op_name"] for o in data["overflows"]] == ["first", "second"]
    assert data["first_overflow"]["op_name"] == "first"
    text = Path(txt_path).read_text()
    assert "first" in text and "+inf 1" in text


def test_warning_names_the_op_once(make_system: Any, make_event: Any) -> None:
    system = make_system(enable_dump_debug=True)
    with pytest.warns(OverflowWarning, match="'layer1/MatMul'"):
        system.emit_dump(make_event(system, inputs=[FINITE], outputs=[OVER]))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        system.emit_dump(make_event(system, inputs=[FINITE], outputs=[OVER], step=1))


def test_record_round_trips_through_the_parser() -> None:
    raw = overflow_record(acc=0, model_id=1, stream_id=2, task_id=3, task_type=0)
    record = parse_overflow_record(raw)
    assert (record.layout, record.acc_type, record.stream_id, record.task_id) == (
        "new", "AIC", 2, 3)


def test_old_layout_record_is_parsed() -> None:
    raw = bytearray(2048)
    struct.pack_into("<6Q", raw, 256, 1, 2, 3, 0, 0x100, 0x200)
    struct.pack_into("<3Q", raw, 1024, 9, 0, 5)
    record = parse_overflow_record(bytes(raw))
    assert record.layout == "old" and record.task_id == 3 and record.status == 5
