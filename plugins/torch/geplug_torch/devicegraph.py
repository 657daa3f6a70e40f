"""The torch side of the device model: an aten fx graph as a :class:`geplug.device.Graph`.

Each fx node that computes becomes a device-graph node with its Ascend op type
(:mod:`geplug_torch.opmap`); each aten view (``view``, ``t``, ``expand``, ...) becomes a node
of a view op type, so the core's :func:`geplug.device.optimize` aliases its output to its
input's memory (no task) while the consumer keeps the view's own shape for its cost; a
``getitem`` of a multi-output op only names one of that op's outputs (``native_layer_norm:0``).

Tensor kinds follow torch_npu's training graphs: every graph input (a primal, a saved
activation, a tangent) is already on the device when the graph is launched - there is no
host copy inside a compiled step - and parameters are device-resident variables, not
compile-time constants (nothing is folded over them; they count as resident memory).
``get_attr`` tensors the graph itself holds are constants and may be folded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from geplug.device import Graph, Node, Tensor
from geplug.products.schema import GraphCaps
from geplug_torch.opmap import CONV_BACKWARD_KERNELS, ascend_op_type, aten_name, is_view

__all__ = ["VIEW_OP_TYPE", "FxGraph", "TensorMeta", "fx_device_graph", "view_caps"]

VIEW_OP_TYPE = "Reshape"
"""The op type a torch view gets in the device graph: GE's metadata-only relabel."""

_DTYPE_NAMES = {"float16": "float16", "bfloat16": "bfloat16", "float32": "float32",
                "float64": "float64", "int64": "int64", "int32": "int32", "int16": "int16",
                "int8": "int8", "uint8": "uint8", "bool": "bool"}


@attrs.frozen
class TensorMeta:
    """A tensor an op reads or writes: its device-graph name, shape and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: str


@attrs.frozen(kw_only=True)
class FxGraph:
    """An fx graph translated: the device graph and what maps it back to fx nodes."""

    graph: Graph
    fx_nodes: dict[str, Any] = attrs.field(repr=False)
    """Device-graph node name -> fx node (computing nodes only; the kernels of one
    ``convolution_backward`` share its fx node)."""
    metas: dict[str, TensorMeta] = attrs.field(repr=False)
    """Device-graph tensor name -> its meta."""
    placeholders: tuple[str, ...]
    weights: frozenset[str]
    """Placeholders that are parameters (device-resident variables)."""
    call_inputs: dict[str, tuple[str, ...]] = attrs.field(repr=False, factory=dict)
    """fx node of an aten call run as several kernels -> the call's tensor arguments."""


def dtype_name(dtype: Any) -> str:
    """``torch.float32`` -> ``float32`` (the names the products' operator tables use)."""
    text = str(dtype).replace("torch.", "")
    return _DTYPE_NAMES.get(text, text)


def _shape(t: Any) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in t.shape)
    except (TypeError, ValueError):  # symbolic sizes: count them as 1 (dynamic shape)
        return tuple(1 for _ in t.shape)


def _leaves(val: Any, path: str) -> list[tuple[str, Any]]:
    """(name, tensor) of every tensor in an fx ``meta['val']``: ``path`` for a tensor,
    ``path:i`` (recursively) for the positions of a tuple or list."""
    import torch

    if isinstance(val, torch.Tensor):
        return [(path, val)]
    if isinstance(val, (list, tuple)):
        return [leaf for i, v in enumerate(val) for leaf in _leaves(v, f"{path}:{i}")]
    return []


def view_caps(caps: GraphCaps) -> GraphCaps:
    """``caps`` with :data:`VIEW_OP_TYPE` among the view op types: an aten view is a view
    on every product (it changes metadata only), whatever its declaration lists."""
    if VIEW_OP_TYPE in caps.view_op_types:
        return caps
    return attrs.evolve(caps, view_op_types=(*caps.view_op_types, VIEW_OP_TYPE))


