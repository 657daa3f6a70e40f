"""Fixtures for the dump tests: a fresh plugin manager, systems and synthetic dump events."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import numpy as np
import pytest

from geplug.config.model import SessionConfig
from geplug.config.resolved import ResolvedConfig
from geplug.events import DumpEvent, OpRecord, RunInfo, TensorRecord
from geplug.plugin import PluginManager
from geplug.products.schema import Product
from geplug.runtime.system import System

BASE_TS = 1749451765349986


@pytest.fixture
def manager() -> PluginManager:
    """A freshly loaded plugin manager (built-in dump writer included)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PluginManager().load()


@pytest.fixture
def a2(manager: PluginManager) -> Product:
    """The Atlas A2 product (FFTS+ names) from the installed plugin."""
    return manager.products().get("atlas_a2")


@pytest.fixture
def plain_product(a2: Product) -> Product:
    """Atlas A2 with standard (non FFTS+) dump names, as products before 910b declare."""
    return attrs.evolve(a2, dump=attrs.evolve(a2.dump, ffts_plus_names=False))


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


_tasks = itertools.count(1)


def tensor(array: Any, name: str = "t", fmt: str = "ND") -> TensorRecord:
    """A TensorRecord of ``array``."""
    arr = np.asarray(array)
    return TensorRecord(name=name, array=arr, dtype=arr.dtype.name, format=fmt)


def event(
    system: System,
    *,
    op: str = "layer1/MatMul",
    op_type: str = "MatMulV2",
    inputs: Any = (),
    outputs: Any = (),
    step: int = 0,
    task_id: int | None = None,
    kind: str = "data",
    model_name: str = "ge_default_20240125153322_41",
    model_id: int = 6,
    ts: int | None = None,
    **op_fields: Any,
) -> DumpEvent:
    """A synthetic DumpEvent (arrays are wrapped into TensorRecords)."""
    task = task_id if task_id is not None else next(_tasks)
    ins: Any = tuple(t if isinstance(t, TensorRecord) else tensor(t, f"in{i}")
                     for i, t in enumerate(inputs))
    outs: Any = tuple(t if isinstance(t, TensorRecord) else tensor(t, f"out{i}")
                      for i, t in enumerate(outputs))
    extra = {k: op_fields.pop(k) for k in ("phase", "workspace", "tiling", "message")
             if k in op_fields}
    return DumpEvent(
        kind=kind,  # type: ignore[arg-type]
        run=RunInfo(system=system, model_name=model_name, model_id=model_id, step=step,
                    device_id=system.config.device_id),
        op=OpRecord(name=op, op_type=op_type, task_id=task, **op_fields),
        inputs=ins,
        outputs=outs,
        timestamp_us=ts if ts is not None else BASE_TS + task * 10,
        **extra,
    )


def written(results: list[Any]) -> list[str]:
    """Flatten ``System.emit_dump`` results into a list of paths."""
    return [p for r in results for p in r]


@pytest.fixture
def make_event() -> Callable[..., DumpEvent]:
    """The :func:`event` helper: ``make_event(system, op=..., inputs=[...], outputs=[...])``."""
    return event
