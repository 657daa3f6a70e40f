"""Exports keep profiling as it resolves: front-end defaults that change behaviour are written
explicitly (TF -> GE) or left out with a warning (GE -> TF); export warnings read well."""

from __future__ import annotations

from typing import Any

import pytest

from geplug.config import ProfilingOptions, SessionConfig, export, read_export, resolve
from geplug.config.export import export_report

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")

_CASES = [
    ("tf", "ge", SessionConfig(front_end="tf", profiling_mode=True)),
    ("python", "ge", SessionConfig(front_end="python", profiling_mode=True)),
    ("ge", "tf", SessionConfig(front_end="ge", profiling_mode=True)),
    ("tf", "ge", SessionConfig(front_end="tf", profiling_mode=True,
                               profiling_options=ProfilingOptions(task_trace="on"))),
    ("ge", "tf", SessionConfig(front_end="ge", profiling_mode=True,
                               profiling_options=ProfilingOptions(task_trace="on"))),
    ("tf", "ge", SessionConfig(front_end="tf", profiling_mode=False)),
]


@pytest.mark.parametrize(("front_end", "to", "config"), _CASES)
@pytest.mark.parametrize("env", [{}, {"PROFILING_MODE": "true"}])
def test_export_read_back_resolves_to_the_same_profiling(
        a2: Any, tmp_path: Any, front_end: str, to: str, config: SessionConfig,
        env: dict[str, str]) -> None:
    back = read_export(export(config, a2, to), to)
    before = resolve(config, a2, env=env, cwd=str(tmp_path))
    after = resolve(back, a2, env=env, cwd=str(tmp_path))
    assert (after.config.profiling_mode, after.config.profiling_options) == \
        (before.config.profiling_mode, before.config.profiling_options)


def test_tf_profiling_default_is_written_into_the_ge_map(a2: Any) -> None:
    text = export(SessionConfig(front_end="tf", profiling_mode=True), a2, "ge")
    assert '"ge.exec.profilingMode": "1"' in text and "ge.exec.profilingOptions" in text


def test_ge_profiling_mode_without_options_is_left_out_of_tf_with_a_warning(a2: Any) -> None:
    report = export_report(SessionConfig(front_end="ge", profiling_mode=True), a2, "tf")
    assert "profiling_mode" not in report.values
    assert [p.option for p in report.problems] == ["profiling_mode"]


def test_export_warning_has_no_article_before_the_target(a2: Any) -> None:
    report = export_report(SessionConfig(op_debug_level=9), a2, "atc")
    tf = export_report(SessionConfig(front_end="ge",
                                     op_select_implmode="enable_float_32_execution"), a2, "tf")
    messages = [p.message for p in (*report.problems, *tf.problems)]
    assert messages and not any("no the " in m for m in messages)
    assert any("no TF adapter equivalent" in m for m in messages)
