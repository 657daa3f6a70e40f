"""Slow plugins are named: ``geplug plugins`` shows each plugin's load time, and a plugin whose
import or ``geplug_capabilities`` exceeds the threshold gets a warning naming it."""

from __future__ import annotations

import textwrap

import pytest

from geplug.plugin import PluginManager
from geplug.plugin.timing import SLOW_DEFAULT_SECONDS, SLOW_ENV, SlowPluginWarning, slow_threshold
from geplug.testing.samples import card_files, minimal_toml

pytestmark = pytest.mark.usefixtures("fake_plugins_only")

_SLOW_HOOKS = textwrap.dedent('''
    import time
    from importlib.resources import files
    from geplug import hookimpl
    from geplug.products import declare
    GEPLUG_PLUGIN_API = 1

    @hookimpl
    def geplug_capabilities():
        time.sleep(0.3)
        return [declare(files("slowcard") / "capabilities.toml")]
''')


def _install_slow(fake_distribution) -> None:  # type: ignore[no-untyped-def]
    fake_distribution("fake-slow", entry_points={"slowcard": "slowcard.hooks"},
                      files=card_files("slowcard", minimal_toml("slowcard", ("SlowSoC1",)),
                                       hooks=_SLOW_HOOKS))


def test_a_plugin_slower_than_the_threshold_is_named(fake_distribution, monkeypatch) -> None:
    _install_slow(fake_distribution)
    monkeypatch.setenv(SLOW_ENV, "0.1")
    with pytest.warns(SlowPluginWarning, match=r"'slowcard' \(fake-slow 1\.0\) is slow: its "
                      r"geplug_capabilities took 0\.\d\d s \(threshold 0\.1 s") as caught:
        manager = PluginManager().load()
        manager.products()
    assert [w.message.plugin for w in caught if isinstance(w.message, SlowPluginWarning)] == [
        "slowcard"]
    record = next(r for r in manager.report() if r.name == "slowcard")
    assert record.load_seconds >= 0.3


def test_a_fast_plugin_is_not_named(fake_distribution, monkeypatch, recwarn) -> None:
    fake_distribution("fake-fast", entry_points={"fastcard": "fastcard.hooks"},
                      files=card_files("fastcard", minimal_toml("fastcard", ("FastSoC1",))))
    monkeypatch.delenv(SLOW_ENV, raising=False)
    PluginManager().load().products()
    assert not [w for w in recwarn if issubclass(w.category, SlowPluginWarning)]


def test_geplug_plugins_shows_load_times_and_names_the_slow_one(
        fake_distribution, monkeypatch, cli) -> None:
    _install_slow(fake_distribution)
    monkeypatch.setenv(SLOW_ENV, "0.1")
    code, out, _err = cli("plugins")
    header = out.splitlines()[0].split()
    assert "LOAD" in header
    row = next(line for line in out.splitlines() if line.startswith("slowcard"))
    assert " ms " in row
    assert "geplug plugin 'slowcard' (fake-slow 1.0) is slow" in out
    assert code == 0


def test_every_command_warns_about_the_slow_plugin(fake_distribution, monkeypatch, cli) -> None:
    _install_slow(fake_distribution)
    monkeypatch.setenv(SLOW_ENV, "0.1")
    _code, _out, err = cli("products")
    assert "geplug: warning: geplug plugin 'slowcard'" in err and "is slow" in err


@pytest.mark.parametrize("raw", ["", "abc", "nan", "-1", "inf"])
def test_a_bad_threshold_falls_back_to_the_default(monkeypatch, raw) -> None:
    monkeypatch.setenv(SLOW_ENV, raw)
    assert slow_threshold() == SLOW_DEFAULT_SECONDS
