"""A card whose capabilities.toml has a mistake is named once, with a did-you-mean, when any
command loads the plugins (the issue: "load errors print twice and have no did-you-mean")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from geplug.testing.fakedist import write_distribution
from geplug.testing.samples import card_files, minimal_toml


def _site_with_a_typo(tmp_path: Path) -> Path:
    toml = minimal_toml("typocard", ("Typo1",)).replace("display_name", "displayname", 1)
    return write_distribution(tmp_path / "site", "fake-typo-card", version="0.2",
                              entry_points={"typocard": "typocard.hooks"},
                              files=card_files("typocard", toml))


def _geplug(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(site), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, "-m", "geplug.cli.main", *args], env=env,
                          capture_output=True, text=True, check=False, timeout=120)


def test_a_key_typo_in_an_installed_card_is_reported_once_with_did_you_mean(
        tmp_path: Path) -> None:
    done = _geplug(_site_with_a_typo(tmp_path), "products")
    err = done.stderr
    assert err.count("'typocard'") == 1 and err.count("skipped: invalid capabilities") == 1, err
    assert "did you mean 'display_name'" in err, err
