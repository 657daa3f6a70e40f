"""Audit of the CLI: every option with a value set (and the sub-command names) answers a near
miss with a did-you-mean, listing the choices once; every command that needs a product lists
the installed ones when it is missing or unknown."""

from __future__ import annotations

import argparse
import re

import pytest

from geplug.cli.main import build_parser, main


def _choice_options() -> list[tuple[tuple[str, ...], str, tuple[str, ...]]]:
    """(command path, option string, its string choices) of every option of every parser."""
    found: list[tuple[tuple[str, ...], str, tuple[str, ...]]] = []

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                found.append((path, "", tuple(action.choices)))
                for name, child in action.choices.items():
                    walk(child, (*path, name))
            elif action.choices and action.option_strings and all(
                    isinstance(c, str) for c in action.choices):
                found.append((path, action.option_strings[-1], tuple(action.choices)))

    walk(build_parser(), ())
    return found


OPTIONS = _choice_options()


def _near_miss(choices: tuple[str, ...]) -> tuple[str, str]:
    """A typo of the longest choice (its last letter doubled) and that choice."""
    meant = max(choices, key=len)
    return meant + meant[-1], meant


@pytest.mark.parametrize(("path", "option", "choices"), OPTIONS,
                         ids=[" ".join((*p, o or "COMMAND")) for p, o, _ in OPTIONS])
def test_a_near_miss_choice_gets_did_you_mean_and_one_listing(
        path: tuple[str, ...], option: str, choices: tuple[str, ...],
        capsys: pytest.CaptureFixture[str]) -> None:
    typo, meant = _near_miss(choices)
    argv = [*path, option, typo] if option else [*path, typo]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own exit
        code = exc.code  # type: ignore[assignment]
    assert code == 2
    err = capsys.readouterr().err
    assert f"did you mean {meant!r}" in err, err
    last = err.strip().splitlines()[-1]
    words = re.findall(r"[\w-]+", last)
    assert all(words.count(c) <= 2 for c in choices), last  # the suggestion + one listing


def test_the_audit_sees_the_export_targets_and_the_command_names() -> None:
    seen = {(p, o) for p, o, _ in OPTIONS}
    assert (("export",), "--to") in seen and ((), "") in seen


PRODUCT_COMMANDS = [
    ["check", "{cfg}"], ["resolve", "{cfg}"], ["export", "{cfg}", "--to", "ge"],
]


@pytest.mark.geplug_requires_products("atlas_a2")
@pytest.mark.parametrize("argv", PRODUCT_COMMANDS, ids=[a[0] for a in PRODUCT_COMMANDS])
def test_an_unknown_product_lists_the_installed_ones(argv: list[str], tmp_path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "s.toml"
    cfg.write_text('precision_mode = "force_fp16"\n')
    args = [a.format(cfg=cfg) for a in argv] + ["--product", "atlas_a22"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "did you mean 'atlas_a2'" in err


MISSING_PRODUCT = [
    ["compile", "{model}"], ["run", "{model}"], ["describe"], ["new-card", "acme_x"],
]


@pytest.mark.geplug_requires_products("atlas_a2")
@pytest.mark.parametrize("argv", MISSING_PRODUCT, ids=[a[0] for a in MISSING_PRODUCT])
def test_a_command_without_its_product_lists_the_installed_ones(
        argv: list[str], tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """check/resolve/export: tests/config/test_config_export_kit.py; these are the rest."""
    if argv[0] in ("compile", "run"):
        pytest.importorskip("geplug_simulator")
        import geplug

        if len(geplug.installed_products()) < 2:
            pytest.skip("with a single product installed, compile/run use it (as check does)")
    args = [a.format(model=tmp_path / "m.onnx") for a in argv]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "(installed: " in err and "atlas_a2" in err, err
