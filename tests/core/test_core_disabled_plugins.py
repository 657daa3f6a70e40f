"""A disabled or skipped plugin is named as such when its product or backend is asked for."""

from __future__ import annotations

import warnings

import pytest

from geplug.errors import UnknownProductError
from geplug.plugin import DISABLE_ENV, PluginManager, PluginNameWarning, PluginSkippedWarning
from geplug.testing.samples import card_files, minimal_toml

pytestmark = pytest.mark.usefixtures("entry_points_only")

BACKEND_HOOKS = """\
from geplug import hookimpl
GEPLUG_PLUGIN_API = 1


@hookimpl
def geplug_init_system(system):
    return object()
"""


def _install_card(fake_distribution, package: str, socs: tuple[str, ...] = ("CardSoC1",),
                  **kwargs) -> None:
    fake_distribution(f"fake-{package}", version="1.0",
                      entry_points={package: f"{package}.hooks"},
                      files=card_files(package, minimal_toml(package, socs), **kwargs))


def _install_backend(fake_distribution, package: str = "mybackend") -> None:
    fake_distribution(f"fake-{package}", version="3.1",
                      entry_points={package: f"{package}.hooks"},
                      files={f"{package}/__init__.py": "", f"{package}/hooks.py": BACKEND_HOOKS})


def test_product_of_a_disabled_plugin_is_reported_as_disabled(
    geplug_fake_distribution, monkeypatch
) -> None:
    _install_card(geplug_fake_distribution, "goodcard")
    monkeypatch.setenv(DISABLE_ENV, "goodcard")
    with pytest.raises(UnknownProductError) as info:
        PluginManager().load().products().get("goodcard")
    message = str(info.value)
    assert "installed but disabled by GEPLUG_DISABLE_PLUGINS" in message
    assert "'goodcard' (fake-goodcard 1.0)" in message
    assert "unknown product" not in message


def test_soc_string_of_a_disabled_plugin_is_reported_as_disabled(
    geplug_fake_distribution, monkeypatch
) -> None:
    _install_card(geplug_fake_distribution, "goodcard", socs=("CardSoC7",))
    monkeypatch.setenv(DISABLE_ENV, "goodcard")
    with pytest.raises(UnknownProductError, match="disabled by GEPLUG_DISABLE_PLUGINS"):
        PluginManager().load().products().get("cardsoc7")


def test_product_of_a_plugin_failing_to_import_says_it_was_skipped(
        geplug_fake_distribution) -> None:
    _install_card(geplug_fake_distribution, "brokencard", hooks="raise RuntimeError('kaboom')\n")
    with pytest.warns(PluginSkippedWarning):
        registry = PluginManager().load().products()
    with pytest.raises(UnknownProductError, match=r"installed but was skipped.*kaboom"):
        registry.get("brokencard")


def test_really_unknown_product_still_names_the_closest(
        geplug_fake_distribution, monkeypatch) -> None:
    _install_card(geplug_fake_distribution, "goodcard")
    _install_card(geplug_fake_distribution, "othercard", socs=("OtherSoC1",))
    monkeypatch.setenv(DISABLE_ENV, "othercard")
    with pytest.raises(UnknownProductError, match=r"unknown product 'goodcrd'.*'goodcard'"):
        PluginManager().load().products().get("goodcrd")


def test_backend_hint_names_a_disabled_backend(geplug_fake_distribution, monkeypatch) -> None:
    _install_backend(geplug_fake_distribution)
    _install_card(geplug_fake_distribution, "goodcard")
    monkeypatch.setenv(DISABLE_ENV, "mybackend,goodcard")
    hint = PluginManager().load().backend_hint()
    assert "plugin 'mybackend' (fake-mybackend 3.1) is installed but disabled" in hint
    assert "goodcard" not in hint  # a product plugin is not a backend


def test_backend_hint_without_a_disabled_backend_says_install(geplug_fake_distribution) -> None:
    _install_card(geplug_fake_distribution, "goodcard")
    assert PluginManager().load().backend_hint() == "install geplug-simulator"


def test_backend_hint_for_a_named_backend_explains_that_one(
    geplug_fake_distribution, monkeypatch
) -> None:
    _install_backend(geplug_fake_distribution)
    monkeypatch.setenv(DISABLE_ENV, "mybackend")
    manager = PluginManager().load()
    assert "disabled by GEPLUG_DISABLE_PLUGINS" in manager.backend_hint("mybackend")
    assert manager.backend_hint("notinstalled") == ""


def test_disabled_report_lists_the_blocked_plugins(geplug_fake_distribution, monkeypatch) -> None:
    _install_card(geplug_fake_distribution, "goodcard")
    monkeypatch.setenv(DISABLE_ENV, "goodcard")
    names = [r.name for r in PluginManager().load().disabled_report()]
    assert names == ["goodcard"]


def test_disable_name_matching_no_plugin_warns_with_the_closest(
    geplug_fake_distribution, monkeypatch
) -> None:
    _install_card(geplug_fake_distribution, "goodcard")
    monkeypatch.setenv(DISABLE_ENV, "goodcrd")
    with pytest.warns(PluginNameWarning, match=r"'goodcrd'.*matches no installed plugin.*"
                                               r"did you mean 'goodcard'"):
        PluginManager().load()


def test_disable_name_matching_a_plugin_does_not_warn(
        geplug_fake_distribution, monkeypatch) -> None:
    _install_card(geplug_fake_distribution, "goodcard")
    monkeypatch.setenv(DISABLE_ENV, "goodcard,dump")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PluginNameWarning)
        PluginManager().load()


def test_initialize_system_names_the_disabled_simulator(monkeypatch) -> None:
    from importlib import metadata

    import geplug
    from geplug.errors import BackendError
    from geplug.testing.installed import installed_registry

    monkeypatch.undo()  # the real entry points (entry_points_only patched them away)
    try:
        metadata.distribution("geplug-simulator")
    except metadata.PackageNotFoundError:
        pytest.skip("geplug-simulator is not installed")
    serving = installed_registry().supporting("runtime.initialize_system")
    if not serving:
        pytest.skip("no installed product supports initialize_system")
    product = serving[0].name
    # every other backend that could serve is disabled too (geplug-torch serves every product
    # where torch is installed), so the refusal must name the disabled simulator
    disabled = ["simulator"]
    try:
        metadata.distribution("geplug-torch")
        disabled.append("torch")
    except metadata.PackageNotFoundError:
        pass
    monkeypatch.setenv(DISABLE_ENV, ",".join(disabled))
    with pytest.raises(BackendError) as info:
        geplug.initialize_system(product=product, manager=PluginManager().load())
    assert "'simulator'" in str(info.value)
    assert "installed but disabled by GEPLUG_DISABLE_PLUGINS" in str(info.value)
