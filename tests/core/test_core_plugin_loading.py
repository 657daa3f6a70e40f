"""Entry-point loading through fake installed distributions, and the load policy."""

from __future__ import annotations

import pytest

from geplug.errors import PluginConflictError
from geplug.plugin import DISABLE_ENV, PluginManager, PluginSkippedWarning
from geplug.testing.samples import card_files, minimal_toml

pytestmark = pytest.mark.usefixtures("entry_points_only")


def _install(fake_distribution, dist: str, package: str, toml: str | None = None, *,
             entry: str | None = None, version: str = "1.0", **kwargs) -> None:
    fake_distribution(
        dist, version=version,
        entry_points={entry or package: f"{package}.hooks"},
        files=card_files(package, toml if toml is not None else minimal_toml(package,
                                                                             (package,)), **kwargs),
    )


def _record(manager: PluginManager, name: str):
    return next(r for r in manager.report() if r.name == name)


def test_plugin_of_an_installed_distribution_is_loaded(geplug_fake_distribution) -> None:
    _install(geplug_fake_distribution, "fake-good", "goodcard", version="2.5")
    manager = PluginManager().load()
    record = _record(manager, "goodcard")
    assert (record.status, record.distribution, record.version) == ("loaded", "fake-good", "2.5")
    assert record.products == ("goodcard",)
    assert manager.products().get("goodcard").distribution == "fake-good 2.5"


def test_builtin_plugins_are_registered_before_entry_points(geplug_fake_distribution) -> None:
    _install(geplug_fake_distribution, "fake-good", "goodcard")
    report = PluginManager().load().report()
    origins = [r.origin for r in report]
    assert origins.index("entry point") > max(i for i, o in enumerate(origins) if o == "builtin")


def test_plugin_failing_to_import_is_skipped_and_others_load(geplug_fake_distribution) -> None:
    _install(geplug_fake_distribution, "fake-good", "goodcard")
    _install(geplug_fake_distribution, "fake-broken", "brokencard",
             hooks="raise RuntimeError('kaboom at import')\n")
    with pytest.warns(PluginSkippedWarning, match=r"'brokencard'.*fake-broken 1\.0.*kaboom"):
        manager = PluginManager().load()
    assert _record(manager, "brokencard").status == "skipped"
    assert "kaboom at import" in _record(manager, "brokencard").reason
    assert manager.products().names() == ["goodcard"]


def test_misspelled_hook_name_is_refused_loudly(geplug_fake_distribution) -> None:
    body = "@hookimpl\ndef geplug_capabilites():\n    return []\n"
    _install(geplug_fake_distribution, "fake-typo", "typocard", body=body)
    with pytest.warns(PluginSkippedWarning, match=r"unknown hook 'geplug_capabilites'.*"
                                                  r"did you mean 'geplug_capabilities'"):
        manager = PluginManager().load()
    assert _record(manager, "typocard").status == "skipped"
    assert "typocard" not in manager.loaded()


def test_hook_with_a_wrong_argument_name_is_refused(geplug_fake_distribution) -> None:
    body = "@hookimpl\ndef geplug_dump(evnt):\n    return None\n"
    _install(geplug_fake_distribution, "fake-args", "argscard", body=body)
    with pytest.warns(PluginSkippedWarning, match="invalid hook implementation"):
        manager = PluginManager().load()
    assert _record(manager, "argscard").status == "skipped"


def test_capabilities_hook_raising_skips_the_plugin(geplug_fake_distribution) -> None:
    body = "@hookimpl\ndef geplug_capabilities():\n    raise ValueError('no data today')\n"
    _install(geplug_fake_distribution, "fake-raise", "raisecard", body=body)
    _install(geplug_fake_distribution, "fake-good", "goodcard")
    with pytest.warns(PluginSkippedWarning, match=r"geplug_capabilities raised ValueError"):
        products = (manager := PluginManager().load()).products()
    assert products.names() == ["goodcard"]
    assert _record(manager, "raisecard").status == "skipped"