class _Builder:
    def __init__(self) -> None:
        self.ref: dict[str, str] = {}
        """fx node -> its tensor name in the device graph (a path for ``getitem``)."""
        self.tensors: dict[str, Tensor] = {}
        self.metas: dict[str, TensorMeta] = {}
        self.nodes: list[Node] = []
        self.fx_nodes: dict[str, Any] = {}
        self.placeholders: list[str] = []
        self.call_inputs: dict[str, tuple[str, ...]] = {}

    def add_tensor(self, name: str, t: Any, kind: Any) -> None:
        meta = TensorMeta(name, _shape(t), dtype_name(t.dtype))
        self.metas[name] = meta
        self.tensors[name] = Tensor(name=name, dtype=meta.dtype, shape=meta.shape, kind=kind)

    def tensor_args(self, node: Any) -> list[str]:
        import torch.fx

        found: list[str] = []

        def visit(a: Any) -> None:
            if isinstance(a, torch.fx.Node):
                ref = self.ref.get(a.name)
                if ref is not None and ref in self.tensors:
                    found.append(ref)
            elif isinstance(a, (list, tuple)):
                for x in a:
                    visit(x)

        for a in node.args:
            visit(a)
        for a in node.kwargs.values():
            visit(a)
        return found

    def source(self, node: Any) -> None:
        """A placeholder or get_attr node: a graph input, a parameter or a constant."""
        leaves = _leaves(node.meta.get("val"), node.name)
        if node.op == "placeholder":
            self.placeholders.append(node.name)
        kind = "constant" if node.op == "get_attr" else "input"
        for name, t in leaves:
            self.add_tensor(name, t, kind)
        if leaves:
            self.ref[node.name] = node.name

    def call(self, node: Any) -> None:
        aten = aten_name(node.target)
        if aten == "getitem":
            src = node.args[0]
            base = self.ref.get(getattr(src, "name", ""))
            if base is not None:
                self.ref[node.name] = f"{base}:{int(node.args[1])}"
            return
        leaves = _leaves(node.meta.get("val"), node.name)
        args = self.tensor_args(node)
        if not leaves:
            return
        self.ref[node.name] = node.name
        for name, t in leaves:
            self.add_tensor(name, t, "activation")
        outs = [name for name, _ in leaves]
        if is_view(aten):
            if args:
                self.nodes.append(Node(name=node.name, op_type=VIEW_OP_TYPE,
                                       source_op=f"aten.{aten}", inputs=args[:1], outputs=outs))
                return
        if aten == "convolution_backward":
            self.conv_backward(node, outs)
            return
        transposed = aten == "convolution" and len(node.args) > 6 and bool(node.args[6])
        if aten in _ATTENTION_GRAD:
            # CANN's FlashAttentionScoreGrad reads (query, key, value, dy, ...); aten's
            # backward takes (grad_out, query, key, value, out, logsumexp): the framework
            # op keeps aten's order
            self.call_inputs[node.name] = tuple(args)
            args = [*args[1:4], *args[:1], *args[4:]]
        self.nodes.append(Node(name=node.name,
                               op_type=ascend_op_type(aten, transposed=transposed),
                               source_op=f"aten.{aten}", inputs=args, outputs=outs,
                               attrs=_cost_attrs(aten, node)))
        self.fx_nodes[node.name] = node

    def conv_backward(self, node: Any, outs: Sequence[str]) -> None:
        """``aten.convolution_backward`` as the kernels torch_npu runs for it
        (:data:`~geplug_torch.opmap.CONV_BACKWARD_KERNELS`): one device node per gradient
        it computes, named ``<node>_input`` / ``_filter`` / ``_bias``, each with the real
        kernel's operands - Conv2DBackpropInput(filter, out_backprop),
        Conv2DBackpropFilter(x, out_backprop), BiasAddGrad(out_backprop); for a transposed
        forward Conv2D(out_backprop, filter) and Conv2DBackpropFilter(out_backprop, x). The
        core costs each on the cube by its own shapes (:mod:`geplug.device.cost`). An
        operand the graph does not hold is ``""`` (an omitted input)."""
        dy, x, w = (self.ref.get(getattr(a, "name", ""), "") for a in node.args[:3])
        transposed = len(node.args) > 7 and bool(node.args[7])
        group = int(node.args[9]) if len(node.args) > 9 else 1
        self.call_inputs[node.name] = tuple(t for t in (dy, x, w) if t in self.tensors)
        operands = {0: (dy, w) if transposed else (w, dy),
                    1: (dy, x) if transposed else (x, dy),
                    2: (dy,)}
        for out in outs:
            index = int(out.rsplit(":", 1)[1])
            op_type, suffix = CONV_BACKWARD_KERNELS[(index, transposed)]
            name = f"{node.name}_{suffix}"
            inputs = [t if t in self.tensors else "" for t in operands[index]]
            self.nodes.append(Node(name=name, op_type=op_type,
                                   source_op="aten.convolution_backward", inputs=inputs,
                                   outputs=[out], attrs={"group": group} if index < 2 else {}))
            self.fx_nodes[name] = node

    def outputs(self, node: Any) -> list[str]:
        import torch.fx

        found: list[str] = []

        def visit(a: Any) -> None:
            if isinstance(a, torch.fx.Node):
                ref = self.ref.get(a.name)
                if ref is None:
                    return
                if ref in self.tensors:
                    found.append(ref)
                else:  # a whole tuple: each of its tensors
                    found.extend(n for n in self.tensors if n.startswith(ref + ":"))
            elif isinstance(a, (list, tuple)):
                for x in a:
                    visit(x)

        for a in node.args:
            visit(a)
        return list(dict.fromkeys(found))


