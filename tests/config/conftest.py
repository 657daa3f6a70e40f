"""Fixtures of the session-option tests."""

from __future__ import annotations

from typing import Any

import pytest

from geplug.testing.plugin import require_product


@pytest.fixture
def a2() -> Any:
    """The Atlas A2 declaration (always installed with the core's tests)."""
    return require_product("atlas_a2")
