"""The PROF_* directory layout, names and metadata (formats.md §6.1, §6.2, §6.8)."""

from __future__ import annotations

import json
import os

from prof_helpers import make_system, prof_dir, run

from geplug.profiling.layout import PATTERNS


def test_prof_directory_name_matches_the_reader_pattern(manager, tmp_path):
    run(manager, tmp_path)
    name = os.path.basename(prof_dir(tmp_path))
    assert PATTERNS["prof_dir"].match(name)
    assert len(name.split("_")[3]) == 16 and name.split("_")[3].isupper()


def test_prof_directory_has_device_host_output_and_analyze(manager, tmp_path):
    run(manager, tmp_path)
    root = prof_dir(tmp_path)
    for sub in ("device_0", "host", "mindstudio_profiler_output", "analyze"):
        assert os.path.isdir(os.path.join(root, sub)), sub
    assert os.path.isfile(os.path.join(root, "device_0", "info.json.0"))


def test_output_file_names_match_the_reader_patterns(manager, tmp_path):
    run(manager, tmp_path)
    names = os.listdir(os.path.join(prof_dir(tmp_path), "mindstudio_profiler_output"))
    assert any(PATTERNS["timeline"].match(n) for n in names)
    assert any(PATTERNS["op_summary"].match(n) for n in names)
    assert {n.rsplit("_", 1)[0] for n in names} >= {"op_statistic", "task_time", "msprof"}


def test_info_json_carries_rank_host_and_device_info(manager, tmp_path):
    system = run(manager, tmp_path)
    with open(os.path.join(prof_dir(tmp_path), "device_0", "info.json.0")) as fh:
        info = json.load(fh)
    assert info["rank_id"] == -1
    assert info["hostUid"]
    dev = info["DeviceInfo"][0]
    assert dev["ai_core_num"] == system.product.compute.ai_cores
    assert dev["aic_frequency"] == str(system.product.compute.clock_mhz)


def test_output_option_places_prof_directory_under_it(manager, tmp_path):
    target = tmp_path / "nested" / "out"
    run(manager, target)
    assert os.path.dirname(prof_dir(target)) == str(target)


def test_events_are_on_disk_before_shutdown(manager, tmp_path):
    from geplug.profiling.plugin import session_for

    system = make_system(manager, tmp_path)
    from prof_helpers import drive

    drive(system, 2)
    session = session_for(system)
    assert session is not None
    session.tasks.tasks._fh.flush()
    raw = os.path.join(prof_dir(tmp_path), "device_0", "data", "task_time.data.0.slice_0")
    with open(raw) as fh:
        assert len(fh.readlines()) == 2 * 5
    system.shutdown()


def test_no_temporary_files_remain_after_shutdown(manager, tmp_path):
    run(manager, tmp_path, hccl="on", aicpu="on", runtime_api="on")
    for _root, _dirs, files in os.walk(tmp_path):
        assert not [f for f in files if f.endswith(".tmp")]
