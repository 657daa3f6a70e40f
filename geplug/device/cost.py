"""Per-task work and simulated time from the product's calibrated ``[compute]`` figures.

``duration = task overhead (by issue mode) + max(compute time, memory time)``:

- **matrix work** (MatMul, BatchMatMul, Conv, ConvTranspose, and the gate GEMMs inside
  LSTM/GRU/RNN) runs on the cube: every dimension padded to ``cube_tile``, the output split
  into ``cube_block`` blocks over ``ai_cores`` in waves, each block paying ``cube_k_latency``
  of pipeline fill, at ``cube_tflops[dtype] * cube_efficiency[dtype]``. A dtype the cube does
  not have runs on the vector unit (``vector_tflops``).
- **vector work** at ``vector_tflops * vector_efficiency``, transcendental functions costing
  ``transcendental_flops`` instructions per element; bytes at
  ``memory_bandwidth_gbps * vector_bandwidth_fraction`` (``matrix_bandwidth_fraction`` for a
  memory-bound matrix op), split over as many cores as ``vector_bytes_per_core`` fills.
- **on-chip reuse**: the bytes of intermediate tensors whose working set fits in
  ``l2_cache_mib`` (:func:`l2_resident_bytes`) move at ``l2_bandwidth_gbps`` instead.
- **AI CPU** ops at ``aicpu_gflops`` plus ``aicpu_task_overhead_us``.
- the **task overhead** is ``task_overhead_us[issue_mode]``: ``graph`` for a sunk graph
  (GE sessions, ATC models), ``single_op`` for ops launched one by one from the host.

A fused task is one task: the members' work, the bytes of its external inputs and outputs
only, one overhead. Unresolved dimensions count as 1 and are reported (``unresolved``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from itertools import chain, count, repeat
from operator import itemgetter

import attrs
import numpy as np

from geplug.device.ir import DTYPE_BYTES, Graph, Node, dtype_bytes, numel
from geplug.products.schema import ComputeModel, Product

__all__ = ["ATTENTION_GRADIENTS", "ATTENTION_OPS", "GATHER_OPS", "ISSUE_MODES", "MIN_SPLIT_K",
           "SMALL_CHANNEL_C0", "NodeWork", "TaskCost", "causal_fraction", "cube_shape",
           "cube_time_us", "gather_unread_bytes", "input_gradient", "l2_resident_bytes",
           "node_work", "node_works", "run_works", "small_channel_in_force", "split_k",
           "task_cost", "task_overhead_us", "weight_gradient", "with_ai_cores"]

ISSUE_MODES = ("graph", "single_op")
"""How tasks reach the device: a sunk graph, or one host launch per op."""

_TRANSCENDENTAL = frozenset({"Exp", "Log", "Tanh", "Sigmoid", "Gelu", "FastGelu", "Erf",
                             "Sqrt", "Rsqrt", "Pow", "Reciprocal", "Sin", "Cos", "Softplus",
                             "Swish", "Mish", "Elu", "HardSwish"})
_NORM = frozenset({"SoftmaxV2", "LogSoftmaxV2", "LayerNorm", "BatchNorm", "InstanceNorm",
                   "GroupNorm", "LRN", "RmsNorm"})
_CONV_GRADIENTS = frozenset({"Conv2DBackpropInput", "Conv2DBackpropFilter"})
_RNN_GATES = {"DynamicRNN": 4, "DynamicGRUV2": 3, "RNN": 1}
"""Recurrent op type -> gates (LSTM 4, GRU 3, plain RNN 1)."""
ATTENTION_GRADIENTS = {"FlashAttentionScore": "FlashAttentionScoreGrad"}
"""Fused attention op type (CANN's, on the 910B and 910_93: op-info of CANN 8.1.RC1) -> its
gradient's. The forward reads ``(query, key, value, ...)``, the gradient
``(query, key, value, dy, ...)`` as CANN's kernels do; a key cache the keys follow is the
node's ``past_key`` attribute (a tensor name: ONNX's ``past_key`` input)."""
ATTENTION_OPS = {**dict.fromkeys(ATTENTION_GRADIENTS, False),
                 **dict.fromkeys(ATTENTION_GRADIENTS.values(), True)}
"""Every fused attention op type -> whether it is the gradient."""
ATTENTION_BLOCK = 128
"""The score block edge a causal fused attention skips whole blocks by (the kernels' s1/s2
base block; its size is chosen by the host tiling, which is not public: estimate)."""


@attrs.frozen
class Gemm:
    """One batched matrix product ``batch x (M x K) @ (K x N)``."""

    batch: int
    m: int
    n: int
    k: int
    sequential: int = 1
    """Times it runs one after another (the recurrent GEMM of an RNN runs per step)."""
    window: int = 0
    """For a convolution (``batch`` = its groups): its kernel window (kh x kw), so that
    ``k = input channels per group x window``; 0 for any other GEMM. The cube pads such a
    K per kernel tap and merges groups (:func:`cube_shape`)."""
    c04: bool = False
    """Whether the convolution may use the C04 layout under small-channel mode: 2-D, not
    grouped, a kernel larger than 1x1 and at most 4 input channels (the TBE Conv2D's
    ``op_select_format`` leaves C04 off for groups, 1x1 kernels and 3-D convolutions)."""
    useful_m: int = 0
    """The rows that do work when the cube computes more (0: all ``m``): a transposed
    convolution runs over its input zero-filled by the stride, every output position
    computed (``m``), while only its input positions (``useful_m``) carry FLOPs."""
    split_k: bool = False
    """A weight gradient: its long reduction (K = batch x spatial) is split over the cores
    its few output blocks leave idle, as CANN's matmul tiling splits K when M x N is small
    (:func:`split_k`)."""

    @property
    def flops(self) -> float:
        return 2.0 * self.batch * (self.useful_m or self.m) * self.n * self.k * self.sequential


@attrs.frozen
class NodeWork:
    """The work of one node: its cube GEMMs, its vector FLOPs, unresolved dims."""

    gemms: tuple[Gemm, ...] = ()
    vector_flops: float = 0.0
    unresolved: bool = False
    exp_elements: float = 0.0
    """Elements of an exponential computed beside the GEMMs on the vector unit (a fused
    attention's softmax), each costing ``transcendental_flops``; a fused kernel pipelines
    them with the cube, so the node takes the longer of its cube and its vector time."""
    spill_elements: float = 0.0
    """Elements moved to and from memory between the kernels of a decomposed op (an
    attention's score matrix, once per pass), at the compute dtype's size."""
    scratch_elements: float = 0.0
    """Elements a decomposed op holds in memory at once inside its task (an attention's
    score and probability matrices, at the compute dtype's size): planned as a block live
    for that task (:mod:`geplug.device.memory`)."""
    unfused: NodeWork | None = None
    """The work of the op's decomposition, for a product without its fused kernel
    (``compute.fused_attention`` false)."""

    @property
    def cube_flops(self) -> float:
        return float(sum(g.flops for g in self.gemms))

    @property
    def pipelined(self) -> bool:
        """Cube and vector work of one fused kernel (a fused attention): the vector part
        overlaps the GEMMs, and on a SoC with split cores the task is both (MIX_AIC)."""
        return bool(self.exp_elements and self.gemms and not self.spill_elements)


def run_works(works: Sequence[NodeWork], compute: ComputeModel) -> list[NodeWork]:
    """The work each node runs on a SoC of ``compute``: its decomposition's
    (``NodeWork.unfused``) where the SoC lacks the fused kernel (``fused_attention``)."""
    if compute.fused_attention:
        return list(works)
    return [w if w.unfused is None else w.unfused for w in works]


@attrs.frozen(kw_only=True)
class TaskCost:
    """The modelled work and time of one task."""

    flops: float
    cube_flops: float
    bytes_moved: float
    duration_us: float
    overhead_us: float
    compute_us: float
    memory_us: float
    block_dim: int
    cube_fraction: float
    task_type: str
    unresolved: bool = False
    l2_bytes: float = 0.0
    """The part of ``bytes_moved`` served by L2 (:func:`l2_resident_bytes`)."""
    memory_no_l2_us: float = 0.0
    """``memory_us`` were every byte moved to and from memory (no L2 reuse): what the task
    costs when its tensors must outlive the step's liveness (a training forward saves its
    activations for the backward)."""

    @property
    def duration_no_l2_us(self) -> float:
        """``duration_us`` without L2 reuse (see ``memory_no_l2_us``)."""
        if not self.l2_bytes:
            return self.duration_us
        return self.overhead_us + max(self.compute_us, self.memory_no_l2_us)


def _dims(graph: Graph, name: str) -> tuple[int, ...]:
    t = graph.tensor(name)
    if t is None or t.shape is None:
        return ()
    return tuple(int(d) if d else 1 for d in t.shape)


def _unresolved(graph: Graph, names: Sequence[str]) -> bool:
    for n in names:
        t = graph.tensor(n)
        if n and (t is None or not t.resolved):
            return True
    return False


def _matmul(node: Node, graph: Graph) -> Gemm:
    a = _dims(graph, node.inputs[0]) if node.inputs else ()
    out = _dims(graph, node.outputs[0]) if node.outputs else ()
    if node.source_op == "Gemm" or node.attrs.get("trans_a") is not None:
        k = (a[0] if node.attrs.get("trans_a") else a[-1]) if len(a) == 2 else (a[-1] if a
                                                                                 else 1)
    else:
        k = a[-1] if a else 1
    if len(out) >= 2:
        m, n = out[-2], out[-1]
        batch = math.prod(out[:-2]) if len(out) > 2 else 1
    elif len(out) == 1:  # a vector result: one of A or B was 1-D
        m, n, batch = (1, out[0], 1) if len(a) == 1 else (out[0], 1, 1)
    else:
        m = n = batch = 1
    return Gemm(batch=int(batch), m=int(m), n=int(n), k=int(k))


def input_gradient(g: Gemm, input_positions: int = 0) -> Gemm:
    """The input-gradient GEMM (``dX = dY @ W^T``) of the forward GEMM ``g``, same FLOPs.

    A convolution's (``g.window``) is Conv2DBackpropInput, itself a convolution: dy with the
    rotated kernel, K = cout_g x window per kernel tap, N = cin_g, its groups merged as the
    forward's are (``calculate_group``, CANN 8.1.RC1 ``util_deconv_comm.py``). Over dy
    zero-filled by the stride (``stride_filling``, ``conv2d_backprop_input_general_compute.py``)
    it computes every input position: ``input_positions`` (batch x the forward input's
    positions), when more than dy's and the kernel is larger than 1x1 (a 1x1 kernel takes
    the kernel-size-1 pattern); the FLOPs stay dy's (``useful_m``). A transposed
    convolution's input gradient is a plain convolution over its input's positions. Any
    other GEMM is the transposed product."""
    m = g.useful_m or g.m  # the forward's useful rows: its output positions (dy)
    if g.window:
        computed = input_positions if g.window > 1 and input_positions > m \
            and not g.useful_m else m
        return Gemm(g.batch, computed, g.k // g.window, g.n * g.window, g.sequential,
                    window=g.window, useful_m=m if computed != m else 0)
    return Gemm(g.batch, m, g.k, g.n, g.sequential)


def weight_gradient(g: Gemm) -> Gemm:
    """The weight-gradient GEMM (``dW = X^T @ dY``) of the forward GEMM ``g``, same FLOPs:
    K is the forward's M (batch x positions), split over idle cores (:func:`split_k`)."""
    return Gemm(g.batch, g.k, g.n, g.useful_m or g.m, g.sequential, split_k=True)


MIN_SPLIT_K = 1024
"""The least K a core's part of a split reduction keeps (:func:`split_k`)."""


def split_k(gemm: Gemm, compute: ComputeModel) -> Gemm:
    """``gemm`` with its K split over the cores its output blocks leave idle, as CANN's
    matmul tiling splits K when M x N is small; each part keeps at least
    :data:`MIN_SPLIT_K` of K (the parts run as a batch). :func:`cube_time_us` times a
    ``split_k`` GEMM both ways and keeps the faster (the even M x N split may already
    occupy every core)."""
    tm, tn, _ = compute.cube_tile
    bm, bn = compute.cube_block
    blocks = gemm.batch * -(-(-(-gemm.m // tm) * tm) // bm) * -(-(-(-gemm.n // tn) * tn) // bn)
    parts = min(max(compute.ai_cores // max(blocks, 1), 1), max(gemm.k // MIN_SPLIT_K, 1))
    if parts <= 1:
        return attrs.evolve(gemm, split_k=False)
    return Gemm(gemm.batch * parts, gemm.m, gemm.n, -(-gemm.k // parts), gemm.sequential)


def _conv_gradient(node: Node, graph: Graph, group: int) -> Gemm:
    """A convolution gradient op as the GEMM of :func:`input_gradient` or
    :func:`weight_gradient` of its forward convolution, rebuilt from its own tensors (the
    real stack's argument order):

    - ``Conv2DBackpropInput(filter, out_backprop) -> dx``: the filter is the forward's
      ``(C_out, C_in/group, k...)``, the forward's positions are ``out_backprop``'s;
    - ``Conv2DBackpropFilter(x, out_backprop) -> dw``: ``dw`` is the filter, the reduction
      runs over ``out_backprop``'s batch and positions (for a transposed convolution the
      caller passes its output gradient as ``x`` and its input as ``out_backprop``)."""
    if node.op_type == "Conv2DBackpropInput":
        w = _dims(graph, node.inputs[0]) if node.inputs else ()
    else:
        w = _dims(graph, node.outputs[0]) if node.outputs else ()
    dy = _dims(graph, node.inputs[1]) if len(node.inputs) > 1 else ()
    if len(w) < 2 or len(dy) < 2:
        return Gemm(1, 1, 1, 1)
    window = math.prod(w[2:]) if len(w) > 2 else 1
    positions = dy[0] * (math.prod(dy[2:]) if len(dy) > 2 else 1)
    forward = Gemm(batch=group, m=positions, n=max(w[0] // group, 1), k=w[1] * window,
                   window=window)
    if node.op_type == "Conv2DBackpropInput":
        dx = _dims(graph, node.outputs[0]) if node.outputs else ()
        return input_gradient(forward, dx[0] * math.prod(dx[2:]) if len(dx) > 2 else 0)
    return weight_gradient(forward)


def _conv(node: Node, graph: Graph) -> Gemm:
    group = max(int(node.attrs.get("group", 1) or 1), 1)
    if node.op_type in _CONV_GRADIENTS:
        return _conv_gradient(node, graph, group)
    out = _dims(graph, node.outputs[0]) if node.outputs else ()
    x = _dims(graph, node.inputs[0]) if node.inputs else ()
    w = _dims(graph, node.inputs[1]) if len(node.inputs) > 1 else ()
    if len(out) < 2 or len(w) < 2:
        return Gemm(1, 1, 1, 1)
    window = math.prod(w[2:]) if len(w) > 2 else 1
    spatial = math.prod(out[2:]) if len(out) > 2 else 1
    if node.op_type == "Conv2DTranspose":  # weight (C_in, C_out/group, k...)
        # CANN runs it as Conv2DBackpropInput (conv2d_transpose_d.py): a convolution of
        # the input zero-filled by the stride ("stride_filling",
        # conv2d_backprop_input_general_compute.py) over every output position, K the
        # input channels per kernel tap; a 1x1 kernel takes the kernel-size-1 pattern
        # (conv2d_backprop_input_opti_compute.py), a GEMM over the input's positions
        useful = out[0] * (math.prod(x[2:]) if len(x) > 2 else 1)
        m = out[0] * spatial if window > 1 else useful
        return Gemm(batch=group, m=m, n=w[1], k=max(w[0] // group, 1) * window,
                    window=window, useful_m=useful if m != useful else 0)
    return Gemm(batch=group, m=out[0] * spatial, n=max(out[1] // group, 1), k=w[1] * window,
                window=window, c04=group == 1 and len(w) == 4 and window > 1
                and w[1] <= SMALL_CHANNEL_C0)


def _rnn(node: Node, graph: Graph, gates: int) -> NodeWork:
    x = _dims(graph, node.inputs[0]) if node.inputs else ()
    w = _dims(graph, node.inputs[1]) if len(node.inputs) > 1 else ()
    if len(x) != 3 or len(w) != 3:
        return NodeWork(unresolved=True)
    layout = int(node.attrs.get("layout", 0) or 0)
    seq, batch = (x[1], x[0]) if layout else (x[0], x[1])
    dirs, hidden = w[0], w[1] // gates
    # input projection for every step at once; the recurrent product step by step
    gemms = (Gemm(batch=dirs, m=seq * batch, n=gates * hidden, k=x[2]),
             Gemm(batch=dirs, m=batch, n=gates * hidden, k=hidden, sequential=seq))
    per_elem = {4: 12.0, 3: 10.0, 1: 3.0}[gates]  # gate activations and cell update
    return NodeWork(gemms=gemms, vector_flops=per_elem * seq * batch * dirs * hidden)


_WORK_CACHE: dict[tuple[object, ...], NodeWork] = {}
_WORK_CACHE_SIZE = 65536


def _freeze(value: object) -> object:
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def node_work(node: Node, graph: Graph, op_class: str) -> NodeWork:
    """The cube GEMMs and vector FLOPs of ``node`` from its tensors' shapes
    (:func:`node_works` of one node)."""
    return node_works((node,), graph, (op_class,))[0]


def node_works(nodes: Sequence[Node], graph: Graph, op_classes: Sequence[str]
               ) -> list[NodeWork]:
    """The work of each of ``nodes`` (with its op class).

    The work is a pure function of a node's signature: op type, source op, op class,
    attributes and the shapes of its tensors ("" for an omitted input, ``None`` for an
    unknown tensor or shape). It is computed once per distinct signature: a 10,000-node
    model repeating a few layer shapes costs a few hundred computations, not ten thousand;
    the signatures are built in one loop (issue 10: three function calls per node were most
    of a 10,000-member chain's cost). A signature holding an unhashable attribute value is
    computed without the cache."""
    get = graph.tensors.get
    cache = _WORK_CACHE
    out: list[NodeWork] = []
    for node, op_class in zip(nodes, op_classes, strict=True):
        at = node.attrs
        key = (node.op_type, node.source_op, op_class,
               tuple(sorted((k, _freeze(v)) for k, v in at.items())) if at else (),
               tuple([(None if (tt := get(t)) is None else tt.shape) if t else ""
                      for t in node.inputs]),
               tuple([(None if (tt := get(t)) is None else tt.shape) if t else ""
                      for t in node.outputs]))
        try:
            work = cache.get(key)
        except TypeError:  # an unhashable attribute value
            out.append(_node_work(node, graph, op_class))
            continue
        if work is None:
            if len(cache) >= _WORK_CACHE_SIZE:
                cache.clear()
            work = cache[key] = _node_work(node, graph, op_class)
        out.append(work)
    return out


def causal_fraction(s_q: int, s_kv: int, block: int = ATTENTION_BLOCK, *,
                    bottom_right: bool = False) -> float:
    """The share of an ``s_q x s_kv`` score matrix a causal fused attention computes: the
    blocks of ``block x block`` on or below the diagonal. The diagonal starts at the first
    key (torch's ``is_causal``: query ``i`` sees keys ``0..i``; ONNX's without a past cache)
    or, ``bottom_right``, ends at the last one (a query block after a key cache sees every
    cached key: ONNX's with ``past_key``)."""
    rows, cols = -(-s_q // block), -(-s_kv // block)
    if rows <= 0 or cols <= 0:
        return 1.0
    shift = cols - rows if bottom_right else 0  # key blocks before each diagonal block
    kept = sum(min(cols, max(r + 1 + shift, 0)) for r in range(rows))
    return kept / (rows * cols)


def _attention(node: Node, graph: Graph, grad: bool) -> NodeWork:
    """A fused attention (FlashAttentionScore and its gradient) on the cube: per batch and
    query head, ``S = Q K^T`` (s_q x s_kv, K = head dim) and ``O = P V``; the gradient
    recomputes S and computes dV = P^T dO, dP = dO V^T, dQ = dS K and dK = dS^T Q (five
    GEMMs). The softmax runs on the vector unit over the scores in the kernel's buffers: its
    exponential per score and four simple passes (scale, max, subtract, sum; the gradient's
    dS = P (dP - rowsum(dO O))), and the score matrix never reaches memory. Layouts: BNSD
    (4-D, torch's and ONNX's) or BSH (3-D, ``head_num`` heads). ``causal`` (attribute)
    computes only the blocks on or below the diagonal (:func:`causal_fraction`); a
    ``past_key`` (attribute: the cache tensor) lengthens the keys and aligns that diagonal
    to the last key."""
    dims = [_dims(graph, t) if t else () for t in node.inputs[:3]]
    if len(dims) < 3 or any(len(d) not in (3, 4) for d in dims):
        return NodeWork(unresolved=True)
    q, k, v = dims
    if len(q) == 4:
        batch, heads, s_q, d = q
        s_kv, d_v = k[2], v[3]
    else:
        heads = int(node.attrs.get("head_num") or node.attrs.get("q_num_heads") or 1)
        kv_heads = int(node.attrs.get("kv_num_heads") or heads)
        batch, s_q, d = q[0], q[1], max(q[2] // max(heads, 1), 1)
        s_kv, d_v = k[1], max(v[2] // max(kv_heads, 1), 1)
    past_key = node.attrs.get("past_key")
    if past_key:  # a key cache before the keys: (B, kv heads, past, D)
        past = _dims(graph, past_key)
        s_kv += past[2] if len(past) == 4 else 0
    causal = bool(node.attrs.get("causal"))
    # after a cache the mask ends at the last key (the queries follow it)
    share = causal_fraction(s_q, s_kv, bottom_right=bool(past_key)) if causal else 1.0
    # the causal share as fewer key columns per query row: the cube skips whole blocks
    cols = max(round(s_kv * share), 1)
    bh = batch * heads
    scores = float(bh * s_q * cols)
    full = float(bh * s_q * s_kv)
    gemms: tuple[Gemm, ...]
    if grad:
        gemms = (Gemm(bh, s_q, cols, d), Gemm(bh, s_q, cols, d_v), Gemm(bh, cols, d_v, s_q),
                 Gemm(bh, s_q, d, cols), Gemm(bh, cols, d, s_q))
        # the decomposition's backward (autograd of BatchMatMul, softmax, BatchMatMul; the
        # probabilities saved by the forward): dV = P^T dO, dP = dO V^T, dS = SoftmaxGrad(P,
        # dP), dQ = dS K, dK = dS^T Q over every score; the scores pass through memory 7
        # times (read P twice, write dP, read dP, write dS, read dS twice)
        unfused = NodeWork(gemms=(Gemm(bh, s_kv, d_v, s_q), Gemm(bh, s_q, s_kv, d_v),
                                  Gemm(bh, s_q, d, s_kv), Gemm(bh, s_kv, d, s_q)),
                           vector_flops=3.0 * full, spill_elements=7.0 * full,
                           scratch_elements=3.0 * full)  # P, dP, dS
    else:
        gemms = (Gemm(bh, s_q, cols, d), Gemm(bh, s_q, d_v, cols))
        # BatchMatMul writes S, the softmax reads it and writes P, BatchMatMul reads P; a
        # causal mask is one more read and write of S
        unfused = NodeWork(gemms=(Gemm(bh, s_q, s_kv, d), Gemm(bh, s_q, d_v, s_kv)),
                           vector_flops=4.0 * full, exp_elements=full,
                           spill_elements=(6.0 if causal else 4.0) * full,
                           scratch_elements=2.0 * full)  # S and P
    return NodeWork(gemms=gemms, vector_flops=4.0 * scores, exp_elements=scores,
                    unfused=unfused)


def _node_work(node: Node, graph: Graph, op_class: str) -> NodeWork:
    unresolved = _unresolved(graph, [*node.inputs, *node.outputs])
    grad = ATTENTION_OPS.get(node.op_type)
    if grad is not None:
        work = _attention(node, graph, grad)
        return attrs.evolve(work, unresolved=unresolved or work.unresolved)
    gates = _RNN_GATES.get(node.op_type)
    if gates is not None:
        work = _rnn(node, graph, gates)
        return attrs.evolve(work, unresolved=unresolved or work.unresolved)
    out_n = sum(numel(_dims(graph, t)) for t in node.outputs if t) or 1
    in_n = max((numel(_dims(graph, t)) for t in node.inputs if t), default=1)
    if op_class == "matrix":
        if node.op_type.startswith("Conv"):
            return NodeWork(gemms=(_conv(node, graph),), unresolved=unresolved)
        return NodeWork(gemms=(_matmul(node, graph),), unresolved=unresolved)
    op = node.op_type
    if op == "Pooling":
        window = node.attrs.get("kernel_shape")
        size = math.prod(window) if window else max(in_n // max(out_n, 1), 1)
        flops = float(out_n * size)
    elif op in _NORM:
        flops = 5.0 * max(out_n, in_n)
    elif op in _TRANSCENDENTAL:
        flops = float(out_n)  # scaled by transcendental_flops in task_cost
    else:
        flops = float(max(out_n, in_n))
    return NodeWork(vector_flops=flops, unresolved=unresolved)


def task_overhead_us(compute: ComputeModel, issue_mode: str) -> float:
    """The cost of issuing one task in ``issue_mode`` (``task_overhead_us``; the host launch
    overhead for a mode the product does not declare)."""
    return float(compute.task_overhead_us.get(issue_mode, compute.launch_overhead_us))


def with_ai_cores(product: Product, aicore_num: int | None) -> Product:
    """``product`` limited to ``aicore_num`` AI Cores (the ``aicore_num`` session option).

    Each core keeps its declared rate, so the peak throughputs (``cube_tflops``,
    ``vector_tflops``) and the vector cores shrink in proportion; memory bandwidth is shared
    HBM and stays. ``None`` or a count outside ``[1, ai_cores)`` (checked by the config
    rules) leaves the product as declared.
    """
    c = product.compute
    if aicore_num is None or not 1 <= aicore_num < c.ai_cores:
        return product
    share = aicore_num / c.ai_cores
    vector_cores = max(1, round(c.vector_cores * share)) if c.vector_cores else 0
    limited = attrs.evolve(
        c, ai_cores=aicore_num, vector_cores=vector_cores,
        cube_tflops={k: v * share for k, v in c.cube_tflops.items()},
        vector_tflops={k: v * vector_cores / c.vector_cores if c.vector_cores else v * share
                       for k, v in c.vector_tflops.items()})
    return attrs.evolve(product, compute=limited)


SMALL_CHANNEL_C0 = 4
"""The channel block of a convolution whose input has at most this many channels per group
when small-channel mode is on (CANN's C04 format: ``enable_small_channel``, the
``c0_optim_flg`` / ``use_v200_c04_flg`` / ``v220_c04_mode`` of the TBE Conv2D's
``optim_dict``): its channels pad to 4 per kernel tap instead of the cube's C0."""


def _c0(dtype: str, tile_k: int) -> int:
    """The channel block of ``dtype``'s fractal: 32 bytes of channels (CANN's
    ``CUBE_MKN[dtype]['mac'][1]``: 16 for float16/bfloat16, 8 for float32, 32 for int8); the
    tile's K for a dtype of unknown size."""
    size = DTYPE_BYTES.get(dtype, 0)
    return 32 // size if size in (1, 2, 4) else tile_k


def cube_shape(gemm: Gemm, tile: Sequence[int], *, small_channel: bool = False,
               dtype: str = "") -> tuple[int, int, int]:
    """The padded ``(batch, N, K)`` the cube computes for ``gemm`` (M is padded alone).

    A plain GEMM pads N and K to the cube tile. A convolution (``gemm.window``: its kernel
    window) is laid out as CANN lays out its weight (FRACTAL_Z: C1 x kh x kw fractals of
    C0 channels, ``conv_layer_cce_shape_calc``): K is the input channels padded to C0 **per
    kernel tap**, times the window, C0 being 32 bytes of ``dtype`` (16 float16 channels, 8
    float32, 32 int8). A 3-channel 7x7 float16 stem is K = 16 x 49, not 3 x 49 padded. With
    ``small_channel`` (C04 in force) a convolution that may use it (``gemm.c04``) pads its
    channels to :data:`SMALL_CHANNEL_C0` per tap instead.

    A grouped convolution runs with ``enlarge`` groups merged into one with a block-diagonal
    weight, ``enlarge = min(lcm(lcm(cin_g, C0) / cin_g, lcm(cout_g, 16) / cout_g),
    groups)``; each merged group has ``ceil(cin_g x enlarge / C0)`` input-channel fractals
    per tap (K) and ``ceil(cout_g x enlarge / 16)`` output fractals (N), and there are
    ``ceil(groups / enlarge)`` of them (``_conv_layer_cce`` of the TBE Conv2D,
    ``opp/built-in/op_impl/ai_core/tbe/impl/conv2d.py``, CANN 8.1.RC1; the TBE
    DepthwiseConv2D calls the same Conv2D with groups = channels). 16 is the cube tile's N.
    A depthwise float16 convolution of C channels (cin_g = cout_g = 1) is C / 16 GEMMs of
    N = 16 and K = 16 x window, not C GEMMs padded from N = 1, K = window.
    """
    _, tn, tk = tile
    if not gemm.window:
        return gemm.batch, -(-gemm.n // tn) * tn, -(-gemm.k // tk) * tk
    c0 = _c0(dtype, tk)
    cin, cout = max(gemm.k // gemm.window, 1), gemm.n
    enlarge = 1
    if gemm.batch > 1:
        enlarge = min(math.lcm(math.lcm(cin, c0) // cin, math.lcm(cout, tn) // cout),
                      gemm.batch)
    channels = cin * enlarge
    block = SMALL_CHANNEL_C0 if small_channel and gemm.c04 else c0
    k = -(-(-(-channels // block) * block * gemm.window) // c0) * c0
    return -(-gemm.batch // enlarge), -(-(cout * enlarge) // tn) * tn, k


def small_channel_in_force(product: Product, enabled: bool, *, aipp: bool = False) -> bool:
    """Whether convolutions get the C04 layout: ``enable_small_channel`` as resolved
    (``enabled``), unless the product's SoC keeps C04 for an AIPP-fed first layer
    (``compute.small_channel_needs_aipp``) and the model has no AIPP (geplug models none)."""
    return enabled and (aipp or not product.compute.small_channel_needs_aipp)


def cube_time_us(gemm: Gemm, compute: ComputeModel, dtype: str, *,
                 small_channel: bool = False) -> tuple[float, int]:
    """Cube time of ``gemm`` and the cores it occupies (see the module docstring);
    ``small_channel``: :func:`cube_shape`."""
    if gemm.split_k:  # the tiling keeps a K split only where it is faster
        parts = split_k(gemm, compute)
        whole = attrs.evolve(gemm, split_k=False)
        return min(cube_time_us(whole, compute, dtype, small_channel=small_channel),
                   cube_time_us(parts, compute, dtype, small_channel=small_channel)
                   if parts.batch > gemm.batch else (math.inf, 0))
    peak = compute.cube_tflops.get(dtype)
    cores = max(compute.ai_cores, 1)
    if not peak:
        # the cube has no such dtype: the product runs it on the vector unit
        rate = compute.vector_tflops.get(dtype) or min(compute.vector_tflops.values(),
                                                        default=1.0)
        return gemm.flops / (rate * compute.vector_efficiency * 1e12) * 1e6, cores
    eff = compute.cube_efficiency.get(dtype, 1.0)
    tm, tn, _ = compute.cube_tile  # lengths checked when the declaration is loaded
    mp = -(-gemm.m // tm) * tm
    batch, np_, kp = cube_shape(gemm, compute.cube_tile, small_channel=small_channel,
                                dtype=dtype)
    per_core = peak * eff * 1e12 / cores
    depth = kp + compute.cube_k_latency
    best: tuple[float, int] | None = None
    for bm, bn in _block_candidates(compute.cube_block, tm, tn):
        blocks = batch * -(-mp // bm) * -(-np_ // bn)
        waves = -(-blocks // cores)
        block_flops = 2.0 * min(bm, mp) * min(bn, np_) * depth
        t = waves * block_flops / per_core * 1e6 * gemm.sequential
        if best is None or t < best[0]:
            best = (t, min(cores, blocks))
    area, used = _even_split(batch, mp // tm, np_ // tn, cores)
    t = 2.0 * area * tm * tn * depth / per_core * 1e6 * gemm.sequential
    assert best is not None
    if t < best[0]:
        best = (t, used)
    return best[0], int(best[1])


def _even_split(batch: int, m_tiles: int, n_tiles: int, cores: int) -> tuple[int, int]:
    """The multi-core split of Ascend C's matmul tiling: ``batch``, M and N divided over
    ``bDim x mDim x nDim <= cores`` cores, each computing ``ceil(batch / bDim)`` products of
    ``singleCoreM x singleCoreN`` (whole cube tiles) in as many base blocks as that takes
    (``MultiCoreMatmulTiling`` / ``BatchMatmulTiling``: ``GetCoreNum`` gives ``dim = mDim x
    nDim`` and the batch cores, ``GetSingleShape`` ``singleCoreM/N``; Ascend C API
    reference). Returns the busiest core's output area in tiles and the cores used, for
    the split that minimises that area (fewest cores on a tie). The pipeline fill is per
    base block and so proportional to the area: the wave model above with blocks that
    need not be the base block's size."""
    best = (batch * m_tiles * n_tiles, 1)
    for b_dim in range(1, min(batch, cores) + 1):
        per_b = -(-batch // b_dim)
        for m_dim in range(1, min(cores // b_dim, m_tiles) + 1):
            n_dim = min(cores // (b_dim * m_dim), n_tiles)
            area = per_b * -(-m_tiles // m_dim) * -(-n_tiles // n_dim)
            used = b_dim * m_dim * n_dim
            if area < best[0] or (area == best[0] and used < best[1]):
                best = (area, used)
    return best


def _block_candidates(block: Sequence[int], tm: int, tn: int) -> list[tuple[int, int]]:
    """The output blocks the matmul tiling may pick: the declared base block and its
    halvings (N, then M and N), never below the cube tile. CANN's tiling shrinks the base
    block when a GEMM has too few blocks to fill the cores; the pipeline fill scales with
    the block, so a smaller block wins only where it balances the waves (ties keep the
    base block)."""
    bm, bn = int(block[0]), int(block[1])
    out = [(bm, bn)]
    for m, n in ((bm, bn // 2), (bm // 2, bn // 2)):
        if m >= tm and n >= tn and (m, n) not in out:
            out.append((m, n))
    return out


def _memory_us(bytes_moved: float, l2_bytes: float, c: ComputeModel, memory_rate: float,
               share: float) -> float:
    """Time to move ``bytes_moved``: the L2-served part at the declared L2 bandwidth, the
    rest at ``memory_rate`` (bytes/s), both over the ``share`` of cores the task uses."""
    l2 = min(max(l2_bytes, 0.0), bytes_moved) if c.l2_bandwidth_gbps > 0 else 0.0
    us = (bytes_moved - l2) / (memory_rate * share) * 1e6
    if l2:
        us += l2 / (c.l2_bandwidth_gbps * 1e9 * share) * 1e6
    return us


def task_cost(
    nodes: Sequence[Node],
    works: Sequence[NodeWork],
    dtypes: Sequence[str],
    *,
    engine: str,
    bytes_moved: float,
    product: Product,
    issue_mode: str = "graph",
    op_classes: Sequence[str] = (),
    l2_bytes: float = 0.0,
    small_channel: bool = False,
) -> TaskCost:
    """The cost of one task made of ``nodes`` (their ``works`` and compute ``dtypes``).

    ``l2_bytes``: the part of ``bytes_moved`` served by L2 (:func:`l2_resident_bytes`),
    moved at ``l2_bandwidth_gbps`` instead of the memory bandwidth. ``small_channel``
    (``enable_small_channel``): convolutions of at most 4 input channels pad them to 4 per
    kernel tap (:func:`cube_shape`)."""
    c = product.compute
    overhead = task_overhead_us(c, issue_mode)
    works = run_works(works, c)  # a decomposition where the SoC lacks the fused kernel
    cubes = [w.cube_flops if w.gemms else 0.0 for w in works]
    flops = sum(cf + w.vector_flops + w.exp_elements
                for cf, w in zip(cubes, works, strict=True))
    cube_flops = sum(cubes)
    unresolved = any(w.unresolved for w in works)
    bw = c.memory_bandwidth_gbps * 1e9
    if engine == "AI_CPU":
        compute_us = flops / (c.aicpu_gflops * 1e9) * 1e6
        memory_us = bytes_moved / (bw * c.vector_bandwidth_fraction) * 1e6
        return TaskCost(flops=flops, cube_flops=cube_flops, bytes_moved=bytes_moved,
                        duration_us=overhead + c.aicpu_task_overhead_us
                        + max(compute_us, memory_us),
                        overhead_us=overhead + c.aicpu_task_overhead_us,
                        compute_us=compute_us, memory_us=memory_us, block_dim=1,
                        cube_fraction=0.0, task_type="AI_CPU", unresolved=unresolved)
    cube_us = 0.0
    vector_us = 0.0
    cube_cores = 0
    for node, work, dtype in zip(nodes, works, dtypes, strict=True):
        if work.spill_elements:
            bytes_moved += work.spill_elements * dtype_bytes(dtype)
        node_cube = 0.0
        for g in work.gemms:
            t, used = cube_time_us(g, c, dtype, small_channel=small_channel)
            node_cube += t
            cube_cores = max(cube_cores, used)
        if work.vector_flops or work.exp_elements:
            rate = c.vector_tflops.get(dtype) or min(c.vector_tflops.values(), default=1.0)
            scale = c.transcendental_flops if node.op_type in _TRANSCENDENTAL else 1.0
            node_vector = ((work.vector_flops * scale + work.exp_elements
                            * c.transcendental_flops) / (rate * c.vector_efficiency * 1e12)
                           * 1e6)
            if work.pipelined:  # a fused attention: softmax beside the GEMMs
                node_cube = max(node_cube, node_vector)
            else:
                vector_us += node_vector
        cube_us += node_cube
    matrix = cube_flops > 0
    if matrix:
        cores = max(c.ai_cores, 1)
        used = max(cube_cores, 1)
        frac = c.matrix_bandwidth_fraction
        # a fused epilogue overlaps the cube pipeline; a separate vector op would not
        compute_us = cube_us + (vector_us * used / cores if len(nodes) == 1 else 0.0)
    else:
        cores = max(c.vector_cores or c.ai_cores, 1)
        used = min(cores, max(1, math.ceil(bytes_moved / max(c.vector_bytes_per_core, 1))))
        frac = c.vector_bandwidth_fraction
        compute_us = vector_us * cores / used
    memory_us = _memory_us(bytes_moved, l2_bytes, c, bw * frac, used / cores)
    memory_no_l2_us = bytes_moved / (bw * frac * used / cores) * 1e6
    if matrix:
        task_type = "AI_CORE"
        if product.profiling.mix_aic_large_matmul and cube_flops > 1e9 and any(
                g.k % 16 or g.n % 16 for w in works for g in w.gemms):
            task_type = "MIX_AIC"
        elif product.profiling.split_cores and any(w.pipelined for w in works):
            task_type = "MIX_AIC"  # one kernel on the split cube and vector cores
    else:
        task_type = "AI_VECTOR_CORE" if product.profiling.split_cores else "AI_CORE"
    busy = max(compute_us, memory_us)
    return TaskCost(
        flops=flops, cube_flops=cube_flops, bytes_moved=bytes_moved,
        duration_us=overhead + busy, overhead_us=overhead, compute_us=compute_us,
        memory_us=memory_us, block_dim=int(used),
        cube_fraction=(cube_us / busy if matrix and busy > 0 else 0.0) if matrix else 0.0,
        task_type=task_type, unresolved=unresolved,
        l2_bytes=min(max(l2_bytes, 0.0), bytes_moved) if c.l2_bandwidth_gbps > 0 else 0.0,
        memory_no_l2_us=memory_no_l2_us,
    )


def l2_resident_bytes(
    tasks: Sequence[tuple[Sequence[str], Sequence[str]]],
    sizes: Mapping[str, float],
    *,
    capacity_bytes: float,
    eligible: frozenset[str] | set[str],
    fixed: frozenset[str] | set[str] = frozenset(),
    slices: Mapping[str, int] | Callable[[str, int], int] | None = None,
    moved: Sequence[float] | None = None,
) -> list[float]:
    """Bytes of each task's reads and writes served by the L2 cache instead of memory.

    ``tasks``: (tensors read, tensors written) per task, in execution order; ``sizes``:
    bytes of every tensor; ``eligible``: the intermediate tensors the device produces and
    consumes (not graph inputs, outputs or weights, which live in memory); ``fixed``:
    tensors that do not shrink with a batch slice (weights, constants); ``slices``: the
    batch slices an eligible tensor's window may be cut into (its leading dimension; a
    mapping, or a ``get``-like callable asked only for windows that do not fit whole);
    ``moved``: the bytes each task really moves when that is less than its tensors' sizes
    (a gather reads only the rows it gathers, :func:`gather_unread_bytes`).

    The rule (``docs/device-model.md``, "On-chip reuse"): a tensor written by task ``i``
    and last read by task ``j`` stays in L2 when the working set of tasks ``i..j`` (every
    byte they read or write, the tensor itself counted once) fits in ``capacity_bytes``,
    the activations of the window taken per batch slice when ``slices`` allows (GE's L2
    fusion runs such a chain slice by slice); its write and all its reads are then L2
    traffic. Tensor-grain LRU reuse, bounded conservatively: a tensor read twice inside the
    window counts twice.
    """
    n = len(tasks)
    if capacity_bytes <= 0 or not eligible or n == 0:
        return [0.0] * n
    # one entry per (task, tensor) in execution order, each task's reads before its writes
    # (the order the bytes were summed in before these passes became arrays)
    flat = list(chain.from_iterable(chain.from_iterable(tasks)))
    n_reads = np.fromiter(map(len, map(itemgetter(0), tasks)), np.int64, n)
    per_task = n_reads + np.fromiter(map(len, map(itemgetter(1), tasks)), np.int64, n)
    task_of = np.repeat(np.arange(n), per_task)
    first = np.cumsum(per_task) - per_task  # each task's first entry
    is_read = np.arange(len(flat)) - np.repeat(first, per_task) < np.repeat(n_reads, per_task)
    size = np.fromiter(map(sizes.get, flat, repeat(0.0)), np.float64, len(flat))
    index = dict(zip(eligible, count()))  # eligible tensor -> id
    ids = np.fromiter(map(index.get, flat, repeat(-1)), np.int64, len(flat))
    elig = ids >= 0
    pin = is_read & ~elig & np.fromiter(map(fixed.__contains__, flat), np.bool_, len(flat))
    here = np.bincount(task_of, size, minlength=n)
    pinned = np.bincount(task_of, np.where(pin, size, 0.0), minlength=n)
    if moved is not None:
        # what a task does not read is part of a weight (a gather's table)
        less = np.asarray(moved, np.float64)
        cut = less < here
        pinned = np.where(cut, np.maximum(pinned - (here - less), 0.0), pinned)
        here = np.where(cut, less, here)
    prefix = np.concatenate(([0.0], np.cumsum(here)))
    fixed_prefix = np.concatenate(([0.0], np.cumsum(pinned)))
    # eligible tensors: their first write (producer) and their reads
    at = np.flatnonzero(elig)
    if not len(at):
        return [0.0] * n
    names = list(index)
    writes, reads = at[~is_read[at]], at[is_read[at]]
    wid, rid = ids[writes], ids[reads]
    m = len(names)
    first_write = np.full(m, len(flat), np.int64)
    np.minimum.at(first_write, wid, writes)
    readers = np.bincount(rid, minlength=m)
    last = np.full(m, -1, np.int64)
    np.maximum.at(last, rid, task_of[reads])
    has = (first_write < len(flat)) & (readers > 0)
    producer = np.where(has, task_of[np.minimum(first_write, len(flat) - 1)], 0)
    cand = np.flatnonzero(has & (last > producer))
    i, j = producer[cand], last[cand]
    tsize = size[first_write[cand]]
    win_pinned = fixed_prefix[j + 1] - fixed_prefix[i]
    active = prefix[j + 1] - prefix[i] - win_pinned - tsize * readers[cand]
    keep = win_pinned + active <= capacity_bytes
    part = (slices.get if isinstance(slices, Mapping) else slices) if slices else None
    if part is not None:
        for k in np.flatnonzero(~keep).tolist():
            parts = max(int(part(names[cand[k]], 1) or 1), 1)
            keep[k] = parts > 1 and not win_pinned[k] + active[k] / parts > capacity_bytes
    kept = cand[keep]
    # the producer's write and every read, summed per task in the order of first writes
    order = kept[np.argsort(first_write[kept], kind="stable")]
    rank = np.full(m, -1, np.int64)
    rank[order] = np.arange(len(order))
    taken = rank[rid] >= 0
    r_rank, r_pos = rank[rid[taken]], reads[taken]
    by = np.lexsort((r_pos, r_rank))
    owner = np.concatenate((np.arange(len(order)), r_rank[by]))
    tasks_at = np.concatenate((producer[order], task_of[r_pos[by]]))
    # per tensor in the order of first writes: its producer, then its readers in order
    seq = np.lexsort((np.concatenate((np.full(len(order), -1), np.arange(len(by)))), owner))
    served = size[first_write[order]][owner[seq]]
    return np.bincount(tasks_at[seq], served, minlength=n).tolist()


GATHER_OPS = frozenset({"Gather", "GatherV2", "GatherNd", "GatherElements"})
"""Op types whose data input (input 0) is read only where the indices point."""


def gather_unread_bytes(nodes: Sequence[Node], task_inputs: Sequence[str],
                        nbytes: Callable[[str], float]) -> float:
    """Bytes of a task's external inputs it never reads: a gather (an embedding lookup)
    reads from its table only the rows it gathers, as many bytes as it writes, not the
    table. ``nbytes``: a tensor's bytes as the device holds it."""
    unread = 0.0
    external = set(task_inputs)
    for node in nodes:
        if node.op_type in GATHER_OPS and node.inputs and node.outputs and (
                node.inputs[0] in external):
            table = nbytes(node.inputs[0])
            unread += max(table - min(table, nbytes(node.outputs[0])), 0.0)
    return unread


def tensor_bytes(graph: Graph, names: Sequence[str], dtypes: Mapping[str, str]) -> float:
    """Bytes of ``names`` as the device holds them (``dtypes`` overrides a tensor's dtype)."""
    total = 0
    for n in names:
        t = graph.tensor(n)
        if t is None:
            continue
        total += numel(t.shape) * dtype_bytes(dtypes.get(n, t.dtype))
    return float(total)
