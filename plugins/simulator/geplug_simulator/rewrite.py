"""The precision rewrite: Cast pairs around every op that runs in a reduced precision.

onnxruntime computes every rewritten op in float32; the op's inputs are first rounded to the
device dtype (``Cast(float16|bfloat16) -> Cast(float32)``, weights pre-rounded in numpy) and
its outputs rounded the same way, so float16/bfloat16 rounding and overflow to inf are exact
(DESIGN.md "The simulator"). Tensors the source graph stores in float16/bfloat16 keep their
type between ops; an op reading them computes on float32 copies. An op whose decision keeps
float32 is left untouched, so a float32 model under must_keep_origin_dtype runs as it is.
A tensor already exact in the device dtype gets no Cast pair (rounding it is the identity,
:mod:`geplug_simulator.exact`): the rounded output of a lowered op, and what a selecting op
(ReLU, Clip, MaxPool, Reshape, Transpose, ...) makes of such tensors.

For float16 ops in ``high_performance`` mode, SoftmaxV2, LRN and average Pooling are replaced
by subgraphs whose intermediates are held in float16 (the cheap implementation,
:mod:`geplug_simulator.fp16impl`); in ``high_precision`` mode only their inputs and outputs
are float16 (options.md §9.1). The graph is built by :mod:`geplug_simulator.graphbuild`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs
import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from geplug.errors import CompileError
from geplug.precision import OpDecision
from geplug_simulator.exact import exact_in
from geplug_simulator.fp16impl import IMPL_REWRITTEN_OPS, cheap_fp16
from geplug_simulator.graphbuild import BF16, F16, F32, GraphBuilder, to_device
from geplug_simulator.importer import ELEM_TYPES, ImportedModel, TensorType

__all__ = ["IMPL_REWRITTEN_OPS", "RewrittenModel", "TensorRef", "rewrite", "to_device"]

_PRECISION = (F32, F16, BF16)


@attrs.frozen
class TensorRef:
    """A tensor of the rewritten graph and the device dtype its values are exact in."""

    name: str
    dtype: str
    source: str
    """The tensor's name in the source graph."""


@attrs.frozen(kw_only=True)
class RewrittenModel:
    """The model onnxruntime runs, and where each op's device tensors live in it."""

    model: onnx.ModelProto = attrs.field(repr=False)
    op_inputs: Mapping[str, tuple[TensorRef, ...]]
    op_outputs: Mapping[str, tuple[TensorRef, ...]]
    value_types: Mapping[str, int]
    """Element type of every node-produced tensor that can be exposed (dump session)."""
    constants: dict[str, np.ndarray] = attrs.field(repr=False)
    """Pre-rounded initializer values (source initializers are read on demand)."""
    init_protos: Mapping[str, onnx.TensorProto] = attrs.field(repr=False)
    casts_added: int = 0
    impl_rewritten: tuple[str, ...] = ()

    def ref_of(self, source: str) -> TensorRef | None:
        """Where tensor ``source`` (a source-graph name) lives as the device holds it: its
        producer's output, else an op's input (a graph input); ``None`` when no op has it."""
        for table in (self.op_outputs, self.op_inputs):
            for refs in table.values():
                for ref in refs:
                    if ref.source == source:
                        return ref
        return None

    def constant(self, name: str) -> np.ndarray | None:
        """The value of initializer ``name`` (``None`` when it is not an initializer)."""
        if name not in self.constants:
            proto = self.init_protos.get(name)
            if proto is None:
                return None
            self.constants[name] = numpy_helper.to_array(proto)
        return self.constants[name]


def _dtype_of(types: Mapping[str, TensorType], name: str) -> str | None:
    t = types.get(name)
    return t.dtype if t is not None else None


def _carry_exactness(b: GraphBuilder, node: onnx.NodeProto) -> None:
    """Record a node that runs as it is: a ``Constant``'s value for later checks, and the
    outputs of a selecting op whose inputs are exact in a dtype (:mod:`.exact`)."""
    types = b.imported.types
    if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and node.output:
        b.constant_nodes[node.output[0]] = node
        return
    dtype = exact_in(node, ((n, _dtype_of(types, n)) for n in node.input if n),
                     b.rounded_as.get, b.known_constant)
    if dtype is None:
        return
    for out in node.output:
        if out and _dtype_of(types, out) == F32:
            b.rounded_as[out] = dtype


