"""Built-in dump writer plugin (registered before any entry point)."""

from __future__ import annotations

GEPLUG_PLUGIN_API = 1
