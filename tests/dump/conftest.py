"""Fixtures for the dump tests: a fresh plugin manager, systems and synthetic dump events.

No fixture needs an installed product plugin (see ``dump_helpers.sample_product``).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from dump_helpers import dump_event, sample_product, tensor

from geplug.config.model import SessionConfig
from geplug.config.resolve import resolve
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
    ``tmp_path / "dump"``; every system made is shut down after the test.

    The configuration goes through :func:`geplug.config.resolve` (``env``, default the
    process environment; cwd ``tmp_path``), as every real system's does, so the dump plugin
    sees resolved values only.
    ``resolved`` names the resolved value a test needs and is turned into the input that
    yields it: ``dump_root`` -> dump_path, ``device_id`` -> ASCEND_DEVICE_ID,
    ``exception_dump_level`` -> enable_exception_dump (default 0 here: no exception dump
    unless asked), ``exception_dump_dir`` -> checked against what resolve() derives."""
    made: list[System] = []

    def make(product: Product | None = None, resolved: dict[str, Any] | None = None,
             env: dict[str, str] | None = None, **options: Any) -> System:
        root = tmp_path / "dump"
        root.mkdir(exist_ok=True)
        options.setdefault("dump_path", str(root))
        extra = dict(resolved or {})
        env = dict(os.environ if env is None else env)
        if "dump_root" in extra:
            options["dump_path"] = extra.pop("dump_root")
        if "device_id" in extra:
            env["ASCEND_DEVICE_ID"] = str(extra.pop("device_id"))
        options.setdefault("enable_exception_dump", extra.pop("exception_dump_level", 0))
        want_dir = extra.pop("exception_dump_dir", None)
        if extra:
            raise TypeError(f"make_system: no resolve() input yields {sorted(extra)}")
        prod = product or plain_product
        rc = resolve(SessionConfig(**options), prod, env=env, cwd=str(tmp_path))
        assert want_dir is None or rc.exception_dump_dir in (None, want_dir), rc.exception_dump_dir
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
