"""A scratch downstream project for the tox-geplug tests (the one docs/testing-your-project.md
walks through): three products, geplug's packages from this checkout, one local plugin."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
PRODUCTS = ("atlas_train", "atlas_a2", "atlas_350")

TEST = '''"""The project's own tests, run once per simulated product."""

import os

import geplug


def test_the_environment_holds_exactly_its_product():
    assert geplug.installed_products().names() == [os.environ["GEPLUG_PRODUCTS"]]


def test_record_the_product_seen(geplug_product):
    """geplug's pytest plugin parametrises over the selected product only."""
    assert geplug_product.name == os.environ["GEPLUG_PRODUCTS"]
    out = os.path.join(os.environ["SEEN_DIR"], geplug_product.name + ".txt")
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(geplug_product.display_name)
'''


def make_project(root: Path) -> Path:
    """Write the project under ``root``; atlas_350's plugin is a local copy (to edit)."""
    root.mkdir(parents=True, exist_ok=True)
    local = root / "plugins" / "atlas_350"
    shutil.copytree(REPO / "plugins" / "atlas_350", local, ignore=shutil.ignore_patterns(
        "*.egg-info", "build", "__pycache__", "tests"))
    (root / "seen").mkdir()
    (root / "tests").mkdir()
    (root / "tests" / "test_on_products.py").write_text(TEST, encoding="utf-8")
    (root / "tox.ini").write_text(f"""[tox]
geplug_products = {", ".join(PRODUCTS)}
geplug_packages =
    geplug = {REPO}
    geplug-simulator = {REPO / "plugins" / "simulator"}
    geplug-atlas-train = {REPO / "plugins" / "atlas_train"}
    geplug-atlas-a2 = {REPO / "plugins" / "atlas_a2"}
    atlas_350 = ./plugins/atlas_350

[testenv]
skip_install = true
deps = pytest
pass_env = PIP_*
set_env = SEEN_DIR = {{toxinidir}}/seen
commands = pytest -q -p no:cacheprovider -p geplug.testing tests {{posargs}}
""", encoding="utf-8")
    return root