def test_invalid_capabilities_skip_the_plugin_naming_file_and_key(geplug_fake_distribution) -> None:
    bad = minimal_toml("badcard", ("BadSoC",)).replace('l2 = "l2"', "l2 = 2")
    _install(geplug_fake_distribution, "fake-bad", "badcard", bad)
    _install(geplug_fake_distribution, "fake-good", "goodcard")
    with pytest.warns(PluginSkippedWarning, match=r"capabilities\.toml.*profiling\.l2: expected "
                                                  r"a string, got 2"):
        products = (manager := PluginManager().load()).products()
    assert products.names() == ["goodcard"]
    assert "profiling.l2" in _record(manager, "badcard").reason


def test_incompatible_plugin_api_version_is_refused(geplug_fake_distribution) -> None:
    _install(geplug_fake_distribution, "fake-future", "futurecard", api=99)
    with pytest.warns(PluginSkippedWarning, match=r"incompatible plugin API "
                                                  r"\(GEPLUG_PLUGIN_API = 99\)"):
        manager = PluginManager().load()
    assert _record(manager, "futurecard").status == "skipped"
    assert "futurecard" not in manager.products()


def test_plugin_without_api_version_is_refused(geplug_fake_distribution) -> None:
    hooks = "from geplug import hookimpl\n@hookimpl\ndef geplug_capabilities():\n    return []\n"
    _install(geplug_fake_distribution, "fake-noapi", "noapicard", hooks=hooks)
    with pytest.warns(PluginSkippedWarning, match="no GEPLUG_PLUGIN_API"):
        manager = PluginManager().load()
    assert _record(manager, "noapicard").status == "skipped"


def test_two_plugins_declaring_one_product_raise_one_conflict(geplug_fake_distribution) -> None:
    _install(geplug_fake_distribution, "fake-one", "cardone", minimal_toml("shared", ("S1",)),
             version="1.1")
    _install(geplug_fake_distribution, "fake-two", "cardtwo", minimal_toml("shared", ("S2",)),
             version="2.2")
    manager = PluginManager().load()
    with pytest.raises(PluginConflictError) as info:
        manager.products()
    assert "fake-one 1.1" in str(info.value) and "fake-two 2.2" in str(info.value)
    assert info.value.providers == ("fake-one 1.1", "fake-two 2.2")


def test_same_entry_point_name_from_two_distributions_is_a_conflict(
        geplug_fake_distribution) -> None:
    _install(geplug_fake_distribution, "fake-orig", "origcard", minimal_toml("dup", ("D1",)),
             entry="dup")
    _install(geplug_fake_distribution, "fake-fork", "forkcard", minimal_toml("dup", ("D2",)),
             entry="dup")
    with pytest.raises(PluginConflictError, match=r"fake-fork 1\.0.*fake-orig 1\.0|"
                                                  r"fake-orig 1\.0.*fake-fork 1\.0"):
        PluginManager().load().products()


def test_conflict_is_kept_by_the_report_instead_of_raised(geplug_fake_distribution) -> None:
    _install(geplug_fake_distribution, "fake-one", "cardone", minimal_toml("shared", ("S1",)))
    _install(geplug_fake_distribution, "fake-two", "cardtwo", minimal_toml("shared", ("S2",)))
    manager = PluginManager().load()
    manager.report()
    assert isinstance(manager.conflict, PluginConflictError)


def test_disable_variable_blocks_named_plugins(geplug_fake_distribution, monkeypatch) -> None:
    _install(geplug_fake_distribution, "fake-good", "goodcard")
    _install(geplug_fake_distribution, "fake-other", "othercard")
    monkeypatch.setenv(DISABLE_ENV, " goodcard , profiling")
    manager = PluginManager().load()
    assert _record(manager, "goodcard").status == "disabled"
    assert _record(manager, "profiling").status == "disabled"
    assert DISABLE_ENV in _record(manager, "goodcard").reason
    assert manager.products().names() == ["othercard"]


