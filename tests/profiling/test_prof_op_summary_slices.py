"""op_summary beyond the slice size is split into ``op_summary_slice_{n}_{ts14}.csv`` files."""

from __future__ import annotations

import csv
import os
import re

from prof_helpers import drive, make_system, prof_dir

from geplug.profiling import sliced_csv
from geplug.profiling.layout import OUTPUT_DIR
from geplug.profiling.reader import summarize

START_US = 1_700_000_000_000_000.0


def _export(manager, out) -> str:
    system = make_system(manager, out, task_time="l1")
    drive(system, 3, start=START_US)
    system.shutdown()
    return os.path.join(prof_dir(out), OUTPUT_DIR)


def _summary_files(out_dir: str) -> list[str]:
    return sorted(n for n in os.listdir(out_dir) if n.startswith("op_summary_"))


def _rows(path: str) -> list[list[str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.reader(fh))


def test_op_summary_beyond_the_slice_size_is_split_into_numbered_slices(manager, tmp_path,
                                                                         monkeypatch):
    whole_dir = _export(manager, tmp_path / "whole")
    (whole,) = _summary_files(whole_dir)
    header, *rows = _rows(os.path.join(whole_dir, whole))
    monkeypatch.setattr(sliced_csv, "SLICE_ROWS", 4)
    sliced_dir = _export(manager, tmp_path / "sliced")
    found = [re.fullmatch(r"op_summary_slice_(\d+)_(\d{14})\.csv", n)
             for n in _summary_files(sliced_dir)]
    assert all(found)
    count = -(-len(rows) // 4)
    assert count > 1
    assert sorted(int(m[1]) for m in found if m) == list(range(count))
    assert len({m[2] for m in found if m}) == 1
    by_index = {int(m[1]): m[0] for m in found if m}
    parts = [_rows(os.path.join(sliced_dir, by_index[i])) for i in range(count)]
    assert all(p[0] == header and 1 <= len(p) - 1 <= 4 for p in parts)
    assert [r for p in parts for r in p[1:]] == rows


def test_op_summary_of_exactly_the_slice_size_stays_one_file(manager, tmp_path, monkeypatch):
    whole_dir = _export(manager, tmp_path / "whole")
    (whole,) = _summary_files(whole_dir)
    monkeypatch.setattr(sliced_csv, "SLICE_ROWS", len(_rows(os.path.join(whole_dir, whole))) - 1)
    (exact,) = _summary_files(_export(manager, tmp_path / "exact"))
    assert re.fullmatch(r"op_summary_\d{14}\.csv", exact)


def test_profile_summary_counts_the_tasks_of_every_slice(manager, tmp_path, monkeypatch):
    whole = summarize(os.path.dirname(_export(manager, tmp_path / "whole")))
    monkeypatch.setattr(sliced_csv, "SLICE_ROWS", 3)
    sliced = summarize(os.path.dirname(_export(manager, tmp_path / "sliced")))
    assert sliced["tasks"] == whole["tasks"] > 3
    assert sliced["total_time_us"] == whole["total_time_us"]
