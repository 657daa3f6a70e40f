"""One resolved configuration (issue 9 item 5): the dump and profiling plugins act on exactly
the values :func:`geplug.config.resolve` reports, and derive no default of their own."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from prof_helpers import card, manager  # noqa: F401  (fixture)

from geplug.config import SessionConfig, resolve
from geplug.config.resolve_profiling import Effective
from geplug.dump.plugin import state_for
from geplug.profiling.plugin import session_for
from geplug.runtime.system import System

SCENARIOS: list[tuple[dict[str, Any], dict[str, str]]] = [
    ({"profiling_mode": True}, {}),
    ({"profiling_mode": True, "profiling_options": {
        "output": "prof", "task_time": "l0", "aic_metrics": "Memory", "host_sys": "cpu",
        "storage_limit": "500MB"}}, {}),
    ({"front_end": "ge"}, {"PROFILING_MODE": "true", "PROFILING_OPTIONS": '{"task_trace": "on"}',
                           "ASCEND_WORK_PATH": "work"}),
    ({"enable_dump": True, "dump_path": "d"}, {"ASCEND_DEVICE_ID": "2"}),
    ({"enable_dump_debug": True, "dump_path": "d", "dump_debug_mode": "aicore_overflow",
      "enable_exception_dump": 1}, {"ASCEND_WORK_PATH": "w"}),
    ({"enable_dump": True, "dump_path": "d", "dump_mode": "all", "dump_data": "stats",
      "front_end": "ge"}, {"ASCEND_DUMP_SCENE": "aic_err_brief_dump"}),
]


def _system(plugins: Any, mapping: dict[str, Any], env: dict[str, str], cwd: str) -> System:
    resolved = resolve(SessionConfig.from_mapping(mapping), card(), env=env, cwd=cwd)
    return System(product=card(), config=resolved, manager=plugins)


@pytest.mark.parametrize(("mapping", "env"), SCENARIOS)
def test_dump_plugin_uses_the_resolved_dump_values(manager: Any, tmp_path: Any,  # noqa: F811
                                                   mapping: dict[str, Any],
                                                   env: dict[str, str]) -> None:
    system = _system(manager, mapping, env, str(tmp_path))
    resolved, state = system.config, state_for(system)
    assert state.mode == resolved.config.dump_mode
    assert state.debug_mode == resolved.config.dump_debug_mode
    assert state.stats_only == (resolved.config.dump_data == "stats")
    assert state.exception_level == resolved.exception_dump_level
    assert state.exception_dir == resolved.exception_dump_dir
    assert (state.layout.root if state.layout else None) == resolved.dump_root
    if state.layout is not None:
        assert state.layout.device_id == resolved.device_id
    system.shutdown()


@pytest.mark.parametrize(("mapping", "env"), SCENARIOS)
def test_profiling_plugin_uses_the_resolved_profiling_values(
    manager: Any, tmp_path: Any, mapping: dict[str, Any], env: dict[str, str]  # noqa: F811
) -> None:
    system = _system(manager, mapping, env, str(tmp_path))
    resolved = system.config
    if not resolved.config.profiling_mode:
        assert resolved.profiling is None
        return
    session = session_for(system)
    assert session is not None and session.eff == resolved.profiling
    assert session.eff.output_root == resolved.profiling_output
    system.shutdown()


@pytest.mark.parametrize(("mapping", "env"), SCENARIOS[:3])
def test_every_typed_profiling_value_has_a_source(tmp_path: Any, mapping: dict[str, Any],
                                                  env: dict[str, str]) -> None:
    resolved = resolve(SessionConfig.from_mapping(mapping), card(), env=env, cwd=str(tmp_path))
    missing = [f.name for f in attrs.fields(Effective)
               if not resolved.source(f"profiling.{f.name}")]
    assert missing == []
