"""Fake installed distributions: test entry-point loading without pip.

:func:`write_distribution` writes a ``*.dist-info`` (``METADATA`` and ``entry_points.txt``)
and the plugin's source files into a directory; with that directory first on ``sys.path``,
``importlib.metadata`` sees an installed distribution whose ``geplug`` entry points the plugin
manager loads exactly as it loads a pip-installed package. The ``fake_distribution`` fixture of
:mod:`geplug.testing.plugin` does the ``sys.path`` part and cleans up.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

__all__ = ["write_distribution"]


def write_distribution(
    root: Path,
    name: str,
    *,
    version: str = "1.0",
    entry_points: Mapping[str, str] | None = None,
    files: Mapping[str, str] | None = None,
    group: str = "geplug",
) -> Path:
    """Write distribution ``name`` (entry points of ``group``, source ``files``) under ``root``.

    ``files`` maps relative paths (``"mycard/hooks.py"``) to their text. Returns ``root``, the
    directory to put on ``sys.path``.
    """
    root.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[-_.]+", "_", name)
    info = root / f"{stem}-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8"
    )
    lines = [f"[{group}]"] + [f"{k} = {v}" for k, v in (entry_points or {}).items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (info / "top_level.txt").write_text("", encoding="utf-8")
    for rel, text in (files or {}).items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root
