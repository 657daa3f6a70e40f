"""The example card passes geplug's conformance suite (run with plain `pytest`)."""

from __future__ import annotations

from geplug.testing.conformance import *  # noqa: F403 - collects the test_* functions
from geplug.testing.plugin import require_product

GEPLUG_CONFORMANCE = "example_card"
"""The product the imported conformance tests run on."""


def test_card_overrides_only_what_differs() -> None:
    card = require_product("example_card")
    family = require_product("atlas_a2")
    assert card.compute.ai_cores == 12 and family.compute.ai_cores != 12
    assert "MemoryAccess" not in card.profiling.aic_metrics
    assert card.op("Gelu").aicore_dtypes == ("float16", "float32")
    assert card.op("Gelu").impl_modes == family.op("Gelu").impl_modes
    assert card.precision == family.precision
