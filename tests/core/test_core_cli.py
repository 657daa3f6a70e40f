"""The ``geplug`` CLI: products, describe, plugins, --version; human output, JSON, exit codes."""

from __future__ import annotations

import json
import types
from collections.abc import Callable, Iterator

import pytest

from geplug import __version__, hookimpl
from geplug.cli.main import main
from geplug.plugin import PluginManager, reset_manager
from geplug.products import declare
from geplug.testing.samples import minimal_toml


def _plugin(*paths: object) -> types.SimpleNamespace:
    @hookimpl
    def geplug_capabilities() -> list:
        return [declare(p) for p in paths]

    return types.SimpleNamespace(GEPLUG_PLUGIN_API=1, geplug_capabilities=geplug_capabilities)


@pytest.fixture
def use_manager() -> Iterator[Callable[..., PluginManager]]:
    """``use(**plugins)``: a built-ins-only manager plus these plugin objects, made global."""

    def use(**plugins: object) -> PluginManager:
        manager = PluginManager().load(entry_points=False)
        for name, plugin in plugins.items():
            manager.register(plugin, name, distribution=f"dist-{name}", version="9.9")
        reset_manager(manager)
        return manager

    yield use
    reset_manager(None)


@pytest.fixture
def two_products(use_manager, write_toml) -> PluginManager:
    big = minimal_toml("big_card", ("Big1", "Big2")).replace(
        '"Memory"]', '"Memory", "MemoryAccess"]').replace(
        "[profiling.frequencies", 'MemoryAccess = ["aicore_time(us)"]\n[profiling.frequencies')
    small = minimal_toml("small_card", ("Small1",)).replace(
        '"4" = [".o", ".json", ".cce", "_compute.json"]', '"4" = [".o", ".json"]').replace(
        '"1" = [".o", ".json", ".cce", "_loc.json"]', '"1" = [".o", ".json"]').replace(
        '"2" = [".o", ".json", ".cce", "_loc.json"]', '"2" = [".o", ".json"]')
    return use_manager(bigplug=_plugin(write_toml(big)), smallplug=_plugin(write_toml(small)))


def test_version_prints_the_core_version(capsys) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"geplug {__version__}"


def test_no_command_is_a_usage_error(capsys) -> None:
    assert main([]) == 2
    assert "usage" in capsys.readouterr().err.lower()


def test_unknown_option_is_a_usage_error(capsys) -> None:
    assert main(["products", "--bogus"]) == 2


def test_products_prints_a_table(two_products, capsys) -> None:
    assert main(["products"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["NAME", "DISPLAY", "NAME"]
    big = next(line for line in lines if line.startswith("big_card"))
    assert "Big1, Big2" in big and "dist-bigplug 9.9" in big and " yes " in big


def test_products_json_lists_identity_and_distribution(two_products, capsys) -> None:
    assert main(["products", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [d["name"] for d in data] == ["big_card", "small_card"]
    assert data[0]["soc_versions"] == ["Big1", "Big2"]
    assert data[0]["initialize_system"] is True
    assert data[0]["distribution"] == "dist-bigplug 9.9"


def test_products_without_product_plugins_says_how_to_install(use_manager, capsys) -> None:
    use_manager()
    assert main(["products"]) == 1
    err = capsys.readouterr().err
    assert "no product plugin is installed" in err and "pip install" in err


def test_products_json_without_products_prints_an_empty_list(use_manager, capsys) -> None:
    use_manager()
    assert main(["products", "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == []


def test_describe_groups_capabilities_by_section(two_products, capsys) -> None:
    assert main(["describe", "big_card"]) == 0
    out = capsys.readouterr().out
    for title in ("Runtime [runtime]", "Precision [precision]", "Profiling [profiling]",
                  "Operator compile debug files [debug]", "Operators [ops]"):
        assert title in out
    assert "MatMulV2" in out and "aic_metrics_default" in out


def test_describe_accepts_a_soc_version_string(two_products, capsys) -> None:
    assert main(["describe", "Small1"]) == 0
    assert capsys.readouterr().out.startswith("small_card — ")


def test_describe_names_what_other_products_have(two_products, capsys) -> None:
    assert main(["describe", "small_card"]) == 0
    out = capsys.readouterr().out
    missing_metrics = next(line for line in out.splitlines() if "not in aic_metrics" in line)
    missing_files = next(line for line in out.splitlines() if "kernel_meta never has" in line)
    assert "MemoryAccess" in missing_metrics
    assert ".cce" in missing_files and "_loc.json" in missing_files


def test_describe_json_is_the_full_record(two_products, capsys) -> None:
    assert main(["describe", "big_card", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["name"] == "big_card"
    assert data["profiling"]["frequencies"]["sys_hardware_mem_freq"]["max"] == 100
    assert data["ops"]["MatMulV2"]["op_class"] == "matrix"
    assert data["debug"]["kernel_meta"]["3"] == [".o", ".json"]


def test_describe_unknown_product_is_a_usage_error_with_close_names(two_products,
                                                                     capsys) -> None:
    assert main(["describe", "big_crd"]) == 2
    assert "did you mean 'big_card'" in capsys.readouterr().err


def test_describe_without_products_says_how_to_install(use_manager, capsys) -> None:
    use_manager()
    assert main(["describe", "atlas_a2"]) == 2
    assert "pip install" in capsys.readouterr().err


def test_plugins_lists_loaded_plugins_with_distribution(two_products, capsys) -> None:
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("bigplug"))
    assert row.split()[:5] == ["bigplug", "loaded", "registered", "dist-bigplug", "9.9"]
    assert "big_card" in row


def test_plugins_reports_a_skipped_plugin_with_reason_and_exits_1(use_manager,
                                                                  capsys) -> None:
    with pytest.warns(UserWarning):
        use_manager(old=types.SimpleNamespace(GEPLUG_PLUGIN_API=0))
    assert main(["plugins"]) == 1
    out = capsys.readouterr().out
    assert "old (dist-old 9.9) skipped: written for an incompatible plugin API" in out


def test_plugins_json_has_status_and_reason(use_manager, capsys) -> None:
    with pytest.warns(UserWarning):
        use_manager(old=types.SimpleNamespace(GEPLUG_PLUGIN_API=0))
    assert main(["plugins", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    old = next(p for p in data["plugins"] if p["name"] == "old")
    assert old["status"] == "skipped" and old["distribution"] == "dist-old"
    assert "GEPLUG_PLUGIN_API = 0" in old["reason"] and data["conflict"] is None


def test_plugins_without_products_says_so(use_manager, capsys) -> None:
    use_manager()
    assert main(["plugins"]) == 0
    assert "no product plugin is installed" in capsys.readouterr().out


def test_products_conflict_is_a_finding_naming_both(use_manager, write_toml, capsys) -> None:
    path = write_toml(minimal_toml("same", ("S1",)))
    use_manager(one=_plugin(path), two=_plugin(path))
    assert main(["products"]) == 1
    err = capsys.readouterr().err
    assert "dist-one 9.9" in err and "dist-two 9.9" in err


def test_skipped_plugin_warning_is_printed_by_products(use_manager, write_toml,
                                                      capsys) -> None:
    bad = write_toml(minimal_toml("bad_card", ("X",)).replace('l2 = "l2"', "l2 = 1"))
    good = write_toml(minimal_toml("good_card", ("Y",)))
    use_manager(badplug=_plugin(bad), goodplug=_plugin(good))
    assert main(["products"]) == 0
    captured = capsys.readouterr()
    assert "good_card" in captured.out and "bad_card" not in captured.out
    assert "geplug: warning:" in captured.err and "'badplug'" in captured.err
