"""``PluginManager.call_each`` caches implementations per hook and sees every change."""

from __future__ import annotations

import types
from typing import Any

import pytest

from geplug import hookimpl
from geplug.plugin import PluginManager


def _consumer(calls: list[str], name: str) -> types.SimpleNamespace:
    @hookimpl
    def geplug_profile(event: object) -> str:
        calls.append(name)
        return name

    return types.SimpleNamespace(GEPLUG_PLUGIN_API=1, geplug_profile=geplug_profile)


@pytest.fixture
def manager() -> PluginManager:
    return PluginManager().load(builtins=False, entry_points=False)


def test_call_each_builds_the_implementation_list_once_per_hook(manager, monkeypatch) -> None:
    import pluggy

    manager.register(_consumer([], "a"), "a")
    real = pluggy.HookCaller.get_hookimpls
    builds: list[int] = []

    def counting(self: pluggy.HookCaller) -> Any:
        builds.append(1)
        return real(self)

    monkeypatch.setattr(pluggy.HookCaller, "get_hookimpls", counting)
    for _ in range(3):
        manager.call_each("geplug_profile", event=object())
    assert len(builds) == 1


def test_call_each_sees_a_plugin_registered_after_a_call(manager) -> None:
    calls: list[str] = []
    manager.register(_consumer(calls, "a"), "a")
    manager.call_each("geplug_profile", event=object())
    manager.register(_consumer(calls, "b"), "b")
    assert sorted(manager.call_each("geplug_profile", event=object())) == ["a", "b"]


def test_call_each_forgets_a_plugin_unregistered_directly_on_pluggy(manager) -> None:
    calls: list[str] = []
    manager.register(_consumer(calls, "a"), "a")
    manager.register(_consumer(calls, "b"), "b")
    manager.call_each("geplug_profile", event=object())
    manager.pm.unregister(name="a")
    assert manager.call_each("geplug_profile", event=object()) == ["b"]


def test_call_each_passes_only_the_arguments_an_implementation_takes(manager) -> None:
    seen: list[object] = []

    @hookimpl
    def geplug_compile(model: object) -> None:
        seen.append(model)

    manager.register(types.SimpleNamespace(GEPLUG_PLUGIN_API=1, geplug_compile=geplug_compile),
                     "partial")
    manager.call_each("geplug_compile", system=None, model="m.onnx", options={})
    assert seen == ["m.onnx"]


def test_call_all_sees_a_plugin_registered_after_a_call(manager) -> None:
    calls: list[str] = []
    manager.register(_consumer(calls, "a"), "a")
    manager.call_all("geplug_profile", event=object())
    manager.register(_consumer(calls, "b"), "b")
    manager.call_all("geplug_profile", event=object())
    assert sorted(calls) == ["a", "a", "b"]
