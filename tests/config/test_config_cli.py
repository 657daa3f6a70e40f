"""``geplug check`` / ``resolve`` / ``export``: output, JSON shape and exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from geplug.cli.main import main

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")


def _toml(tmp_path: Path, text: str) -> str:
    path = tmp_path / "session.toml"
    path.write_text(text)
    return str(path)


def test_check_clean_config_exits_0(tmp_path: Path, capsys: Any) -> None:
    path = _toml(tmp_path, 'precision_mode = "allow_mix_precision"\n')
    assert main(["check", path, "--product", "atlas_a2"]) == 0
    assert "accepted" in capsys.readouterr().out


def test_check_errors_exit_1_with_json_problems(tmp_path: Path, capsys: Any) -> None:
    path = _toml(tmp_path, 'dump_mode = "both"\nprecison_mode = "x"\n')
    assert main(["check", path, "--product", "atlas_a2", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    keys = {"option", "value", "severity", "message", "hint", "code"}
    assert all(set(p) == keys for p in data["problems"])
    assert {p["option"] for p in data["problems"]} >= {"dump_mode", "precison_mode"}


def test_check_all_products_matrix(tmp_path: Path, capsys: Any) -> None:
    path = _toml(tmp_path, 'precision_mode = "allow_fp32_to_bf16"\n')
    main(["check", path, "--all-products", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    by_name = {o["product"]: o for o in data["products"]}
    assert by_name["atlas_a2"]["ok"] is True
    if "atlas_train" in by_name:
        assert by_name["atlas_train"]["ok"] is False
        assert "atlas_train" not in data["accepted"]


def test_check_without_product_is_usage_error(tmp_path: Path) -> None:
    assert main(["check", _toml(tmp_path, "")]) == 2


def test_check_unknown_product_is_usage_error(tmp_path: Path) -> None:
    assert main(["check", _toml(tmp_path, ""), "--product", "atlas_a9"]) == 2


def test_check_malformed_toml_is_a_finding_not_a_traceback(tmp_path: Path,
                                                           capsys: Any) -> None:
    assert main(["check", _toml(tmp_path, "x = = 1"), "--product", "atlas_a2"]) == 1
    assert "malformed TOML" in capsys.readouterr().out


def test_check_atc_arguments(capsys: Any) -> None:
    assert main(["check", "--atc", "--precision_mode=force_fp16 --soc_version=Ascend910B3",
                 "--product", "atlas_a2"]) == 0


def test_check_ge_options_file(tmp_path: Path) -> None:
    path = tmp_path / "ge.json"
    path.write_text(json.dumps({"ge.exec.enableDump": "2"}))
    assert main(["check", "--ge-options", str(path), "--product", "atlas_a2"]) == 1


def test_resolve_json_shows_sources(tmp_path: Path, capsys: Any) -> None:
    path = _toml(tmp_path, "profiling_mode = true\n")
    assert main(["resolve", path, "--product", "atlas_a2", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["config"]["precision_mode"] == "must_keep_origin_dtype"
    assert data["sources"]["precision_mode"] == "product default"


def test_resolve_text_lists_values(tmp_path: Path, capsys: Any) -> None:
    assert main(["resolve", _toml(tmp_path, ""), "--product", "atlas_a2"]) == 0
    assert "precision_mode = 'must_keep_origin_dtype'" in capsys.readouterr().out


@pytest.mark.parametrize("to", ["ge", "tf", "atc", "torch_npu"])
def test_export_every_target(tmp_path: Path, capsys: Any, to: str) -> None:
    path = _toml(tmp_path, 'precision_mode = "allow_mix_precision"\n')
    assert main(["export", path, "--product", "atlas_a2", "--to", to]) == 0
    assert "allow_mix_precision" in capsys.readouterr().out


def test_export_refuses_config_with_errors(tmp_path: Path) -> None:
    path = _toml(tmp_path, 'precision_mode = "fast"\n')
    assert main(["export", path, "--product", "atlas_a2", "--to", "ge"]) == 1
