"""geplug's isolated hook loops call implementations in pluggy's order; wrappers are refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from geplug import hookimpl
from geplug.plugin import PluginManager
from geplug.plugin.manager import PluginSkippedWarning

NOTIFY = {
    "geplug_dump": "event",
    "geplug_profile": "event",
    "geplug_shutdown_system": "system",
}


def _plugin(hook: str, label: str, calls: list[str], **marks: bool) -> object:
    def on_event(event: Any) -> str:
        calls.append(label)
        return label

    def on_system(system: Any) -> str:
        calls.append(label)
        return label

    impl = on_system if NOTIFY[hook] == "system" else on_event
    namespace = {"GEPLUG_PLUGIN_API": 1, hook: hookimpl(**marks)(impl)}
    return type(f"Plugin_{label}", (), namespace)()


def _manager(hook: str, calls: list[str]) -> PluginManager:
    manager = PluginManager().load(builtins=False, entry_points=False)
    for label, marks in (("plain1", {}), ("first", {"tryfirst": True}),
                         ("last", {"trylast": True}), ("plain2", {})):
        assert manager.register(_plugin(hook, label, calls, **marks), label,
                                distribution=f"dist-{label}", version="1")
    return manager


@pytest.mark.parametrize("hook", sorted(NOTIFY))
def test_isolated_loop_calls_in_pluggys_order(hook: str) -> None:
    pluggy_calls: list[str] = []
    manager = _manager(hook, pluggy_calls)
    getattr(manager.hook, hook)(**{NOTIFY[hook]: object()})
    expected = list(pluggy_calls)
    assert expected == ["first", "plain2", "plain1", "last"]
    pluggy_calls.clear()
    if hook == "geplug_shutdown_system":
        assert manager.call_all(hook, system=object()) == []
    else:
        assert manager.call_each(hook, event=object()) == expected
    assert pluggy_calls == expected


@pytest.mark.parametrize("hook", sorted(NOTIFY))
@pytest.mark.parametrize("kind", ["wrapper", "hookwrapper"])
def test_a_wrapper_on_a_notify_hook_is_refused_at_load(hook: str, kind: str) -> None:
    def on_event(event: Any) -> Iterator[None]:
        yield

    def on_system(system: Any) -> Iterator[None]:
        yield

    impl = on_system if NOTIFY[hook] == "system" else on_event
    plugin = type("Wrapping", (), {"GEPLUG_PLUGIN_API": 1,
                                   hook: hookimpl(**{kind: True})(impl)})()
    manager = PluginManager().load(builtins=False, entry_points=False)
    with pytest.warns(PluginSkippedWarning, match=rf"'wrapping'.*dist-wrap.*{hook}.*wrapper"):
        assert not manager.register(plugin, "wrapping", distribution="dist-wrap", version="2")
    assert "wrapping" not in manager.loaded()
    assert manager.call_each(hook, **{NOTIFY[hook]: object()}) == []
    record = next(r for r in manager.report() if r.name == "wrapping")
    assert record.status == "skipped" and hook in record.reason


def test_a_wrapper_on_compile_is_honoured_by_pluggy() -> None:
    seen: list[str] = []

    class Wrap:
        GEPLUG_PLUGIN_API = 1

        @hookimpl(wrapper=True)
        def geplug_compile(self, system: Any, model: Any, options: Any) -> Iterator[None]:
            seen.append("before")
            result = yield
            seen.append("after")
            return result

    class Backend:
        GEPLUG_PLUGIN_API = 1

        @hookimpl
        def geplug_compile(self, system: Any, model: Any, options: Any) -> str:
            return "compiled"

    manager = PluginManager().load(builtins=False, entry_points=False)
    assert manager.register(Backend(), "backend") and manager.register(Wrap(), "wrap")
    assert manager.hook.geplug_compile(system=None, model=None, options={}) == "compiled"
    assert seen == ["before", "after"]
