"""Local plugin sources: a content hash, and a wheel built once per hash.

A local source (a directory with ``pyproject.toml``) is hashed over its files (build
leftovers, caches and nested projects left out); its wheel is built from a fresh copy into
``wheelhouse/<distribution>-<hash>/``, so an edit gives a new hash and a new wheel, an
unchanged tree reuses the old one, and parallel environments never build in one directory
(a file lock guards each build; the wheel appears complete or not at all).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Sequence
from email.parser import Parser
from pathlib import Path

from filelock import FileLock

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10
    import tomli as tomllib

__all__ = ["SKIP", "build_wheel", "distribution_name", "requires", "tree_hash"]

SKIP = frozenset({
    ".git", ".tox", ".venv", "build", "dist", "__pycache__", ".mypy_cache", ".ruff_cache",
    ".pytest_cache", ".hypothesis", "kernel_meta", "extra-info",
})
"""Directory names that never belong to a source tree's content."""


def _skipped(directory: Path, name: str, root: Path) -> bool:
    if name in SKIP or name.endswith((".egg-info", ".pyc")):
        return True
    path = directory / name
    return path != root and path.is_dir() and (path / "pyproject.toml").is_file()


def _files(root: Path) -> Iterator[Path]:
    for directory, dirs, files in os.walk(root):
        here = Path(directory)
        dirs[:] = sorted(d for d in dirs if not _skipped(here, d, root))
        for name in sorted(files):
            if not _skipped(here, name, root):
                yield here / name


def tree_hash(root: Path) -> str:
    """A short sha256 over every file's relative path and bytes (16 hex digits)."""
    digest = hashlib.sha256()
    for path in _files(root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def distribution_name(root: Path) -> str:
    """``[project].name`` of the ``pyproject.toml`` in ``root`` (ValueError when absent)."""
    project = root / "pyproject.toml"
    try:
        data = tomllib.loads(project.read_text(encoding="utf-8"))
        return str(data["project"]["name"])
    except (OSError, KeyError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{str(root)!r} is not a Python project (no readable [project].name "
                         f"in {project.name}): {exc}") from None


def requires(wheel: Path) -> list[str]:
    """The distribution names a wheel's ``Requires-Dist`` lines name (markers ignored)."""
    with zipfile.ZipFile(wheel) as archive:
        meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        message = Parser().parsestr(archive.read(meta).decode("utf-8"))
    names = []
    for line in message.get_all("Requires-Dist") or []:
        if "extra ==" in line:
            continue
        name = line.split(";")[0].strip()
        for stop in "<>=!~[ (":
            name = name.split(stop)[0]
        names.append(name.strip())
    return names


Runner = Callable[[Sequence[str]], int]
"""Runs a command, returns its exit status (tox's executor, or subprocess)."""


def _subprocess(cmd: Sequence[str]) -> int:
    return subprocess.call(list(cmd))


def build_wheel(root: Path, wheelhouse: Path, python: str, run: Runner = _subprocess
                ) -> tuple[Path, str]:
    """(the wheel of ``root``'s current content, its tree hash); built only when new."""
    digest = tree_hash(root)
    name = distribution_name(root)
    target = wheelhouse / f"{name}-{digest}"
    wheelhouse.mkdir(parents=True, exist_ok=True)
    with FileLock(str(wheelhouse / f"{name}-{digest}.lock")):
        found = sorted(target.glob("*.whl")) if target.is_dir() else []
        if found:
            return found[0], digest
        staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=wheelhouse))
        try:
            copy = staging / "src"
            shutil.copytree(root, copy, ignore=lambda d, names: {
                n for n in names if _skipped(Path(d), n, root)})
            out = staging / "wheel"
            status = run([python, "-m", "pip", "wheel", "--quiet", "--no-deps",
                          "--wheel-dir", str(out), str(copy)])
            wheels = sorted(out.glob("*.whl")) if out.is_dir() else []
            if status != 0 or not wheels:
                raise RuntimeError(f"building a wheel of {str(root)!r} ({name}) failed "
                                   f"(pip wheel exit status {status}); see the output above")
            out.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return sorted(target.glob("*.whl"))[0], digest
