"""The public API is declared once (``geplug.PUBLIC_MODULES``) and documented as such."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import geplug

REPO = Path(__file__).resolve().parents[2]
"""The checkout (tox tests the installed packages, whose docs are not installed)."""


@pytest.mark.parametrize("name", geplug.PUBLIC_MODULES)
def test_every_public_module_declares_what_it_offers(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert exported, f"{name} has no __all__"
    missing = [n for n in exported if not hasattr(module, n)]
    assert missing == [], f"{name}.__all__ names what it does not have: {missing}"


def test_the_architecture_doc_lists_exactly_the_public_modules() -> None:
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Public API", 1)[1].split("\n## ", 1)[0]
    bullets = [line for line in section.split("Internal", 1)[0].splitlines()
               if line.startswith("- ")]
    listed = {re.match(r"- `([\w.]+)`", line).group(1) for line in bullets}  # type: ignore[union-attr]
    assert listed == set(geplug.PUBLIC_MODULES)


def test_geplug_testing_imports_without_pytest_plugins_loaded() -> None:
    import geplug.testing

    assert callable(geplug.testing.check_product)
    assert callable(geplug.testing.write_distribution)
