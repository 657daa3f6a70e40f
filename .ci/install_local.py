"""Install packages of this checkout into the running Python from fresh copies (tox commands_pre).

Usage: ``python .ci/install_local.py DEST PROJECT[EXTRAS] ...`` with PROJECT a directory
relative to the repository root (``.``, ``plugins/atlas_a2``, ``.[test]``). Each project is
copied to DEST without build leftovers (``build/``, ``*.egg-info``, caches) and without nested
projects, then all are installed by one ``pip install`` so the plugins' ``geplug>=...``
requirement resolves to the local core. Why copies: pip builds a local directory in place, so
two tox environments building one checkout at once (``tox run-parallel``) would share its
``build/`` directory, and a stale ``build/lib`` can put deleted modules into the wheel. Why
every run: pip reinstalls a local directory each time, so a tox run always tests the current
code, not what the environment was created with.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["main"]

ROOT = Path(__file__).resolve().parent.parent
SKIP = frozenset({
    ".git", ".tox", ".venv", "build", "dist", "__pycache__", ".mypy_cache", ".ruff_cache",
    ".pytest_cache", ".hypothesis", "kernel_meta", "extra-info",
})


def _ignore(directory: str, names: list[str]) -> set[str]:
    """Names copytree leaves out: build leftovers, caches and nested projects."""
    here = Path(directory)
    return {
        n for n in names
        if n in SKIP or n.endswith(".egg-info") or (here / n / "pyproject.toml").is_file()
    }


def main(argv: list[str]) -> int:
    """Copy and install; returns pip's exit status (2 on a usage error)."""
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    dest, specs = Path(argv[0]), argv[1:]
    shutil.rmtree(dest, ignore_errors=True)
    targets: list[str] = []
    for index, spec in enumerate(specs):
        path, bracket, extras = spec.partition("[")
        source = (ROOT / path).resolve()
        if not (source / "pyproject.toml").is_file():
            print(f"install_local: {spec!r} is not a project directory of {ROOT} (no "
                  "pyproject.toml)", file=sys.stderr)
            return 2
        copy = dest / f"{index}-{source.name}"
        shutil.copytree(source, copy, ignore=_ignore)
        targets.append(f"{copy}{bracket}{extras}")
    command = [sys.executable, "-m", "pip", "install", "--quiet", *targets]
    print("install_local:", " ".join(specs), flush=True)
    return subprocess.call(command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
