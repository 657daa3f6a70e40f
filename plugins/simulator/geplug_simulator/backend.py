"""The simulator as an ``onnx.backend`` backend, for onnx's own backend tests.

``SimBackend`` compiles each model on one product under one configuration (default:
:data:`~geplug_simulator.DEFAULT_PRODUCT` with ``precision_mode = must_keep_origin_dtype``,
so no op changes dtype) and runs it with :meth:`CompiledModel.run`;
:mod:`geplug_simulator.conformance` runs onnx's node tests on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep

from geplug_simulator import DEFAULT_PRODUCT

__all__ = ["SimBackend", "SimBackendRep"]


class SimBackendRep(BackendRep):
    """A compiled model behind the onnx backend interface."""

    def __init__(self, compiled: Any) -> None:
        self.compiled = compiled

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        """Run with positional (graph-input order) or named inputs; outputs in graph order."""
        names = list(self.compiled.imported.inputs)
        if isinstance(inputs, Mapping):
            feeds = dict(inputs)
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            feeds = dict(zip(names, list(inputs), strict=False))
        out = self.compiled.run(feeds)
        return tuple(out[name] for name in self.compiled.imported.outputs)


class SimBackend(Backend):
    """``onnx.backend`` interface over the simulator (CPU device only)."""

    product: ClassVar[str] = DEFAULT_PRODUCT
    options: ClassVar[dict[str, Any]] = {"precision_mode": "must_keep_origin_dtype"}
    _systems: ClassVar[dict[tuple[str, str], Any]] = {}

    @classmethod
    def system(cls) -> Any:
        """The (cached) system of ``product`` with ``options``."""
        key = (cls.product, repr(sorted(cls.options.items())))
        system = cls._systems.get(key)
        if system is None or system.closed:
            import geplug

            system = geplug.initialize_system(product=cls.product, config=dict(cls.options))
            cls._systems[key] = system
        return system

    @classmethod
    def close(cls) -> None:
        """Shut down the cached systems (after a test run; the next use opens new ones)."""
        while cls._systems:
            _, system = cls._systems.popitem()
            if not system.closed:
                system.shutdown()

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU",
                **kwargs: Any) -> SimBackendRep:
        """Compile ``model`` for the backend's product."""
        super().prepare(model, device, **kwargs)
        return SimBackendRep(cls.system().compile(model))

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU",
                  **kwargs: Any) -> tuple[np.ndarray, ...]:
        """Compile and run once."""
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        """Only the CPU (where the simulation runs)."""
        return device == "CPU"

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs: Sequence[np.ndarray], device: str = "CPU",
                 outputs_info: Any = None, **kwargs: Any) -> tuple[np.ndarray, ...]:
        """Not provided (the node tests use ``prepare``)."""
        raise NotImplementedError("SimBackend runs whole models; use prepare()")
