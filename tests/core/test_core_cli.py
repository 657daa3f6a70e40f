"""The ``geplug`` CLI: products, describe, plugins, --version; human output, JSON, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types

import pytest

from geplug import __version__
from geplug.cli.main import main
from geplug.plugin import DISABLE_ENV, PluginManager
from geplug.testing.fakedist import write_distribution
from geplug.testing.plugin import installed_products
from geplug.testing.samples import card_files, declaring_plugin, minimal_toml


def _value(out: str, key: str) -> str:
    """The value printed for ``key`` by ``geplug describe``, continuation lines joined."""
    lines = out.splitlines()
    index = next(i for i, line in enumerate(lines) if line.strip().startswith(key))
    column = lines[index].index(key) + len(key)
    parts = [lines[index][column:].strip()]
    for line in lines[index + 1:]:
        if not line.strip() or line[:column].strip():
            break
        parts.append(line.strip())
    return " ".join(parts)


@pytest.fixture
def two_products(use_manager, write_toml) -> PluginManager:
    big = minimal_toml("big_card", ("Big1", "Big2")).replace(
        '"Memory"]', '"Memory", "MemoryAccess"]').replace(
        "[profiling.frequencies", 'MemoryAccess = ["aicore_time(us)"]\n[profiling.frequencies')
    small = minimal_toml("small_card", ("Small1",)).replace(
        '"4" = [".o", ".json", ".cce", "_compute.json"]', '"4" = [".o", ".json"]').replace(
        '"1" = [".o", ".json", ".cce", "_loc.json"]', '"1" = [".o", ".json"]').replace(
        '"2" = [".o", ".json", ".cce", "_loc.json"]', '"2" = [".o", ".json"]')
    return use_manager(bigplug=declaring_plugin(write_toml(big)),
                       smallplug=declaring_plugin(write_toml(small)))


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
    missing_metrics = _value(out, "not in aic_metrics")
    missing_files = _value(out, "kernel_meta never has")
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
    use_manager(one=declaring_plugin(path), two=declaring_plugin(path))
    assert main(["products"]) == 1
    err = capsys.readouterr().err
    assert "dist-one 9.9" in err and "dist-two 9.9" in err


def test_skipped_plugin_warning_is_printed_by_products(use_manager, write_toml,
                                                      capsys) -> None:
    bad = write_toml(minimal_toml("bad_card", ("X",)).replace('l2 = "l2"', "l2 = 1"))
    good = write_toml(minimal_toml("good_card", ("Y",)))
    use_manager(badplug=declaring_plugin(bad), goodplug=declaring_plugin(good))
    assert main(["products"]) == 1  # the products are listed, and the skip is a finding
    captured = capsys.readouterr()
    assert "good_card" in captured.out and "bad_card" not in captured.out
    assert "geplug: warning:" in captured.err and "'badplug'" in captured.err


def test_describe_names_what_a_lone_product_lacks(use_manager, write_toml, capsys) -> None:
    small = minimal_toml("lone_card", ("Lone1",)).replace(
        '"4" = [".o", ".json", ".cce", "_compute.json"]', '"4" = [".o", ".json"]')
    use_manager(loneplug=declaring_plugin(write_toml(small)))
    assert main(["describe", "lone_card"]) == 0
    out = capsys.readouterr().out
    metrics, files = _value(out, "not in aic_metrics"), _value(out, "kernel_meta never has")
    assert "MemoryAccess" in metrics and "PipelineExecuteUtilization" in metrics
    assert "_compute.json" in files and ".cce" not in files


def _run_cli(args: list[str], site: object) -> subprocess.CompletedProcess[str]:
    """``geplug ARGS`` in a fresh interpreter with ``site`` on its path (an installed dist)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(site), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, "-m", "geplug.cli.main", *args], env=env,
                          capture_output=True, text=True, check=False)


