"""Declares the two inference families from their TOML files; the products are data."""

from __future__ import annotations

from importlib.resources import files

from geplug import hookimpl
from geplug.products import Declaration, declare

__all__ = ["DECLARATION_FILES", "GEPLUG_PLUGIN_API", "geplug_capabilities"]

GEPLUG_PLUGIN_API = 1

DECLARATION_FILES = ("capabilities.toml", "capabilities_200i_a2.toml")
"""``atlas_infer`` (family 310p) and ``atlas_200i_a2`` (family 310b), in that order."""


@hookimpl
def geplug_capabilities() -> list[Declaration]:
    """The atlas_infer and atlas_200i_a2 declarations."""
    root = files("geplug_atlas_infer")
    return [declare(root / name) for name in DECLARATION_FILES]
