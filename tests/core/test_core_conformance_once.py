"""The conformance suite runs once per product and never collects a busy folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from geplug.testing import conformance

pytestmark = pytest.mark.geplug_requires_products("example_card")

MODULE = '''from geplug.testing.conformance import *  # noqa: F403
GEPLUG_CONFORMANCE = "example_card"
'''


def _pytest(cwd: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "geplug.testing", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)
    return done.stdout.strip().splitlines()[-1]


@pytest.fixture
def busy(tmp_path: Path) -> Path:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_card_conformance_x.py").write_text(MODULE)
    (tmp_path / "scratch").mkdir()
    (tmp_path / "scratch" / "test_unrelated_x.py").write_text("def test_x():\n    assert 0\n")
    return tmp_path


def test_option_alone_runs_only_the_suite_not_the_folder(busy: Path) -> None:
    summary = _pytest(busy, "--geplug-conformance=example_card")
    assert summary.startswith(f"{len(conformance._TESTS)} passed") and "failed" not in summary


def test_option_and_an_importing_module_run_each_check_once(busy: Path) -> None:
    summary = _pytest(busy, "--geplug-conformance=example_card", "tests")
    assert summary.startswith(f"{len(conformance._TESTS)} passed"), summary
