"""Fixtures of the geplug-torch tests: a fresh dynamo cache per test (torch.compile caches
compiled frames per code object; each test compiles onto its own backend)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

HAVE_TORCH = importlib.util.find_spec("torch") is not None


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> Iterator[None]:
    if HAVE_TORCH:
        import torch._dynamo

        torch._dynamo.reset()
        torch.manual_seed(0)
    yield
