"""The simulator's CLI and API on bad input: one clear error line, never a traceback; and the
commands on products without the TF1 initialize_system API."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from sim_helpers import any_product, make_system, overflow_model

from geplug.cli.main import main
from geplug.errors import CompileError, RunError
from geplug.testing.plugin import require_product


@pytest.fixture
def model_path(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(overflow_model(), path)
    return path


def test_run_refuses_fewer_than_one_step_as_a_usage_error(model_path, capsys):
    assert main(["run", str(model_path), "--product", any_product().name, "--steps", "0"]) == 2
    assert "--steps 0" in capsys.readouterr().err


def test_run_input_without_name_equals_file_is_a_usage_error(model_path, capsys):
    assert main(["run", str(model_path), "--product", any_product().name,
                 "--input", "bogus"]) == 2
    assert "expected NAME=FILE.npy" in capsys.readouterr().err


def test_run_output_in_a_missing_directory_is_one_error_line(model_path, tmp_path, capsys):
    target = tmp_path / "nope" / "out.npz"
    assert main(["run", str(model_path), "--product", any_product().name,
                 "--output", str(target)]) == 1
    err = capsys.readouterr().err
    assert "does not exist" in err and "Traceback" not in err


def test_run_output_is_written_whole_with_no_temp_file_left(model_path, tmp_path):
    out = tmp_path / "res" / "out.npz"
    out.parent.mkdir()
    assert main(["run", str(model_path), "--product", any_product().name,
                 "--output", str(out)]) == 0
    assert [p.name for p in out.parent.iterdir()] == ["out.npz"]
    assert np.load(out)["y"].shape == (1, 2)


def test_compile_serves_a_product_without_initialize_system(model_path, capsys):
    infer = require_product("atlas_infer")
    assert not infer.runtime.initialize_system
    assert main(["compile", str(model_path), "--product", infer.name]) == 0
    assert "MatMulV2" in capsys.readouterr().out


def test_demo_skips_modes_the_product_refuses(capsys, tmp_path, monkeypatch):
    train = require_product("atlas_train")  # no bfloat16 on this family
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--product", train.name]) == 0
    out = capsys.readouterr().out
    assert "skipped" in out and "allow_mix_precision_bf16" in out
    assert "NOT FINITE" in out  # allow_fp32_to_fp16 overflows fc1


@pytest.mark.parametrize(("variable", "value"), [("GEPLUG_SIM_THREADS", "two"),
                                                 ("GEPLUG_SIM_SPIN", "yes")])
def test_demo_names_a_bad_simulator_setting_not_every_mode_refused(
        variable, value, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(variable, value)
    assert main(["demo", "--product", any_product().name]) == 1
    err = capsys.readouterr().err
    assert variable in err and repr(value) in err
    assert "no precision mode" not in err and "Traceback" not in err


def test_run_refuses_a_negative_step():
    compiled = make_system(any_product()).compile(overflow_model())
    with pytest.raises(RunError, match=r"step=-1") as info:
        compiled.run({"x": np.ones((1, 4), np.float32)}, step=-1)
    assert isinstance(info.value, ValueError) and info.value.argument == "step"
    assert not isinstance(info.value, CompileError)  # nothing is being compiled


def test_an_input_that_is_not_an_array_is_named():
    compiled = make_system(any_product()).compile(overflow_model())
    with pytest.raises(CompileError, match="'x'"):
        compiled.run({"x": "not numbers"})


def test_decision_of_an_unknown_node_names_the_known_ones():
    compiled = make_system(any_product()).compile(overflow_model())
    with pytest.raises(KeyError, match="big"):
        compiled.decision("nope")
