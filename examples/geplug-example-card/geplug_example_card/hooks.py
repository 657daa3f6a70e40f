"""Declares the example card from ``capabilities.toml``; the product is data."""

from __future__ import annotations

from importlib.resources import files

from geplug import hookimpl
from geplug.products import Declaration, declare

GEPLUG_PLUGIN_API = 1
"""The geplug plugin API this module was written for; geplug refuses other versions."""


@hookimpl
def geplug_capabilities() -> list[Declaration]:
    """The example card's declaration (it ``extends`` atlas_a2 and overrides a few keys)."""
    return [declare(files("geplug_example_card") / "capabilities.toml")]
