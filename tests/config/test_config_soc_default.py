"""soc_version never defaults silently: the SoC the product was named by is used, the first
SoC of the product is a warning on the ATC export, a conflict is a warning naming both."""

from __future__ import annotations

from typing import Any

import pytest

from geplug.config import SessionConfig, check, resolve
from geplug.config.export import export, export_report


def test_resolve_uses_the_soc_the_product_was_named_by(a2: Any) -> None:
    resolved = resolve(SessionConfig(), a2, env={}, soc="Ascend910B3")
    assert resolved.config.soc_version == "Ascend910B3"


def test_resolve_without_a_named_soc_uses_the_first(a2: Any) -> None:
    assert resolve(SessionConfig(), a2, env={}).config.soc_version == a2.soc_versions[0]


def test_atc_export_writes_the_named_soc(a2: Any) -> None:
    text = export(SessionConfig(graph_run_mode=0), a2, "atc", soc="Ascend910B3")
    assert "--soc_version=Ascend910B3" in text


def test_atc_export_warns_when_soc_defaults_to_the_first(a2: Any) -> None:
    report = export_report(SessionConfig(graph_run_mode=0), a2, "atc")
    (warning,) = [p for p in report.problems if p.option == "soc_version"]
    assert warning.severity == "warning"
    assert f"using {a2.soc_versions[0]}, the first SoC of" in warning.message
    assert "npu-smi info" in warning.hint


def test_atc_export_with_named_soc_does_not_warn(a2: Any) -> None:
    report = export_report(SessionConfig(graph_run_mode=0), a2, "atc", soc="Ascend910B3")
    assert not report.problems


def test_named_soc_conflicting_with_soc_version_is_a_warning(a2: Any) -> None:
    problems = check(SessionConfig(soc_version="Ascend910B1"), a2, env={}, soc="Ascend910B3")
    (warning,) = [p for p in problems if p.option == "soc_version"]
    assert warning.severity == "warning"
    assert "Ascend910B1" in warning.message and "Ascend910B3" in warning.message


def test_named_soc_matching_soc_version_is_quiet(a2: Any) -> None:
    problems = check(SessionConfig(soc_version="Ascend910B3"), a2, env={}, soc="Ascend910B3")
    assert not [p for p in problems if p.option == "soc_version"]


@pytest.mark.geplug_requires_products("atlas_a2")
def test_cli_export_by_soc_writes_that_soc(tmp_path: Any, capsys: Any) -> None:
    from geplug.cli.main import main

    path = tmp_path / "session.toml"
    path.write_text("graph_run_mode = 0\n")
    assert main(["export", str(path), "--product", "Ascend910B3", "--to", "atc"]) == 0
    assert "--soc_version=Ascend910B3" in capsys.readouterr().out


@pytest.mark.geplug_requires_products("atlas_a2")
def test_cli_export_by_product_warns_about_the_default_soc(tmp_path: Any, capsys: Any) -> None:
    from geplug.cli.main import main

    path = tmp_path / "session.toml"
    path.write_text("graph_run_mode = 0\n")
    assert main(["export", str(path), "--product", "atlas_a2", "--to", "atc"]) == 0
    assert "soc_version not set" in capsys.readouterr().err
