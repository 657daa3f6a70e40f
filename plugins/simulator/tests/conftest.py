"""Fixtures of the simulator tests, and the ``conformance`` marker.

Tests marked ``conformance`` (the full onnx backend node-test run, about 20 s) are skipped
unless selected: ``pytest -m conformance plugins/simulator`` or ``GEPLUG_ONNX_CONFORMANCE=1``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from sim_helpers import Recorder

from geplug.plugin import PluginManager

CONFORMANCE_ENV = "GEPLUG_ONNX_CONFORMANCE"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "conformance: the full onnx backend node-test run (~20 s); runs with "
        f"-m conformance or {CONFORMANCE_ENV}=1",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "conformance" in (config.getoption("markexpr", "") or "") or \
            os.environ.get(CONFORMANCE_ENV) == "1":
        return
    skip = pytest.mark.skip(reason=f"the full onnx conformance run: select it with "
                                   f"-m conformance or {CONFORMANCE_ENV}=1")
    for item in items:
        if item.get_closest_marker("conformance") is not None:
            item.add_marker(skip)


@pytest.fixture
def recorder() -> Iterator[tuple[PluginManager, Recorder]]:
    """A manager with only the recording plugin (no built-in writers)."""
    manager = PluginManager().load(builtins=False)
    rec = Recorder()
    manager.register(rec.impl, "recorder")
    yield manager, rec
