"""Fixtures of the core tests (sample sources live in ``geplug.testing.samples``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from geplug.plugin import PluginManager


@pytest.fixture
def write_toml(tmp_path: Path) -> Callable[[str, str], Path]:
    """``write(text, name="capabilities.toml") -> path`` in a fresh directory."""
    counter = iter(range(10_000))

    def write(text: str, name: str = "capabilities.toml") -> Path:
        folder = tmp_path / f"decl{next(counter)}"
        folder.mkdir()
        path = folder / name
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture
def entry_points_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Hide the environment's real product plugins so a test sees only its fake ones."""
    from importlib import metadata

    from geplug.plugin import manager as manager_module

    real = manager_module._entry_points

    def fake_only() -> list[metadata.EntryPoint]:
        return [ep for ep in real() if ep.dist is not None
                and ep.dist.metadata["Name"].startswith("fake-")]

    monkeypatch.setattr(manager_module, "_entry_points", fake_only)
    yield


@pytest.fixture
def use_manager() -> Iterator[Callable[..., PluginManager]]:
    """``use(**plugins)``: a built-ins-only manager plus these plugin objects, made the
    process-wide one (what the CLI and ``geplug.get_product`` use) for the test."""
    from geplug.plugin import PluginManager, reset_manager

    def use(**plugins: object) -> PluginManager:
        manager = PluginManager().load(entry_points=False)
        for name, plugin in plugins.items():
            manager.register(plugin, name, distribution=f"dist-{name}", version="9.9")
        reset_manager(manager)
        return manager

    yield use
    reset_manager(None)
