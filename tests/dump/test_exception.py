"""Exception dump: locations and priorities, content per level (options.md §8, formats.md §4)."""

from __future__ import annotations

import logging
import os
from typing import Any

import numpy as np
import pytest

from geplug.config.locations import exception_dump_location
from geplug.dump.naming import READER_REGEX, parse_dump_name
from geplug.dump.reader import read_dump

WS, TILING = b"\x01" * 32, b"\x02" * 16


def _exception(system: Any, make_event: Any, **kw: Any) -> list[str]:
    ev = make_event(system, kind="exception", op="block/Conv", op_type="Conv2D", task_id=11,
                    inputs=[np.ones((2, 2), np.float16)], outputs=[np.zeros(3, np.float32)],
                    workspace=WS, tiling=TILING, message="aicore error 0x800000", **kw)
    results = system.emit_dump(ev)
    return [p for r in results for p in r]


def _system(make_system: Any, tmp_path: Any, level: int) -> Any:
    directory = str(tmp_path / "extra-info" / "data-dump" / "0")
    return make_system(resolved={"exception_dump_level": level, "exception_dump_dir": directory})


def test_level_1_dumps_inputs_outputs_and_workspace(make_system: Any, make_event: Any,
                                                     tmp_path: Any) -> None:
    system = _system(make_system, tmp_path, 1)
    (path,) = _exception(system, make_event)
    assert os.path.dirname(path) == system.config.exception_dump_dir
    dump = read_dump(path)
    assert len(dump.inputs) == 1 and len(dump.outputs) == 1
    assert [s.array.tobytes() for s in dump.spaces] == [WS]  # type: ignore[union-attr]
    assert dump.header.dfx_message.startswith("[AIC_INFO] node_name:block/Conv")
    assert "args(0x" in dump.header.dfx_message and "aicore error" in dump.header.dfx_message


def test_level_2_adds_the_tiling_data(make_system: Any, make_event: Any,
                                      tmp_path: Any) -> None:
    system = _system(make_system, tmp_path, 2)
    (path,) = _exception(system, make_event)
    dump = read_dump(path)
    assert [s.array.tobytes() for s in dump.spaces] == [WS, TILING]  # type: ignore[union-attr]
    assert f"tiling_data_size:{len(TILING)}" in dump.header.dfx_message


def test_exception_file_uses_the_older_ge_name(make_system: Any, make_event: Any,
                                               tmp_path: Any) -> None:
    system = _system(make_system, tmp_path, 1)
    (path,) = _exception(system, make_event, ts=1749451765349986)
    name = os.path.basename(path)
    assert name == "Conv2D.block_Conv.11.1749451765349986"
    assert READER_REGEX.match(name)
    parsed = parse_dump_name(name)
    assert parsed is not None and parsed.stream_id is None


def test_no_exception_dump_at_level_0(make_system: Any, make_event: Any, tmp_path: Any) -> None:
    system = _system(make_system, tmp_path, 0)
    assert _exception(system, make_event) == []


def test_exception_dump_logs_the_line_readers_grep(make_system: Any, make_event: Any,
                                                   tmp_path: Any,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    system = _system(make_system, tmp_path, 1)
    with caplog.at_level(logging.WARNING, logger="geplug.dump"):
        (path,) = _exception(system, make_event)
    assert f"dump exception to file {path}" in caplog.text
    assert "extra-info/data-dump/0/" in caplog.text


def test_level_1_logs_every_tensor_description(make_system: Any, make_event: Any,
                                               tmp_path: Any,
                                               caplog: pytest.LogCaptureFixture) -> None:
    system = _system(make_system, tmp_path, 1)
    with caplog.at_level(logging.WARNING, logger="geplug.dump"):
        _exception(system, make_event)
    assert "node_name:block/Conv" in caplog.text
    assert "input[0] dtype:float16, shape:[2, 2], format:ND" in caplog.text
    assert "output[0] dtype:float32, shape:[3], format:ND" in caplog.text


def test_level_2_logs_only_the_dump_file(make_system: Any, make_event: Any, tmp_path: Any,
                                         caplog: pytest.LogCaptureFixture) -> None:
    system = _system(make_system, tmp_path, 2)
    with caplog.at_level(logging.WARNING, logger="geplug.dump"):
        _exception(system, make_event)
    assert "dump exception to file" in caplog.text and "input[0]" not in caplog.text


def test_missing_directory_falls_back_to_the_environment_priorities(
    make_system: Any, make_event: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASCEND_WORK_PATH", str(tmp_path / "work"))
    monkeypatch.delenv("NPU_COLLECT_PATH", raising=False)
    monkeypatch.delenv("ASCEND_DUMP_SCENE", raising=False)
    system = make_system(resolved={"exception_dump_level": 2})
    (path,) = _exception(system, make_event)
    assert path.startswith(str(tmp_path / "work" / "extra-info" / "data-dump" / "0") + os.sep)


def test_ascend_dump_scene_wins_over_the_option_in_resolution(
    make_system: Any, make_event: Any, tmp_path: Any, plain_product: Any
) -> None:
    from geplug.config import SessionConfig, resolve

    env = {"ASCEND_DUMP_SCENE": "aic_err_brief_dump", "ASCEND_DUMP_PATH": str(tmp_path / "scene")}
    resolved = resolve(SessionConfig(enable_exception_dump=0), plain_product, env=env,
                       cwd=str(tmp_path))
    assert resolved.source("enable_exception_dump") == "environment ASCEND_DUMP_SCENE"
    system = make_system(env=env, resolved={"exception_dump_level": 0,
                                            "exception_dump_dir": resolved.exception_dump_dir})
    (path,) = _exception(system, make_event)
    assert os.path.dirname(path) == str(tmp_path / "scene" / "extra-info" / "data-dump" / "0")
    assert len(read_dump(path).spaces) == 2  # brief = the lite level: workspace and tiling


@pytest.mark.parametrize(("level", "env", "expected_level", "root"), [
    (1, {"NPU_COLLECT_PATH": "/c", "ASCEND_WORK_PATH": "/w"}, 1, "/c"),
    (1, {"ASCEND_WORK_PATH": "/w"}, 1, "/w"),
    (1, {}, 1, "/cwd"),
    (2, {"NPU_COLLECT_PATH": "/c", "ASCEND_WORK_PATH": "/w"}, 1, "/c"),
    (2, {"ASCEND_WORK_PATH": "/w"}, 2, "/w"),
    (2, {}, 2, "/cwd"),
    (0, {"NPU_COLLECT_PATH": "/c"}, 1, "/c"),
    (0, {}, 0, None),
    (0, {"ASCEND_DUMP_SCENE": "aic_err_brief_dump", "ASCEND_DUMP_PATH": "/d",
         "NPU_COLLECT_PATH": "/c"}, 2, "/d"),
    (1, {"ASCEND_DUMP_SCENE": "aic_err_norm_dump", "ASCEND_WORK_PATH": "/w"}, 1, "/w"),
])
def test_exception_dump_location_priorities(level: int, env: dict[str, str],
                                            expected_level: int, root: str | None) -> None:
    location = exception_dump_location(level, env, 5, cwd="/cwd")
    got_level, directory = location.level, location.directory
    assert got_level == expected_level
    if root is None:
        assert directory is None
    else:
        assert directory == os.path.join(root, "extra-info", "data-dump", "5")
