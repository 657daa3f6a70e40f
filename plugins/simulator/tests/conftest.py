"""Fixtures of the simulator tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sim_helpers import Recorder

from geplug.plugin import PluginManager


@pytest.fixture
def recorder() -> Iterator[tuple[PluginManager, Recorder]]:
    """A manager with only the recording plugin (no built-in writers)."""
    manager = PluginManager().load(builtins=False)
    rec = Recorder()
    manager.register(rec.impl, "recorder")
    yield manager, rec