def test_broken_package_installed_beside_the_others_is_named_and_the_rest_listed(
    tmp_path,
) -> None:
    site = write_distribution(
        tmp_path / "site", "fake-broken-card", version="0.3",
        entry_points={"brokencard": "brokencard.hooks"},
        files=card_files("brokencard", minimal_toml("brokencard", ("B1",)),
                         hooks="raise ImportError('cannot import name npu_ops')\n"))
    installed = [p.name for p in installed_products()]
    products = _run_cli(["products"], site)
    assert products.returncode == 1  # listed, with the skipped plugin as a finding
    assert all(f"\n{name} " in "\n" + products.stdout for name in installed)
    assert "geplug: warning:" in products.stderr and "fake-broken-card 0.3" in products.stderr
    assert "npu_ops" in products.stderr
    plugins = _run_cli(["plugins"], site)
    assert plugins.returncode == 1
    row = next(line for line in plugins.stdout.splitlines() if line.startswith("brokencard"))
    assert row.split()[:4] == ["brokencard", "skipped", "entry", "point"]
    assert "brokencard (fake-broken-card 0.3) skipped: failed to import" in plugins.stdout


def test_products_wraps_a_long_soc_list_and_keeps_every_soc(use_manager, write_toml,
                                                            capsys) -> None:
    socs = tuple(f"AscendLong{i:02d}" for i in range(12))
    use_manager(longplug=declaring_plugin(write_toml(minimal_toml("long_card", socs))))
    assert main(["products"]) == 0
    out = capsys.readouterr().out
    soc_column = out.splitlines()[0].index("SOC VERSIONS")
    cells = [line[soc_column:].split("  ")[0] for line in out.splitlines()[1:]]
    assert all(len(cell) <= 40 for cell in cells) and len(cells) > 1
    assert " ".join(cells).replace(",", "").split() == list(socs)


def test_products_without_products_names_the_disabled_plugins(use_manager, monkeypatch,
                                                              capsys) -> None:
    from geplug.plugin import PluginNameWarning

    monkeypatch.setenv(DISABLE_ENV, "blocked_card")
    with pytest.warns(PluginNameWarning):  # not installed: registered from Python after load
        use_manager(blocked_card=declaring_plugin())
    assert main(["products"]) == 1
    err = capsys.readouterr().err
    assert "no product plugin is installed" in err
    assert f"{DISABLE_ENV} blocks blocked_card" in err


def test_describe_into_a_closed_pipe_exits_without_a_traceback(two_products, monkeypatch,
                                                               capsys) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    closed = os.fdopen(write_end, "w", buffering=1)
    monkeypatch.setattr(sys, "stdout", closed)
    try:
        assert main(["describe", "big_card", "--json"]) == 1
    finally:
        closed.close()
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.geplug_requires_products("atlas_a2")
def test_check_naming_a_product_of_a_disabled_plugin_says_disabled(
    tmp_path, monkeypatch, capsys
) -> None:
    from geplug.plugin import reset_manager

    config = tmp_path / "session.toml"
    config.write_text("", encoding="utf-8")
    monkeypatch.setenv(DISABLE_ENV, "atlas_a2")
    reset_manager(None)
    try:
        code = main(["check", "--product", "atlas_a2", str(config)])
    finally:
        reset_manager(None)
    err = capsys.readouterr().err
    assert code == 2
    assert "installed but disabled by GEPLUG_DISABLE_PLUGINS" in err
    assert "unknown product" not in err


def test_plugins_names_a_disable_typo_and_exits_1(monkeypatch, capsys) -> None:
    from geplug.plugin import PluginNameWarning, reset_manager

    monkeypatch.setenv(DISABLE_ENV, "profilng")
    with pytest.warns(PluginNameWarning):
        reset_manager(PluginManager().load(entry_points=False))
    try:
        code = main(["plugins", "--json"])
    finally:
        reset_manager(None)
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    assert any("'profilng'" in w and "'profiling'" in w for w in data["warnings"])


def test_atc_value_starting_with_dashes_is_taken_as_the_atc_line(capsys) -> None:  # type: ignore[no-untyped-def]
    from geplug.cli.main import main
    from geplug.testing.plugin import require_product

    require_product("atlas_a2")
    code = main(["check", "--atc", "--precision_mode=must_keep_origin_dtype",
                 "--product", "atlas_a2"])
    err = capsys.readouterr().err
    assert "expected one argument" not in err
    assert code in (0, 1)  # checked: ATC without --soc_version is a finding, not a usage error