def rewrite(imported: ImportedModel, decisions: Sequence[OpDecision]) -> RewrittenModel:
    """The model to run for ``decisions`` (one per node, in node order)."""
    b = GraphBuilder(imported)
    graph = imported.model.graph
    by_node = {d.node: d for d in decisions}
    op_inputs: dict[str, tuple[TensorRef, ...]] = {}
    op_outputs: dict[str, tuple[TensorRef, ...]] = {}
    impl_rewritten: list[str] = []
    types = imported.types
    for node in graph.node:
        d = by_node.get(node.name)
        if d is None:  # folded, view or dead: computed as it is (geplug.device.passes)
            b.nodes.append(node)
            _carry_exactness(b, node)
            op_inputs[node.name] = tuple(
                TensorRef(n, types[n].dtype if n in types else "", n) for n in node.input if n
            )
            op_outputs[node.name] = tuple(
                TensorRef(n, types[n].dtype if n in types else "", n) for n in node.output if n
            )
            continue
        orig, dev, out_dt = d.original_dtype, d.dtype, d.output_dtype or d.dtype
        if dev == "hifloat8":
            raise CompileError(
                f"node {node.name!r} ({d.op_type}) was assigned hifloat8 by "
                f"{d.reason.split(':')[0]}; "
                "hifloat8 numerics are not simulated - use another precision mode for "
                "simulation", node=node.name,
            )
        plain = (
            orig not in _PRECISION or dev not in _PRECISION or out_dt not in _PRECISION
            or (orig == dev == out_dt == F32)
            or node.domain not in ("", "ai.onnx")
            or any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                   for a in node.attribute)
        )
        if plain:
            b.nodes.append(node)
            _carry_exactness(b, node)
            op_inputs[node.name] = tuple(
                TensorRef(n, types[n].dtype if n in types else "", n) for n in node.input if n
            )
            op_outputs[node.name] = tuple(
                TensorRef(n, types[n].dtype if n in types else "", n) for n in node.output if n
            )
            continue
        new = onnx.NodeProto()
        new.CopyFrom(node)
        ins: list[TensorRef] = []
        rounded_in: set[str] = set()
        for i, name in enumerate(node.input):
            if not name:
                continue
            t = types.get(name)
            if t is None or t.dtype != orig:
                ins.append(TensorRef(name, t.dtype if t else "", name))
                continue
            if orig == F32:
                fed = b.round_to(name, dev, node.name)
            else:
                key = (name, F32)
                if key not in b.cache:
                    b.cache[key] = b.cast(name, F32, node.name)
                fed = b.cache[key]
                if dev not in (orig, F32):
                    fed = b.round_to(fed, dev, node.name)
            new.input[i] = fed
            rounded_in.add(fed)
            ins.append(TensorRef(fed, dev, name))
        outs: list[TensorRef] = []
        finals: list[tuple[str, str]] = []
        # a selecting op lowered to the dtype it outputs, every input of the original float
        # dtype rounded to it and every other input of a known non-float dtype
        selecting = (
            orig == F32 and out_dt == dev and dev != F32
            and exact_in(new, ((n, F32 if n in rounded_in else _dtype_of(types, n))
                               for n in new.input if n),
                         b.rounded_as.get, b.known_constant) == dev
        )
        for i, name in enumerate(node.output):
            if not name:
                continue
            t = types.get(name)
            if t is None or t.dtype != orig:
                outs.append(TensorRef(name, t.dtype if t else "", name))
                continue
            if orig == F32 and out_dt == F32:
                outs.append(TensorRef(name, F32, name))
                continue
            if selecting:  # its values are its inputs' rounded values: no rounding
                b.rounded_as[name] = out_dt
                outs.append(TensorRef(name, out_dt, name))
                continue
            raw = b.uniq(f"{name}::raw")
            b.value_types[raw] = TensorProto.FLOAT
            new.output[i] = raw
            finals.append((raw, name))
        cheap = (
            dev == F16 and d.impl_mode == "high_performance"
            and node.op_type in IMPL_REWRITTEN_OPS and len(finals) == 1
            and len(new.output) == 1
        )
        if cheap and cheap_fp16(b, node, new.input[0], new.output[0]):
            impl_rewritten.append(node.name)
        else:
            b.nodes.append(new)
        for raw, name in finals:
            if orig == F32:
                res = b.round_to(raw, out_dt, node.name, out=name)
                b.rounded_as[name] = out_dt
                outs.append(TensorRef(res, out_dt, name))
            else:
                held = raw if out_dt == F32 else b.round_to(raw, out_dt, node.name)
                b.cast(held, orig, node.name, out=name)
                b.value_types[name] = ELEM_TYPES[orig]
                outs.append(TensorRef(held, out_dt, name))
        op_inputs[node.name] = tuple(ins)
        op_outputs[node.name] = tuple(outs)
    model = onnx.ModelProto()
    model.CopyFrom(imported.model)
    del model.graph.node[:]
    model.graph.node.extend(b.nodes)
    model.graph.initializer.extend(b.new_inits)
    return RewrittenModel(
        model=model,
        op_inputs=op_inputs,
        op_outputs=op_outputs,
        value_types=b.value_types,
        constants=b.constants,
        init_protos=b.init_protos,
        casts_added=b.casts,
        impl_rewritten=tuple(impl_rewritten),
    )