def test_notify_hook_raising_disables_only_that_plugin() -> None:
    import types

    from geplug import hookimpl

    calls: list[str] = []

    def plugin(name: str, fail: bool) -> types.SimpleNamespace:
        @hookimpl
        def geplug_profile(event: object) -> None:
            calls.append(name)
            if fail:
                raise RuntimeError("collector crashed")

        return types.SimpleNamespace(GEPLUG_PLUGIN_API=1, geplug_profile=geplug_profile)

    manager = PluginManager().load(builtins=False, entry_points=False)
    manager.register(plugin("bad", True), "bad")
    manager.register(plugin("good", False), "good")
    with pytest.warns(PluginSkippedWarning, match="geplug_profile raised RuntimeError"):
        manager.call_each("geplug_profile", event=object())
    manager.call_each("geplug_profile", event=object())
    assert calls.count("good") == 2 and calls.count("bad") == 1
    assert _record(manager, "bad").status == "skipped"


def test_registering_a_name_twice_keeps_the_first() -> None:
    import types

    first = types.SimpleNamespace(GEPLUG_PLUGIN_API=1)
    manager = PluginManager().load(entry_points=False)
    assert manager.register(first, "mine")
    with pytest.warns(PluginSkippedWarning, match="already loaded"):
        assert not manager.register(types.SimpleNamespace(GEPLUG_PLUGIN_API=1), "mine")
    assert manager.pm.get_plugin("mine") is first


def test_a_failing_plugin_flushes_open_systems_before_it_is_disabled(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import types

    from geplug import hookimpl

    flushed: list[object] = []

    @hookimpl
    def geplug_profile(event: object) -> None:
        raise RuntimeError("collector crashed")

    @hookimpl
    def geplug_shutdown_system(system: object) -> None:
        flushed.append(system)

    manager = PluginManager().load(builtins=False, entry_points=False)
    manager.register(types.SimpleNamespace(GEPLUG_PLUGIN_API=1, geplug_profile=geplug_profile,
                                           geplug_shutdown_system=geplug_shutdown_system), "bad")
    open_system = object()
    manager.open_systems.append(open_system)  # the manager's own registry of open systems
    with pytest.warns(PluginSkippedWarning, match="geplug_profile raised RuntimeError"):
        manager.call_each("geplug_profile", event=object())
    assert flushed == [open_system]


def test_a_builtin_writer_failure_is_raised_not_silently_disabled() -> None:
    import types

    from geplug import hookimpl

    @hookimpl
    def geplug_dump(event: object) -> None:
        raise RuntimeError("writer bug")

    manager = PluginManager().load(builtins=False, entry_points=False)
    manager.register(types.SimpleNamespace(GEPLUG_PLUGIN_API=1, geplug_dump=geplug_dump), "dump",
                     origin="builtin")
    with pytest.raises(RuntimeError, match="writer bug"):
        manager.call_each("geplug_dump", event=object())
    assert _record(manager, "dump").status == "loaded"


def test_a_soc_declared_by_two_plugins_is_warned_at_load(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from geplug.plugin.manager import SocConflictWarning
    from geplug.testing.samples import declaring_plugin, minimal_toml

    first, second = tmp_path / "a.toml", tmp_path / "b.toml"
    first.write_text(minimal_toml("card_a", ("SharedSoC", "OnlyA")))
    second.write_text(minimal_toml("card_b", ("SharedSoC",)))
    manager = PluginManager().load(builtins=False, entry_points=False)
    manager.register(declaring_plugin(first), "plug_a")
    manager.register(declaring_plugin(second), "plug_b")
    with pytest.warns(SocConflictWarning, match="'SharedSoC' is declared by several products"):
        registry = manager.products()
    assert registry.get("OnlyA").name == "card_a"  # the other lookups keep working
