"""GEPLUG_SIM_SPIN: onnxruntime's worker threads spin (its own default) when this process
simulates one device alone, and not when ranks or devices share the machine."""

from __future__ import annotations

import pytest
from geplug_simulator.spin import SPIN_ENV
from onnx import TensorProto, helper
from sim_helpers import any_product

import geplug
from geplug.errors import ConfigError

LAUNCHER_ENV = ("WORLD_SIZE", "LOCAL_WORLD_SIZE")


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """A process outside any launcher, GEPLUG_SIM_SPIN unset (tox sets it off)."""
    for name in (SPIN_ENV, *LAUNCHER_ENV):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _relu() -> object:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _open(**env: str) -> geplug.System:
    return geplug.open_device(any_product().name, env=env)


def test_one_device_alone_compiles_sessions_that_spin_by_default(env) -> None:
    with _open() as device:
        compiled = device.compile(_relu())
        options = compiled._session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "1"


def test_a_multi_rank_job_compiles_sessions_that_do_not_spin(env) -> None:
    with _open(RANK_SIZE="4", RANK_ID="2") as rank:
        policy = rank.runtime.spin_policy()
        options = rank.compile(_relu())._session.get_session_options()
    assert not policy.spin and "a job of 4 ranks" in policy.reason
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_a_torchrun_world_does_not_spin(env) -> None:
    env.setenv("WORLD_SIZE", "2")
    with _open() as device:
        assert not device.runtime.spin_policy().spin


def test_two_simulated_devices_in_one_process_do_not_spin(env) -> None:
    with _open() as first:
        assert first.runtime.spin_policy().spin
        with geplug.open_device(any_product().name, env={}, device_id=1):
            assert not first.runtime.spin_policy().spin
        assert first.runtime.spin_policy().spin  # the other device was shut down


@pytest.mark.parametrize(("value", "rank_size", "spins"),
                         [("on", "4", True), ("off", "1", False), (" ON ", "1", True)])
def test_an_explicit_value_wins_over_the_machine_sharing(env, value, rank_size, spins) -> None:
    env.setenv(SPIN_ENV, value)
    with _open(RANK_SIZE=rank_size) as device:
        assert device.runtime.spin_policy().spin is spins


def test_a_bad_value_fails_opening_the_device_naming_variable_value_and_choices(env) -> None:
    env.setenv(SPIN_ENV, "yes")
    with pytest.raises(ConfigError) as caught:
        _open()
    text = str(caught.value)
    assert SPIN_ENV in text and "'yes'" in text and "auto, on, off" in text
