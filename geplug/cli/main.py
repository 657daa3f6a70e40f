"""``geplug`` entry point: one sub-command per module listed in :data:`COMMANDS`.

Each command module defines ``add_parser(subparsers)`` which adds its parser and sets
``func(args) -> int`` as the default. Exit codes: 0 success, 1 a finding (problems, an error
geplug explains), 2 a usage error.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from collections.abc import Sequence
from typing import Any

__all__ = ["COMMANDS", "GeplugArgumentParser", "main"]

COMMANDS: tuple[str, ...] = (
    "geplug.cli.products",
    "geplug.cli.card_cmds",
    "geplug.cli.config_cmds",
    "geplug.cli.sim_cmds",
    "geplug.cli.dump_cmds",
    "geplug.cli.profile_cmds",
)
"""Command modules, in help order. A module that is not present is left out."""

EXIT_OK, EXIT_FINDING, EXIT_USAGE = 0, 1, 2


class GeplugArgumentParser(argparse.ArgumentParser):
    """argparse with a did-you-mean for values outside an option's choices (``--to torchnpu``,
    ``geplug chek``); sub-command parsers inherit the class."""

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is None or value in choices:
            return
        from geplug.config.parse_common import choice_hint

        names = [str(c) for c in choices]
        raise argparse.ArgumentError(
            action, f"invalid choice: {value!r}; {choice_hint(value, names, 'choose from')}")


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser."""
    from geplug import __version__

    parser = GeplugArgumentParser(
        prog="geplug",
        description="Check, resolve and rehearse Ascend NPU configurations on any machine.",
    )
    parser.add_argument("--version", action="version", version=f"geplug {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.add_parser(sub)
    _add_plugin_commands(sub)
    _complete_help(parser, ())
    return parser


def _add_plugin_commands(sub: Any) -> None:
    """The sub-commands plugins add through ``geplug_subcommands`` (e.g. ``demo``)."""
    from geplug.plugin import get_manager

    try:
        commands = get_manager().subcommands(taken=sub.choices)
    except Exception as exc:  # a broken plugin never stops the built-in commands
        warnings.warn(f"plugin sub-commands left out: {type(exc).__name__}: {exc}",
                      stacklevel=2)
        return
    for command in commands:
        parser = sub.add_parser(command.name, help=command.summary,
                                description=command.description or command.summary)
        if command.configure is not None:
            command.configure(parser)
        parser.set_defaults(func=command.action)


EXAMPLES: dict[tuple[str, ...], tuple[str, ...]] = {
    ("products",): ("geplug products", "geplug products --json"),
    ("describe",): ("geplug describe atlas_a2", "geplug describe Ascend910B3 --json",
                    "geplug describe my_card --diff"),
    ("plugins",): ("geplug plugins", "GEPLUG_DISABLE_PLUGINS=simulator geplug plugins"),
    ("check",): ("geplug check job.toml --product atlas_a2", "geplug check job.toml "
                 "--all-products --format json", 'geplug check --atc="--precision_mode='
                 'force_fp16 --soc_version=Ascend910B3"'),
    ("resolve",): ("geplug resolve job.toml --product atlas_a2",
                   "geplug resolve job.toml --product Ascend910B3 --format json"),
    ("export",): ("geplug export job.toml --product atlas_a2 --to tf --out session.py",
                  "geplug export job.toml --product atlas_a2 --to acl_json --out acl.json"),
    ("dump",): ("geplug dump ls ./dump", "geplug dump compare ./run_fp16 ./run_fp32"),
    ("dump", "ls"): ("geplug dump ls ./dump", "geplug dump ls ./dump --format json"),
    ("dump", "show"): ("geplug dump show ./dump/.../MatMulV2.fc1.3.2.1700000000000000",),
    ("dump", "convert"): ("geplug dump convert ./dump --out ./npy",
                          "geplug dump convert ./dump --to npz --out ./tensors"),
    ("dump", "compare"): ("geplug dump compare ./run_fp16 ./run_fp32",
                          "geplug dump compare a/ b/ --threshold 0.999 --format json"),
    ("profile",): ("geplug profile summary ./prof_out", "geplug profile plot ./prof_out "
                   "--out timeline.png"),
}
"""Examples for commands whose module does not write its own epilog."""

DESCRIBED_CHOICES = {"--format": "text for people, json for scripts"}
"""Help for options that had none."""


def _complete_help(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
    """Every sub-command gets a description (its one-line help when it has none), an
    example and every option's default stated: one place, so no command lacks them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, child in action.choices.items():
                if not child.description:
                    child.description = (helps.get(name) or name).capitalize() + "."
                _complete_help(child, (*path, name))
            continue
        if not path or not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        if action.help is None:
            action.help = DESCRIBED_CHOICES.get(action.option_strings[-1], "")
        default = action.default
        if (default not in (None, False, argparse.SUPPRESS) and "default" not in
                (action.help or "") and not isinstance(action, argparse._StoreTrueAction)):
            action.help = f"{action.help} (default: {default})".strip()
    if path and not parser.epilog and path in EXAMPLES:
        parser.epilog = "examples:\n" + "\n".join(f"  {e}" for e in EXAMPLES[path])
        if parser.formatter_class is argparse.HelpFormatter:
            parser.formatter_class = argparse.RawDescriptionHelpFormatter


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (also used as the process exit status)."""
    from geplug.errors import GeplugError, UnknownProductError, UsageError
    from geplug.limits import escape_controls

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = _show_warning
        parser = build_parser()  # loads the plugins (their sub-commands): warnings shown here
        try:
            args = parser.parse_args(
                _join_flag_values(list(sys.argv[1:] if argv is None else argv)))
        except SystemExit as exc:
            return int(exc.code or 0)
        if not getattr(args, "func", None):
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        try:
            return int(args.func(args))
        except (UnknownProductError, UsageError) as exc:
            print(f"geplug: error: {escape_controls(str(exc), keep_newlines=True)}",
                  file=sys.stderr)
            return EXIT_USAGE
        except GeplugError as exc:
            print(f"geplug: error: {escape_controls(str(exc), keep_newlines=True)}",
                  file=sys.stderr)
            return EXIT_FINDING
        except KeyboardInterrupt:
            return 130
        except BrokenPipeError:  # `geplug describe X | head`: the reader left; stop quietly
            _silence_stdout()
            return EXIT_FINDING


FLAG_VALUED_OPTIONS = ("--atc",)
"""Options whose value is itself a command line starting with ``--``."""


def _join_flag_values(argv: list[str]) -> list[str]:
    """``--atc "--x=1"`` -> ``--atc=--x=1``: argparse would take a value starting with ``--``
    for an option of geplug (``expected one argument``)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token in FLAG_VALUED_OPTIONS and i + 1 < len(argv) and argv[i + 1].startswith("--"):
            out.append(f"{token}={argv[i + 1]}")
            i += 2
            continue
        out.append(token)
        i += 1
    return out


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot raise again."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _show_warning(message, category, filename, lineno, file=None, line=None):  # type: ignore[no-untyped-def]
    print(f"geplug: warning: {message}", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
