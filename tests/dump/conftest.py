"""Fixtures for the dump tests: a fresh plugin manager, systems and synthetic dump events.

No fixture needs an installed product plugin (see ``dump_helpers.sample_product``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from dump_helpers import dump_event, sample_product, tensor

from geplug.config.model import SessionConfig
from geplug.config.resolved import ResolvedConfig
from geplug.events import DumpEvent
from geplug.plugin import PluginManager
from geplug.products.schema import Product
from geplug.runtime.system import System


@pytest.fixture
def manager() -> PluginManager:
    """A freshly loaded plugin manager (built-in dump writer included)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PluginManager().load()


@pytest.fixture
def ffts_product() -> Product:
    """A product whose dump file names carry the FFTS+ suffix (910b and later)."""
    return sample_product(ffts_plus=True)


@pytest.fixture
def plain_product() -> Product:
    """A product with standard (non FFTS+) dump names, as products before 910b declare."""
    return sample_product()


MakeSystem = Callable[..., System]


@pytest.fixture
def make_system(
    manager: PluginManager, plain_product: Product, tmp_path: Any
) -> Iterator[MakeSystem]:
    """``make_system(product=None, resolved=dict(...), **options)`` -> a System dumping under
    ``tmp_path / "dump"``; every system made is shut down after the test."""
    made: list[System] = []

    def make(product: Product | None = None, resolved: dict[str, Any] | None = None,
             **options: Any) -> System:
        root = tmp_path / "dump"
        root.mkdir(exist_ok=True)
        options.setdefault("dump_path", str(root))
        cfg = SessionConfig(**options)
        extra = dict(resolved or {})
        extra.setdefault("dump_root", str(root))
        prod = product or plain_product
        rc = ResolvedConfig(product=prod.name, config=cfg, **extra)
        system = System(product=prod, config=rc, manager=manager)
        made.append(system)
        return system

    yield make
    for system in made:
        system.shutdown()


@pytest.fixture
def make_event() -> Callable[..., DumpEvent]:
    """``make_event(system, op=..., inputs=[...], outputs=[...])`` (``dump_helpers.dump_event``)."""
    return dump_event


@pytest.fixture
def dump_tensor() -> Callable[..., Any]:
    """``dump_tensor(array, name, fmt)`` -> a TensorRecord (``dump_helpers.tensor``)."""
    return tensor
