"""The command-line forms the help and the docs show are the ones that work (--atc, --to)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from geplug.cli.main import main

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def _help(command: str, capsys: Any) -> str:
    assert main([command, "--help"]) == 0
    return " ".join(capsys.readouterr().out.split())


def test_check_help_shows_the_equals_form_of_atc(capsys: Any) -> None:
    text = _help("check", capsys)
    assert '--atc="ARGS"' in text
    assert '--atc "' not in text


def test_check_help_atc_example_works(capsys: Any) -> None:
    example = re.search(r'e\.g\. (--atc="[^"]*")', _help("check", capsys))
    assert example is not None
    assert main(["check", *shlex.split(example.group(1)), "--product", "atlas_a2"]) == 0


def test_single_atc_flag_in_equals_form_is_read(capsys: Any) -> None:
    assert main(["check", "--atc=--op_debug_level=3 --soc_version=Ascend910B3",
                 "--product", "atlas_a2"]) == 0


def _doc_atc_commands() -> list[str]:
    lines = DOC.read_text(encoding="utf-8").splitlines()
    return [line.split("  #")[0].strip() for line in lines
            if line.startswith("geplug check --atc")]


def test_docs_show_atc_examples() -> None:
    assert len(_doc_atc_commands()) >= 2


@pytest.mark.parametrize("command", _doc_atc_commands())
def test_docs_atc_example_is_accepted(command: str, capsys: Any) -> None:
    assert main(shlex.split(command)[1:]) == 0, capsys.readouterr()


def test_docs_commands_never_use_the_space_form_of_atc() -> None:
    lines = DOC.read_text(encoding="utf-8").splitlines()
    assert [line for line in lines if line.startswith("geplug") and '--atc "' in line] == []


def test_export_to_torch_is_an_alias_of_torch_npu(tmp_path: Path, capsys: Any) -> None:
    toml = tmp_path / "s.toml"
    toml.write_text('precision_mode = "allow_fp32_to_fp16"\nop_debug_level = 1\n')
    outputs = []
    for target in ("torch_npu", "torch"):
        assert main(["export", str(toml), "--product", "atlas_a2", "--to", target]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and "torch_npu.npu.set_option" in outputs[0]


def test_export_help_documents_the_torch_alias(capsys: Any) -> None:
    assert "torch is an alias of torch_npu" in _help("export", capsys)


def test_docs_document_the_torch_alias() -> None:
    assert "`torch` is an\nalias of `torch_npu`" in DOC.read_text(encoding="utf-8")