_DIM_ARG = {"cat": 1, "split": 2, "split_with_sizes": 2}
"""aten ops whose ``dim`` (the core's ``axis``) is this positional argument (default 0)."""
_ATTENTION_CAUSAL_ARG = {"_scaled_dot_product_flash_attention_for_cpu": 4,
                         "_scaled_dot_product_flash_attention_for_cpu_backward": 7}
"""aten's fused attention ops (FlashAttentionScore and its gradient on the device) -> the
position of their ``is_causal`` argument."""
_ATTENTION_GRAD = frozenset({"_scaled_dot_product_flash_attention_for_cpu_backward"})
"""aten's fused attention backward: its device node reads CANN's operand order."""


def _cost_attrs(aten: str, node: Any) -> dict[str, Any]:
    """The few attributes the core reads: a convolution's ``group``; a concatenation's or
    split's ``axis`` (its ``dim``: the format rules of :mod:`geplug.device.formats`); a
    fused attention's ``causal`` (its ``is_causal``: the cube skips the masked blocks,
    :func:`geplug.device.cost.causal_fraction`)."""
    if aten == "convolution" and len(node.args) > 8:
        return {"group": int(node.args[8])}
    causal = _ATTENTION_CAUSAL_ARG.get(aten)
    if causal is not None:
        flag = node.args[causal] if len(node.args) > causal else node.kwargs.get(
            "is_causal", False)
        return {"causal": bool(flag)}
    position = _DIM_ARG.get(aten)
    if position is not None:
        dim = node.args[position] if len(node.args) > position else node.kwargs.get("dim", 0)
        return {"axis": int(dim)}
    return {}


def fx_device_graph(gm: Any, *, name: str, weights: Sequence[str] = ()) -> FxGraph:
    """``gm`` (an aten GraphModule) as the device model's IR (module docstring);
    ``weights`` names the placeholders that are parameters."""
    b = _Builder()
    outputs: list[str] = []
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "get_attr"):
            b.source(node)
        elif node.op == "call_function":
            b.call(node)
        elif node.op == "output":
            outputs = b.outputs(node)
    graph = Graph(name=name, nodes=tuple(b.nodes), tensors=b.tensors, inputs=(),
                  outputs=tuple(outputs))
    return FxGraph(graph=graph, fx_nodes=b.fx_nodes, metas=b.metas,
                   placeholders=tuple(b.placeholders),
                   weights=frozenset(w for w in weights if w in b.tensors),
                   call_inputs=b.call_inputs)

