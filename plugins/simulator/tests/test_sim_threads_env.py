"""GEPLUG_SIM_THREADS: a positive integer sets the simulator sessions' intra-op threads; any
other value fails opening the device with the variable, the value and the fix named."""

from __future__ import annotations

import pytest
from geplug_simulator.runtime import THREADS_ENV
from sim_helpers import any_product

import geplug
from geplug.errors import ConfigError


@pytest.mark.parametrize("value", ["four", "0", "-2", "1.5"])
def test_a_bad_thread_count_fails_opening_the_device_naming_variable_and_value(
        monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(THREADS_ENV, value)
    with pytest.raises(ConfigError) as caught:
        geplug.open_device(any_product().name)
    text = str(caught.value)
    assert THREADS_ENV in text and repr(value) in text and "positive integer" in text


def test_a_thread_count_sets_the_sessions_intra_op_threads(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(THREADS_ENV, "3")
    from geplug_simulator.runtime import session_options
    assert session_options().intra_op_num_threads == 3
