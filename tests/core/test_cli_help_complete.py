"""Every `--help` has a description, states its defaults and shows an example."""

from __future__ import annotations

import argparse

import pytest

from geplug.cli.main import build_parser, main


def _commands() -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    found: list[tuple[tuple[str, ...], argparse.ArgumentParser]] = []

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    found.append(((*path, name), child))
                    walk(child, (*path, name))

    walk(build_parser(), ())
    return found


COMMANDS = _commands()


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=" ".join)
def test_help_has_description_defaults_and_an_example(path: tuple[str, ...]) -> None:
    parser = dict(COMMANDS)[path]
    text = parser.format_help()
    assert parser.description, f"geplug {' '.join(path)} has no description"
    assert "example" in text, f"geplug {' '.join(path)} --help shows no example"
    for action in parser._actions:
        if (action.option_strings and action.default not in (None, False, argparse.SUPPRESS)
                and not isinstance(action, argparse._StoreTrueAction)):
            assert "default" in (action.help or ""), (path, action.option_strings)
        if action.option_strings and action.help != argparse.SUPPRESS:
            assert action.help, (path, action.option_strings)


def test_demo_help_names_the_default_product_not_a_constant(
        capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("geplug_simulator")
    main(["demo", "--help"])
    out = capsys.readouterr().out
    assert "DEFAULT_PRODUCT" not in out and "(default: atlas" in out.replace("\n", " ")


def test_run_help_states_the_steps_default(capsys: pytest.CaptureFixture[str]) -> None:
    main(["run", "--help"])
    assert "(default: 1)" in capsys.readouterr().out
