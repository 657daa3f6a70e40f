"""Skip lines point at the user's test, not into geplug's plugin."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

MODULE = '''import pytest
from geplug.testing.plugin import require_product


def test_needs_missing():
    require_product("no_such_product")


@pytest.mark.geplug_requires_products("no_such_product")
def test_marked():
    pass
'''


def test_skip_reasons_name_the_test_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "test_skiploc_mine.py").write_text(MODULE)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           "-p", "geplug.testing"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    skipped = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skipped) == 2, done.stdout
    assert all("test_skiploc_mine.py:" in line for line in skipped), skipped
    assert not any("geplug/testing" in line for line in skipped)
