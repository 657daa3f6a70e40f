"""Declares the Atlas 350 accelerator card from ``capabilities.toml``; the product is data."""

from __future__ import annotations

from importlib.resources import files

from geplug import hookimpl
from geplug.products import Declaration, declare

__all__ = ["GEPLUG_PLUGIN_API", "geplug_capabilities"]

GEPLUG_PLUGIN_API = 1


@hookimpl
def geplug_capabilities() -> list[Declaration]:
    """The atlas_350 declaration (family ``950``)."""
    return [declare(files("geplug_atlas_350") / "capabilities.toml")]
