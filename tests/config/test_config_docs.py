"""Every TOML example of docs/configuration.md reads and checks without errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from geplug.config import SessionConfig, check
from geplug.testing.plugin import require_product

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
BLOCKS = re.findall(r"```toml\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_doc_has_toml_examples() -> None:
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("block", BLOCKS, ids=[f"example{i}" for i in range(len(BLOCKS))])
def test_doc_example_checks_clean(block: str) -> None:
    match = re.search(r"#\s*product:\s*(\w+)", block)
    product = require_product(match.group(1) if match else "atlas_a2")
    config = SessionConfig.from_toml(block, text=True)
    errors = [p for p in check(config, product, env={}) if p.severity == "error"]
    assert errors == []


def test_doc_names_every_option() -> None:
    from geplug.config.model import PROFILING_KEYS
    from geplug.config.options import OPTION_ORDER

    text = DOC.read_text(encoding="utf-8")
    missing = [n for n in (*OPTION_ORDER, *PROFILING_KEYS) if n not in text]
    assert missing == []


def test_doc_checklist_covers_every_reference_rule() -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = [f"R{n}" for n in range(1, 31) if f"| R{n} |" not in text]
    assert missing == []
