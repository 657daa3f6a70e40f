"""dump_step grammar and the backend's per-step question (options.md §4.3, §4.5)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

from geplug.dump.policy import (
    DumpStepError,
    dump_layer_names,
    parse_dump_step,
    step_selected,
    wants_tensors,
)
from geplug.dump.reader import iter_dump_tree


def test_parse_dump_step_expands_single_steps_and_ranges() -> None:
    assert parse_dump_step("0|3-5|10") == (range(0, 1), range(3, 6), range(10, 11))


def test_parse_dump_step_empty_means_every_step() -> None:
    assert parse_dump_step("") == ()
    assert step_selected(None, 12345) and step_selected("", 7)


@pytest.mark.parametrize("bad", ["5-3", "3-3", "a", "0|", "-1", "1-2-3", "None", " 1", "1.5",
                                 "2147483648"])
def test_parse_dump_step_rejects_bad_grammar(bad: str) -> None:
    with pytest.raises(DumpStepError) as info:
        parse_dump_step(bad)
    assert repr(bad) in str(info.value)


def test_parse_dump_step_rejects_more_than_100_items() -> None:
    with pytest.raises(DumpStepError, match="cannot exceed 100"):
        parse_dump_step("|".join(str(i) for i in range(101)))
    assert len(parse_dump_step("|".join(str(i) for i in range(100)))) == 100


def test_wants_tensors_follows_dump_step(make_system: Any) -> None:
    system = make_system(enable_dump=True, dump_step="0|3-5")
    assert [s for s in range(8) if wants_tensors(system.config, s)] == [0, 3, 4, 5]


def test_wants_tensors_every_step_for_overflow_detection(make_system: Any) -> None:
    system = make_system(enable_dump_debug=True, dump_step="0")
    assert all(wants_tensors(system.config, s) for s in range(5))


def test_wants_tensors_false_when_dumping_is_off(make_system: Any) -> None:
    system = make_system()
    assert not any(wants_tensors(system.config, s) for s in range(3))


def test_dump_step_0_3_to_5_over_8_steps_dumps_exactly_those(make_system: Any,
                                                              make_event: Any) -> None:
    system = make_system(enable_dump=True, dump_step="0|3-5")
    for step in range(8):
        system.emit_dump(make_event(system, step=step, outputs=[np.ones(4, np.float32)]))
    steps = {e.step for e in iter_dump_tree(system.config.dump_root)}
    assert steps == {0, 3, 4, 5}


def test_dump_layer_names_split_on_spaces() -> None:
    assert dump_layer_names(" a  b/c ") == frozenset({"a", "b/c"})
    assert dump_layer_names("") is None and dump_layer_names(None) is None


def test_step_directory_is_the_step_number(make_system: Any, make_event: Any) -> None:
    system = make_system(enable_dump=True)
    paths = system.emit_dump(make_event(system, step=17, outputs=[np.ones(2, np.float32)]))[0]
    assert os.path.basename(os.path.dirname(paths[0])) == "17"
