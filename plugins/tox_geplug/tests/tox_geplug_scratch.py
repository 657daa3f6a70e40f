"""The example project of docs/testing-your-project.md, written from that page's code blocks
(so the documentation is what the tests run), with geplug's packages taken from this
checkout and atlas_350's plugin as a local copy (to edit)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
DOC = REPO / "docs" / "testing-your-project.md"
PRODUCTS = ("atlas_train", "atlas_a2", "atlas_350")
_BLOCK = re.compile(r"^```\w+ file=(?P<path>\S+)\n(?P<body>.*?)^```$", re.M | re.S)


def clean_env() -> dict[str, str]:
    """This process's environment without tox's own variables: a tox run inside a tox
    environment (this repository's CI) would otherwise take the outer run's TOX_* settings
    (its work dir, its env) as its options."""
    import os

    return {k: v for k, v in os.environ.items()
            if not k.startswith("TOX_") and k not in ("VIRTUAL_ENV", "PYTHONHOME")}


def doc_files() -> dict[str, str]:
    """Relative path -> text of every ``file=`` code block of the page."""
    return {m["path"]: m["body"] for m in _BLOCK.finditer(DOC.read_text(encoding="utf-8"))}


def make_project(root: Path) -> Path:
    """Write the documented project under ``root`` and point it at this checkout."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in doc_files().items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    local = root / "plugins" / "atlas_350"
    shutil.copytree(REPO / "plugins" / "atlas_350", local, ignore=shutil.ignore_patterns(
        "*.egg-info", "build", "__pycache__", "tests"))
    sources = "\n".join(f"    {name} = {path}" for name, path in (
        ("geplug", REPO), ("geplug-simulator", REPO / "plugins" / "simulator"),
        ("geplug-atlas-train", REPO / "plugins" / "atlas_train"),
        ("geplug-atlas-a2", REPO / "plugins" / "atlas_a2"),
        ("atlas_350", "./plugins/atlas_350")))
    ini = root / "tox.ini"
    text = ini.read_text(encoding="utf-8")
    ini.write_text(text.replace("[testenv]", f"geplug_packages =\n{sources}\n\n[testenv]", 1)
                   .replace("skip_install = true", "skip_install = true\npass_env = PIP_*", 1),
                   encoding="utf-8")
    return root
