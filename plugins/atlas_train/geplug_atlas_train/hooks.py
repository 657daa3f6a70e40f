"""Declares the Atlas training series from ``capabilities.toml``; the product is data."""

from __future__ import annotations

from importlib.resources import files

from geplug import hookimpl
from geplug.products import Declaration, declare

__all__ = ["GEPLUG_PLUGIN_API", "geplug_capabilities"]

GEPLUG_PLUGIN_API = 1


@hookimpl
def geplug_capabilities() -> list[Declaration]:
    """The atlas_train declaration (family ``910``)."""
    return [declare(files("geplug_atlas_train") / "capabilities.toml")]
