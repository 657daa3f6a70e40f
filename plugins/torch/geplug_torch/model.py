"""A model ``torch.compile`` handed to the backend: its forward and backward graphs.

One dynamo graph is one model (one model id and name, as GE runs a training graph): its
forward graph (or inference graph) and the backward graph AOTAutograd derives, compiled by
:func:`geplug_torch.graph.compile_graph`. Running a graph asks the runtime which iteration
it belongs to, runs the rewritten GraphModule - through an fx interpreter that keeps every
op's tensors on a step the dump writers want - and emits the step's events
(:mod:`geplug_torch.emit`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from geplug.events import OpRecord
from geplug_torch.copies import graph_copies
from geplug_torch.graph import CompiledGraph, compile_graph

if TYPE_CHECKING:
    from geplug_torch.runtime import TorchRuntime

__all__ = ["TrainingModel"]


class TrainingModel:
    """The compiled graphs of one dynamo graph (see the module docstring)."""

    def __init__(self, runtime: TorchRuntime, *, dynamic_shape: bool = False,
                 parameters: tuple[int, ...] = (), host_inputs: tuple[int, ...] = (),
                 register: bool = True, state: tuple[int, ...] | None = None) -> None:
        self.runtime = runtime
        self.parameters = parameters
        """Positions of the dynamo graph's inputs that are parameters (``nn.Parameter``)."""
        self.state = parameters if state is None else state
        """Positions of its inputs that are module state: parameters and buffers."""
        self.host_inputs = host_inputs
        """Positions of the dynamo graph's inputs copied from the host on every forward (the
        input batch: :func:`geplug_torch.copies.host_input_positions`)."""
        self.model_id = runtime.system.next_model_id()
        self.name = f"graph_{self.model_id}"
        self.dynamic_shape = dynamic_shape
        self.graphs: dict[str, CompiledGraph] = {}
        self.backward_done_in = -1
        """The iteration whose backward graph ran last (-1: none yet)."""
        self.runs = 0
        if register:  # a static model (geplug_torch.static) has no training steps
            runtime.add_model(self)

    # -- AOTAutograd compilers -------------------------------------------------------------

    def forward_compiler(self, gm: Any, example_inputs: Any) -> Any:
        """AOTAutograd's ``fw_compiler``: the forward graph of a training model."""
        return self._compile(gm, "forward")

    def backward_compiler(self, gm: Any, example_inputs: Any) -> Any:
        """AOTAutograd's ``bw_compiler``: the backward graph (op names ``gradients/...``)."""
        compiled = self._compile(gm, "backward")
        self.runtime.announce(self)
        return compiled

    def inference_compiler(self, gm: Any, example_inputs: Any) -> Any:
        """AOTAutograd's ``inference_compiler``: a graph run without gradients."""
        compiled = self._compile(gm, "inference")
        self.runtime.announce(self)
        return compiled

    def _compile(self, gm: Any, phase: str) -> Any:
        from geplug_torch.emit import GraphEmitter

        weights = self._weights(gm)
        cg = compile_graph(gm, system=self.runtime.system, phase=phase, graph_name=self.name,
                           name_prefix="gradients/" if phase == "backward" else "",
                           weights=weights)
        state = self._names(self.state)
        cg = attrs.evolve(cg, copies=graph_copies(gm, phase, self.host_inputs),
                          parameters=tuple(k for k, n in enumerate(cg.placeholders)
                                           if n in state))
        self.graphs[phase] = cg
        emitter = GraphEmitter(self, cg)
        module = cg.module

        def run(args: list[Any]) -> Any:
            return emitter.run(module, args)

        run._boxed_call = True  # type: ignore[attr-defined]
        return run

    def _weights(self, gm: Any) -> list[str]:
        """The placeholders of ``gm`` that are parameters: AOTAutograd names the dynamo
        graph's inputs ``primals_1...`` in order (the backward graph keeps the names of the
        primals it saves; an inference graph names them ``arg0_1...``)."""
        names = self._names(self.parameters)
        return [n.name for n in gm.graph.nodes if n.op == "placeholder" and n.name in names]

    @staticmethod
    def _names(positions: tuple[int, ...]) -> set[str]:
        """The placeholder names AOTAutograd gives the dynamo graph's inputs at
        ``positions``."""
        return {f"primals_{i + 1}" for i in positions} | {f"arg{i}_1" for i in positions}

    # -- facts -----------------------------------------------------------------------------

    def records(self) -> tuple[OpRecord, ...]:
        """Every op of the compiled graphs, forward first (fp_point / bp_point checks)."""
        order = ("inference", "forward", "backward")
        return tuple(op.record for phase in order if phase in self.graphs
                     for op in self.graphs[phase].ops)

    @property
    def memory_bytes(self) -> int:
        """Device memory GE holds for the model: its graphs' weights (each once), the
        largest of their activation peaks (one feature-map pool serves them in turn; a
        graph's held inputs are in its peak) and workspace - what the memory profiling
        records reserve (``geplug.profiling.memory_records``)."""
        plans = [g.device.memory for g in self.graphs.values()]
        weights: dict[str, int] = {}
        for p in plans:
            weights.update((name, b) for name, b in p.resident if name not in weights)
        return (sum(weights.values())
                + max((p.activation_peak_bytes for p in plans), default=0)
                + max((p.workspace_bytes for p in plans), default=0))

    @property
    def memory_plans(self) -> tuple[Any, ...]:
        """The memory plan of each compiled graph, forward first (the memory profiling
        records replay them)."""
        order = ("inference", "forward", "backward")
        return tuple(self.graphs[p].device.memory.with_task_prefix(
            "gradients/" if p == "backward" else "") for p in order if p in self.graphs)

    @property
    def simulated_time_us(self) -> float:
        """Modelled device time of one iteration's graphs: each graph's span on the core's
        stream schedule (AI CPU tasks overlap the compute stream where dependencies allow)."""
        return float(sum(g.span_us for g in self.graphs.values()))

    def close(self) -> None:
        """Nothing is held beyond the graphs; kept for symmetry with the simulator."""
