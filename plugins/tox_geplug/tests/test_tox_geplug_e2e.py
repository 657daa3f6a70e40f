"""End to end: a scratch project's `tox` builds one environment per product, passes, and
picks up an edit to a local plugin on the next run (no `tox -r`).

It creates three virtual environments with the simulator's dependencies (~2-3 minutes on
two cores, from pip's cache or index), so it runs where GEPLUG_TOX_E2E=1 (the `tox_geplug`
tox environment of this repository) and is skipped elsewhere.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tox_geplug_scratch import PRODUCTS, clean_env, make_project

pytestmark = pytest.mark.skipif(os.environ.get("GEPLUG_TOX_E2E") != "1",
                                reason="set GEPLUG_TOX_E2E=1 to run the 2-3 minute tox run")


def _tox(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tox", "--workdir", str(project / ".tox"),
                           *args], cwd=project, env=clean_env(),
                          capture_output=True, text=True, timeout=900)


def _display_name(project: Path, env: str) -> str:
    python = project / ".tox" / env / "bin" / "python"
    done = subprocess.run([str(python), "-c", "import geplug; "
                           f"print(geplug.get_product({env!r}).display_name)"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_tox_runs_every_product_and_picks_up_a_local_plugin_edit(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project")
    first = _tox(project)
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
    for name in PRODUCTS:
        assert f"{name}: OK" in first.stdout
    assert first.stdout.count("passed") >= len(PRODUCTS)
    before = _display_name(project, "atlas_350")
    toml = project / "plugins" / "atlas_350" / "geplug_atlas_350" / "capabilities.toml"
    text = toml.read_text(encoding="utf-8")
    assert f'display_name = "{before}"' in text
    toml.write_text(text.replace(f'display_name = "{before}"',
                                 'display_name = "Atlas 350 (edited locally)"'),
                    encoding="utf-8")
    second = _tox(project)
    assert second.returncode == 0, second.stdout[-4000:]
    assert _display_name(project, "atlas_350") == "Atlas 350 (edited locally)"
    reinstalls = [line for line in second.stdout.splitlines() if "geplug-reinstall>" in line]
    assert [line.split(":")[0] for line in reinstalls if "geplug_atlas_350-" in line] == [
        "atlas_350"]  # the edited plugin, in its one environment; no `tox -r`
