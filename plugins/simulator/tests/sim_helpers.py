"""Shared helpers of the simulator tests (models, systems, a recording plugin)."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import onnx
import pytest

pytest.importorskip("geplug_simulator")

from geplug_simulator import DEFAULT_PRODUCT
from geplug_simulator.runtime import SimRuntime
from onnx import TensorProto, helper, numpy_helper

from geplug.config.model import SessionConfig
from geplug.config.resolve import resolve
from geplug.plugin import PluginManager
from geplug.products.schema import Product
from geplug.runtime.system import System
from geplug.testing.plugin import installed_products


def any_product() -> Product:
    """An installed product for a test that holds on every product (the default product when
    installed); skips the test when none is."""
    products = installed_products()
    if not products:
        pytest.skip("no product plugin is installed in this environment")
    return next((p for p in products if p.name == DEFAULT_PRODUCT), products[0])


def make_system(product: Any, manager: PluginManager | None = None, **options: Any) -> System:
    """A system on ``product`` served by the simulator; ``options`` are SessionConfig fields,
    resolved by :func:`geplug.config.resolve` (empty environment; exception dump off unless
    asked), then ``resolved__<field>`` ResolvedConfig fields a test pins on top."""
    manager = manager or PluginManager().load()
    if isinstance(product, str):
        product = manager.products().get(product)
    resolved_fields = {k[len("resolved__"):]: v for k, v in options.items()
                       if k.startswith("resolved__")}
    session_fields = {k: v for k, v in options.items() if not k.startswith("resolved__")}
    session_fields.setdefault("enable_exception_dump", 0)
    config = attrs.evolve(resolve(SessionConfig(**session_fields), product, env={}),
                          **resolved_fields)
    system = System(product=product, config=config, manager=manager)
    system.runtime = SimRuntime(system)
    system.backend = "simulator"
    return system


def graph_model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto],
                outputs: list[onnx.ValueInfoProto], inits: dict[str, np.ndarray] | None = None,
                opset: int = 17, name: str = "test") -> onnx.ModelProto:
    """A model from parts (initializers given as arrays)."""
    graph = helper.make_graph(nodes, name, inputs, outputs,
                              [numpy_helper.from_array(v, k) for k, v in (inits or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def f32(name: str, shape: list[Any]) -> onnx.ValueInfoProto:
    """A float32 tensor description."""
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def overflow_model() -> onnx.ModelProto:
    """y = (x @ w) @ v: the middle product reaches 1e5 (inf in float16), y is back near 1."""
    w = np.full((4, 4), 250.0, np.float32)
    v = np.full((4, 2), 1e-5, np.float32)
    return graph_model(
        [helper.make_node("MatMul", ["x", "w"], ["h"], name="big"),
         helper.make_node("MatMul", ["h", "v"], ["y"], name="small")],
        [f32("x", [1, 4])], [f32("y", [1, 2])], {"w": w, "v": v},
    )


@attrs.define
class Recorder:
    """A user plugin recording every dump and profiling event."""

    dumps: list[Any] = attrs.field(factory=list)
    profiles: list[Any] = attrs.field(factory=list)
    impl: Any = None

    def __attrs_post_init__(self) -> None:
        from geplug import hookimpl

        rec = self

        class _Impl:
            GEPLUG_PLUGIN_API = 1

            @hookimpl
            def geplug_dump(self, event: Any) -> list[str]:
                rec.dumps.append(event)
                return [f"/fake/{event.kind}/{event.op.name}"] if event.kind == "exception" \
                    else []

            @hookimpl
            def geplug_profile(self, event: Any) -> None:
                rec.profiles.append(event)

        self.impl = _Impl()
