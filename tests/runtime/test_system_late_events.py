"""A system that was shut down ignores late dump and profiling events (no writer restarts)."""

from __future__ import annotations

import types

from geplug import hookimpl
from geplug.config.model import SessionConfig
from geplug.config.resolved import ResolvedConfig
from geplug.plugin import PluginManager
from geplug.runtime.system import System
from geplug.testing.samples import minimal_toml


def test_events_after_shutdown_reach_no_plugin(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from geplug.products import build_product, read_declaration

    path = tmp_path / "capabilities.toml"
    path.write_text(minimal_toml())
    product = build_product(read_declaration(path))
    seen: list[str] = []

    @hookimpl
    def geplug_dump(event: object) -> None:
        seen.append("dump")

    @hookimpl
    def geplug_profile(event: object) -> None:
        seen.append("profile")

    manager = PluginManager().load(builtins=False, entry_points=False)
    manager.register(types.SimpleNamespace(GEPLUG_PLUGIN_API=1, geplug_dump=geplug_dump,
                                           geplug_profile=geplug_profile), "recorder")
    config = ResolvedConfig(product=product.name, config=SessionConfig(profiling_mode=True))
    system = System(product=product, config=config, manager=manager)
    system.emit_dump(object())  # type: ignore[arg-type]
    system.emit_profile(object())  # type: ignore[arg-type]
    system.shutdown()
    assert system.emit_dump(object()) == []  # type: ignore[arg-type]
    system.emit_profile(object())  # type: ignore[arg-type]
    assert seen == ["dump", "profile"]
