"""``geplug dump ls / show / convert / compare``."""

from __future__ import annotations

import json
import os
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from geplug.cli.main import main


def _tree(make_system: Any, make_event: Any, root: Any, overflow: bool = False) -> str:
    system = make_system(enable_dump=True, dump_mode="all", resolved={"dump_root": str(root)})
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    system.emit_dump(make_event(system, op="net/a", op_type="Add", task_id=1, inputs=[x],
                                outputs=[x + 1]))
    out = np.full(4, np.inf if overflow else 2.0, np.float16)
    system.emit_dump(make_event(system, op="net/b", op_type="MatMulV2", task_id=2, inputs=[x],
                                outputs=[out, np.ones(2, ml_dtypes.bfloat16)]))
    return str(root)


def test_ls_lists_steps_ops_tensors_and_sizes(make_system: Any, make_event: Any, tmp_path: Any,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    root = _tree(make_system, make_event, tmp_path / "d")
    assert main(["dump", "ls", root]) == 0
    out = capsys.readouterr().out
    assert "step 0: 2 files" in out and "net/b" in out and "FLOAT16[4]" in out
    assert "2 files," in out


def test_ls_json(make_system: Any, make_event: Any, tmp_path: Any,
                 capsys: pytest.CaptureFixture[str]) -> None:
    root = _tree(make_system, make_event, tmp_path / "d")
    assert main(["dump", "ls", root, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["op_name"] for r in rows] == ["net/a", "net/b"]
    assert rows[1]["outputs"] == ["FLOAT16[4]", "BF16[2]"]


def test_show_prints_header_and_tensor_statistics(make_system: Any, make_event: Any,
                                                  tmp_path: Any,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    _tree(make_system, make_event, tmp_path / "d")
    path = next(os.path.join(d, f) for d, _, fs in os.walk(tmp_path / "d") for f in fs
                if f.startswith("Add."))
    assert main(["dump", "show", path]) == 0
    out = capsys.readouterr().out
    assert "op_name:     net/a" in out and "version:     2.0" in out
    assert "input.0" in out and "output.0" in out and "float32" in out


def test_show_json_decodes_the_overflow_record(make_system: Any, make_event: Any, tmp_path: Any,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    system = make_system(enable_dump_debug=True, resolved={"dump_root": str(tmp_path)})
    with pytest.warns(UserWarning):
        (paths,) = system.emit_dump(make_event(system, task_id=77,
                                               inputs=[np.ones(2, np.float16)],
                                               outputs=[np.full(2, np.inf, np.float16)]))
    assert main(["dump", "show", paths[0], "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["overflow_record"]["task_id"] == 77 and data["overflow_record"]["acc_type"] == "AIC"
    assert data["header"]["op_name"] == "Node_OpDebug"
    assert data["header"]["dump_time"].isdigit()


@pytest.mark.parametrize("fmt", ["npy", "npz"])
def test_convert_writes_arrays(make_system: Any, make_event: Any, tmp_path: Any, fmt: str,
                               capsys: pytest.CaptureFixture[str]) -> None:
    root = _tree(make_system, make_event, tmp_path / "d")
    out = tmp_path / "out"
    assert main(["dump", "convert", root, "--to", fmt, "--out", str(out)]) == 0
    files = sorted(f for _, _, fs in os.walk(out) for f in fs)
    if fmt == "npy":
        assert len(files) == 5 and all(f.endswith(".npy") for f in files)
        bf = next(os.path.join(d, f) for d, _, fs in os.walk(out) for f in fs
                  if f.endswith(".output.1.npy"))
        assert np.load(bf).dtype == np.float32
    else:
        assert len(files) == 2
        npz = next(os.path.join(d, f) for d, _, fs in os.walk(out) for f in fs
                   if f.startswith("Add."))
        with np.load(npz) as data:
            assert np.array_equal(data["output_0"], np.arange(6, dtype=np.float32).reshape(2, 3)
                                  + 1)
    assert "converted 2 dump files" in capsys.readouterr().out


def test_compare_exits_1_and_names_the_first_bad_op(make_system: Any, make_event: Any,
                                                    tmp_path: Any,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    a = _tree(make_system, make_event, tmp_path / "a", overflow=True)
    b = _tree(make_system, make_event, tmp_path / "b")
    assert main(["dump", "compare", a, b]) == 1
    out = capsys.readouterr().out
    assert ">> first op over the threshold: 'net/b'" in out


def test_compare_json_and_clean_exit(make_system: Any, make_event: Any, tmp_path: Any,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    a = _tree(make_system, make_event, tmp_path / "a")
    b = _tree(make_system, make_event, tmp_path / "b")
    assert main(["dump", "compare", a, b, "--format", "json", "--threshold", "0.999"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["first_failure"] is None and data["threshold"] == 0.999


def test_bad_file_is_reported_without_traceback(tmp_path: Any,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "Add.Add.1.0.1700000000000000"
    bad.write_bytes(b"garbage!garbage!")
    assert main(["dump", "show", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "geplug: error:" in err and "Traceback" not in err and str(bad) in err


def test_convert_into_an_unusable_out_directory_is_a_clear_error(
    make_system: Any, make_event: Any, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _tree(make_system, make_event, tmp_path / "d")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["dump", "convert", root, "--out", str(blocker)]) == 1
    err = capsys.readouterr().err
    assert "cannot create output directory" in err and "--out" in err
