"""``dump_layer`` naming an op that never ran is reported once, at shutdown; and the dump
writer says where it wrote (``dump_locations``) for a run summary."""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np
import pytest

from geplug.dump.plugin import DumpLayerWarning, dump_locations


def _run_two_ops(system: Any, make_event: Any) -> None:
    x = np.ones(2, np.float32)
    system.emit_dump(make_event(system, op="fc1", op_type="MatMulV2", outputs=[x],
                                model_name="net"))
    system.emit_dump(make_event(system, op="fc2", op_type="MatMulV2", outputs=[x],
                                model_name="net"))


def test_dump_layer_naming_an_op_that_never_ran_warns_at_shutdown(
        make_system: Any, make_event: Any) -> None:
    system = make_system(enable_dump=True, dump_layer="fc1 nosuch")
    _run_two_ops(system, make_event)
    with pytest.warns(DumpLayerWarning) as record:
        system.shutdown()
    (warning,) = record
    text = str(warning.message)
    assert "dump_layer names ops that never ran: 'nosuch'" in text
    assert "model 'net'" in text and "fc1, fc2" in text


def test_dump_layer_naming_only_ops_that_ran_does_not_warn(make_system: Any,
                                                            make_event: Any) -> None:
    system = make_system(enable_dump=True, dump_layer="fc1 fc2")
    _run_two_ops(system, make_event)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        system.shutdown()


def test_dump_layer_may_name_a_graph_input_feeding_an_op_that_ran(
        make_system: Any, make_event: Any) -> None:
    system = make_system(enable_dump=True, dump_layer="fc1 in0")
    x = np.ones(2, np.float32)
    system.emit_dump(make_event(system, op="fc1", op_type="MatMulV2", inputs=[x],
                                outputs=[x], data_inputs=("in0",)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        system.shutdown()


def test_dump_locations_names_the_time_directory_once_a_file_is_written(
        make_system: Any, make_event: Any, tmp_path: Any) -> None:
    system = make_system(enable_dump=True, resolved={"dump_root": str(tmp_path / "d")})
    system.emit_dump(make_event(system, op="a", op_type="Add", outputs=[np.ones(2)]))
    found = dump_locations(system)
    assert list(found) == ["dump"]
    parent, time_dir = os.path.split(found["dump"])
    assert parent == str(tmp_path / "d") and len(time_dir) == 14  # {dump_path}/{ts14}


def test_dump_locations_is_empty_when_nothing_was_dumped(make_system: Any) -> None:
    system = make_system(enable_dump=True)
    assert dump_locations(system) == {}
