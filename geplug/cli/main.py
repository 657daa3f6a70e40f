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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (also used as the process exit status)."""
    from geplug.errors import GeplugError, UnknownProductError, UsageError
    from geplug.limits import escape_controls

    parser = build_parser()
    try:
        args = parser.parse_args(_join_flag_values(list(sys.argv[1:] if argv is None else argv)))
    except SystemExit as exc:
        return int(exc.code or 0)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = _show_warning
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
