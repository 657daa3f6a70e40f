"""The simulator passes geplug's backend conformance suite on every installed product."""

from geplug.testing.backend_conformance import *  # noqa: F403 - collects the test_* functions

GEPLUG_BACKEND_CONFORMANCE = "simulator"
