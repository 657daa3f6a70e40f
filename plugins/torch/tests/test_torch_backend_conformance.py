"""geplug-torch passes geplug's backend conformance suite on every installed product."""

import pytest

pytest.importorskip("torch")

from geplug.testing.backend_conformance import *  # noqa: F403 - collects the test_* functions

GEPLUG_BACKEND_CONFORMANCE = "torch"
