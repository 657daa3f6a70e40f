"""GEPLUG_SIM_FAULT_NODE naming no node of the model warns (it may name another model's node)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from geplug_simulator.emit import FAULT_ENV, FaultEnvWarning
from sim_helpers import any_product, make_system, overflow_model

from geplug.errors import AICoreError

X1 = {"x": np.ones((1, 4), np.float32)}


def test_env_value_naming_no_node_warns_with_variable_value_and_nodes(recorder, monkeypatch):
    manager, _ = recorder
    monkeypatch.setenv(FAULT_ENV, "nosuch")
    compiled = make_system(any_product(), manager).compile(overflow_model())
    with pytest.warns(FaultEnvWarning) as record:
        out = compiled.run(X1)  # runs: no fault is injected
    (warning,) = record
    text = str(warning.message)
    assert f"{FAULT_ENV}='nosuch'" in text
    assert "model 'test'" in text and "big, small" in text
    assert out["y"].shape == (1, 2)


def test_env_warning_is_given_once_per_model_and_value(recorder, monkeypatch):
    manager, _ = recorder
    monkeypatch.setenv(FAULT_ENV, "nosuch")
    compiled = make_system(any_product(), manager).compile(overflow_model())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            compiled.run(X1)
    assert sum(issubclass(w.category, FaultEnvWarning) for w in caught) == 1


def test_env_value_naming_a_node_still_injects_the_fault(recorder, monkeypatch):
    manager, _ = recorder
    monkeypatch.setenv(FAULT_ENV, "small")
    compiled = make_system(any_product(), manager).compile(overflow_model())
    with warnings.catch_warnings():
        warnings.simplefilter("error", FaultEnvWarning)
        with pytest.raises(AICoreError, match="'small'"):
            compiled.run(X1)


def test_cli_run_reports_the_unknown_fault_node_as_a_warning(tmp_path, monkeypatch, capsys):
    import onnx

    from geplug.cli.main import main

    path = tmp_path / "m.onnx"
    onnx.save(overflow_model(), path)
    monkeypatch.setenv(FAULT_ENV, "nosuch")
    assert main(["run", str(path), "--product", any_product().name]) == 0
    err = capsys.readouterr().err
    assert "geplug: warning:" in err and "'nosuch'" in err and "big, small" in err
