"""``geplug_torch.backend(product=..., config=...)``: a ``torch.compile`` backend.

In the spirit of torchair's ``get_npu_backend(compiler_config=...)``: the returned object is
passed as ``torch.compile(model, backend=...)``. It opens a geplug system for the product
with ``backend="torch"`` (the configuration is checked first: every problem at once) and
compiles each dynamo graph through AOTAutograd, forward and backward, onto that product
(:mod:`geplug_torch.graph`). ``shutdown()`` (or leaving a ``with`` block, or the end of the
process) closes the system: after it every dump and profiling file is complete.
"""

from __future__ import annotations

import atexit
import weakref
from typing import Any

from geplug_torch._torch import require_torch

__all__ = ["TorchBackend", "backend"]


class TorchBackend:
    """A torch.compile backend bound to one simulated product and configuration.

    Attributes: ``system`` (the geplug :class:`~geplug.runtime.system.System`),
    ``runtime`` (its :class:`~geplug_torch.runtime.TorchRuntime`), ``models`` (one
    :class:`~geplug_torch.model.TrainingModel` per dynamo graph).
    """

    def __init__(self, product: Any = None, config: Any = None, *, manager: Any = None,
                 env: Any = None) -> None:
        require_torch("geplug_torch.backend()")
        import geplug
        from geplug.config.parse import parse_source
        from geplug_torch.config import to_session_config

        source = to_session_config(config)
        self.system = geplug.initialize_system(product, source, backend="torch",
                                               manager=manager, env=env)
        self.runtime = self.system.runtime
        self.runtime.user_config = parse_source(source)[0]
        self._graph_breaks_at_start = _graph_break_count()
        ref = weakref.ref(self)
        atexit.register(_shutdown_ref, ref)

    @property
    def models(self) -> list[Any]:
        """The compiled models (one per dynamo graph), in compile order."""
        return list(self.runtime.models)

    @property
    def graph_breaks(self) -> int:
        """Graph breaks torch.compile reported since this backend was made (dynamo's
        ``graph_break`` counter: each break splits a function into more graphs)."""
        return _graph_break_count() - self._graph_breaks_at_start

    def report(self) -> dict[str, Any]:
        """What was compiled: graphs, graph breaks, and per phase the ops, device tasks,
        lowered ops, fusions, simulated time and memory plan (the core's device model);
        ``memory``: the job's device memory across its graphs (capacity and the peak by
        kind: :class:`geplug_torch.memory.DeviceMemory`)."""
        graphs = []
        for m in self.runtime.models:
            phases = {}
            for p, g in m.graphs.items():
                opt = g.device.graph
                phases[p] = {
                    "ops": len(g.decisions), "tasks": len(g.ops), "lowered": g.lowered,
                    "eliminated": list(opt.eliminated), "folded": list(opt.folded),
                    "fusions": [{"name": f.name, "pattern": f.pattern,
                                 "members": list(f.members)} for f in opt.fusions],
                    "simulated_time_us": round(g.span_us, 3),
                    "memory": g.device.memory.to_json(),
                }
            graphs.append({"model": m.name, "model_id": m.model_id, "phases": phases,
                           "simulated_time_us": round(m.simulated_time_us, 3)})
        return {"product": self.system.product.name, "graphs": graphs,
                "graph_breaks": self.graph_breaks, "iteration": self.runtime.iteration,
                "memory": self.runtime.memory.to_json()}

    def memory_allocated(self) -> int:
        """Device bytes held now, between graphs: parameters, gradients, optimizer states
        and activations saved for backward (``torch.npu.memory_allocated()``'s reading;
        :mod:`geplug_torch.memory`)."""
        return self.runtime.memory.allocated_bytes(self.runtime.iteration)

    def max_memory_allocated(self) -> int:
        """The peak of the device memory so far, a running graph's own plan included
        (``torch.npu.max_memory_allocated()``'s reading); ``report()["memory"]["peak"]``
        says where it was and of what."""
        return self.runtime.memory.peak.total

    def decisions(self) -> list[Any]:
        """Every aten op's :class:`~geplug.precision.OpDecision`, forward before backward."""
        return [d for m in self.runtime.models
                for phase in ("inference", "forward", "backward") if phase in m.graphs
                for d in m.graphs[phase].decisions]

    def __call__(self, gm: Any, example_inputs: Any) -> Any:
        """torch.compile's backend protocol: compile one dynamo graph (AOTAutograd)."""
        from torch._dynamo.backends.common import aot_autograd

        from geplug_torch.copies import host_input_positions, state_positions
        from geplug_torch.model import TrainingModel

        self.system._check_open()
        import torch

        if not self.system.product.compute.fused_attention:
            from geplug_torch.attention import use_math_attention

            use_math_attention(gm)  # torch_npu's math path: no fused kernel on this SoC
        params = tuple(i for i, x in enumerate(example_inputs)
                       if isinstance(x, torch.nn.Parameter))
        model = TrainingModel(self.runtime, parameters=params,
                              host_inputs=host_input_positions(gm, example_inputs),
                              state=state_positions(gm, example_inputs))
        compiler = aot_autograd(fw_compiler=model.forward_compiler,
                                bw_compiler=model.backward_compiler,
                                inference_compiler=model.inference_compiler)
        return compiler(gm, example_inputs)

    def shutdown(self) -> None:
        """Close the system (idempotent): every writer flushes and closes its files."""
        self.system.shutdown()

    def __enter__(self) -> TorchBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        return f"<geplug_torch backend {self.system.product.name} {self.system!r}>"


def _graph_break_count() -> int:
    try:
        from torch._dynamo.utils import counters
    except ImportError:  # pragma: no cover - every torch with torch.compile has it
        return 0
    return int(sum(counters["graph_break"].values()))


def _shutdown_ref(ref: Any) -> None:
    obj = ref()
    if obj is not None and not obj.system.closed:
        obj.system.shutdown()


def backend(product: Any = None, config: Any = None, **kwargs: Any) -> TorchBackend:
    """A torch.compile backend for ``product`` under ``config`` (see
    :mod:`geplug_torch.config` for the accepted forms; ``manager=`` / ``env=`` as
    :func:`geplug.initialize_system`)."""
    return TorchBackend(product, config, **kwargs)
