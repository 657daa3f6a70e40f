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

__all__ = ["COMMANDS", "main"]

COMMANDS: tuple[str, ...] = (
    "geplug.cli.products",
    "geplug.cli.config_cmds",
    "geplug.cli.sim_cmds",
    "geplug.cli.dump_cmds",
    "geplug.cli.profile_cmds",
)
"""Command modules, in help order. A module that is not present is left out."""

EXIT_OK, EXIT_FINDING, EXIT_USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser."""
    from geplug import __version__

    parser = argparse.ArgumentParser(
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (also used as the process exit status)."""
    from geplug.errors import GeplugError, UnknownProductError, UsageError

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
            print(f"geplug: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except GeplugError as exc:
            print(f"geplug: error: {exc}", file=sys.stderr)
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
