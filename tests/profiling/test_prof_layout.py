"""The PROF_* directory layout, names and metadata (formats.md §6.1, §6.2, §6.8)."""

from __future__ import annotations

import json
import os
import re

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


def test_info_json_carries_rank_host_and_device_info(manager, tmp_path, geplug_product):
    run(manager, tmp_path, geplug_product, power="on")
    with open(os.path.join(prof_dir(tmp_path), "device_0", "info.json.0")) as fh:
        info = json.load(fh)
    assert info["rank_id"] == -1
    assert info["hostUid"]
    dev = info["DeviceInfo"][0]
    assert dev["id"] == 0
    assert dev["ai_core_num"] == geplug_product.compute.ai_cores
    split = geplug_product.profiling.split_cores
    assert dev["aiv_num"] == (geplug_product.compute.vector_cores if split else 0)
    assert dev["aic_frequency"] == str(geplug_product.compute.clock_mhz)
    assert info["platform_version"] in geplug_product.soc_versions
    assert info["profiling_options"]["power"] == "on"  # accepted, recorded, no other effect


def test_every_name_written_matches_the_reader_patterns(manager, tmp_path):
    run(manager, tmp_path, training_trace="on", hccl="on", aicpu="on", l2="on",
        runtime_api="on", sys_hardware_mem_freq="50")
    root = prof_dir(tmp_path)
    ts17 = os.path.basename(root).split("_")[2]
    device_dirs = [d for d in os.listdir(root) if d.startswith("device_")]
    assert device_dirs and all(PATTERNS["device_dir"].match(d) for d in device_dirs)
    infos = [n for n in os.listdir(os.path.join(root, "device_0")) if n.startswith("info")]
    assert infos and all(PATTERNS["device_info"].match(n) for n in infos)
    names = os.listdir(os.path.join(root, "mindstudio_profiler_output"))
    assert len(names) >= 10
    for name in names:
        match = re.match(r"^([a-z_0-9]+)_(\d{14})\.(csv|json)$", name)
        assert match, name
        assert match.group(2) == ts17[:14], name  # one ts14, the PROF_* directory's own
    assert sum(bool(PATTERNS["timeline"].match(n)) for n in names) == 1
    assert sum(bool(PATTERNS["op_summary"].match(n)) for n in names) == 1


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
    session.tasks.tasks.flush()  # a chunk is written once full; flush the partial one
    raw = os.path.join(prof_dir(tmp_path), "device_0", "data", "task_time.data.0.slice_0")
    assert os.path.getsize(raw) == 2 * 5 * 5 * 8  # 10 tasks, five float64 fields each
    system.shutdown()


def test_no_temporary_files_remain_after_shutdown(manager, tmp_path):
    run(manager, tmp_path, hccl="on", aicpu="on", runtime_api="on")
    for _root, _dirs, files in os.walk(tmp_path):
        assert not [f for f in files if f.endswith(".tmp")]
