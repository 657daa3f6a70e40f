"""initialize_system's ConfigError carries the RankTableError as its cause (rank-table
problems can be told apart); other configuration errors carry none."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import geplug
from geplug.errors import ConfigError, RankTableError
from geplug.plugin import PluginManager
from geplug.runtime import api

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")


@pytest.fixture
def manager() -> Iterator[PluginManager]:
    manager = PluginManager().load()
    yield manager
    while api._current:
        api._current[-1].shutdown()


def test_bad_rank_table_error_is_chained_as_cause(manager: PluginManager,
                                                  tmp_path: Path) -> None:
    env = {"RANK_TABLE_FILE": str(tmp_path / "missing.json")}
    with pytest.raises(ConfigError) as info:
        geplug.initialize_system(product="atlas_a2", manager=manager, env=env)
    assert isinstance(info.value.__cause__, RankTableError)


def test_config_error_without_rank_table_has_no_cause(manager: PluginManager) -> None:
    with pytest.raises(ConfigError) as info:
        geplug.initialize_system(product="atlas_a2", config={"op_debug_level": 9},
                                 manager=manager, env={})
    assert info.value.__cause__ is None
