"""A training step from a compiled forward graph: forward, backward and optimizer tasks.

The device model costs the forward graph a backend compiles. A training step on the real
stack runs more work, derived here per forward task from the same cost functions
(``docs/device-model.md``, "Training steps"):

- **matrix ops** (cube GEMMs, see :mod:`geplug.device.cost`): the backward of
  ``Y[m,n] = X[m,k] @ W[k,n]`` is two GEMMs of the same FLOPs, the input gradient
  ``dX[m,k] = dY[m,n] @ W^T`` and the weight gradient ``dW[k,n] = X^T @ dY`` (for an
  attention BatchMatMul the second operand's gradient), each costed on the cube with its own
  shape's padding and block split (CANN: ``Conv2DBackpropInput`` / ``Conv2DBackpropFilter``,
  ``MatMulV2`` with transposed operands). The input gradient of a task reading only graph
  inputs is not computed (the data needs none).
- **fused attention** (FlashAttentionScore): one FlashAttentionScoreGrad task, costed by
  the same cube and vector model as the forward (:func:`geplug.device.cost.node_work`: it
  recomputes the scores and runs five GEMMs); it reads the forward's query, key, value,
  output and dy and writes dq, dk and dv: 2x the forward's bytes.
- **vector ops**: the backward of an elementwise op reads the output gradient and one saved
  tensor and writes the input gradient: 3 tensors against the forward's 2, so 1.5x its bytes;
  a normalisation (softmax, layer/batch norm) adds the reduction of its parameter gradients:
  2.5x. Epilogues fused into a matrix task in inference (bias, activation) run as one vector
  backward task over the task's output: 3 passes.
- **BatchNorm in training** is not folded into the convolution: its batch statistics
  (``BNTrainingReduce``) are fused into the convolution's output write, the normalisation
  (``BNTrainingUpdate``, with the activation fused: read x, write y) is a vector task; its
  backward is ``BNTrainingUpdateGrad`` (read dy, x; with an activation its gradient fused:
  also read its bit mask and write dy') and ``BNTrainingReduceGrad`` (read dy', x; write
  dx): 2 forward and 5 (no activation) or ~6 backward passes over the convolution's output.
  dy' is the one intermediate the derivation introduces that nothing saves: when the two
  tasks' bytes per batch slice fit in the product's L2, its write and read move at L2
  bandwidth (the on-chip reuse rule of :func:`geplug.device.cost.l2_resident_bytes`). A
  BatchNorm no convolution took (fused with its activation chain, ``bn_act``) is the
  BNTrainingUpdate task itself, with a BNTrainingReduce pass (read x) before it and the
  same two gradient tasks.
- **forward tasks** cost as without L2 reuse (``TaskCost.duration_no_l2_us``): their
  activations are saved for the backward, so they reach memory.
- **weight gradients** with a long reduction (K = batch x spatial) and few output blocks
  split K over the idle cores (CANN's matmul tiling does), parts of at least 1024.
- **Dropout**, a view at inference, is a mask multiply in training (``DropOutDoMask``):
  read x and a bit mask, write y, forward and backward.
- **format conversions** (TransData, :mod:`geplug.device.formats`): the gradient flows back
  through the same layout change the other way, one TransData of the same bytes.
- **optimizer**: one apply task per weight tensor at vector bandwidth, bytes per parameter
  from :data:`OPTIMIZER_BYTES` (float32 master weights and states) plus, under mixed
  precision, the casts of the gradient to float32 and of the weight back to the compute
  dtype (:data:`MIXED_PRECISION_BYTES`).

Every task pays the product's ``task_overhead_us`` for the issue mode. The step is the sum
of the tasks on the compute stream (the backward of a sunk graph has no overlap to exploit
on one device). No gradient all-reduce: a single device.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import attrs

from geplug.device.cost import (
    _NORM,
    ATTENTION_GRADIENTS,
    Gemm,
    _dims,
    cube_time_us,
    input_gradient,
    node_work,
    task_cost,
    task_overhead_us,
    weight_gradient,
)
from geplug.device.ir import Graph, Node, dtype_bytes, numel
from geplug.device.model import DeviceModel, TaskPlan
from geplug.errors import CompileError
from geplug.products.schema import Product

__all__ = ["MIXED_PRECISION_BYTES", "OPTIMIZER_BYTES", "TrainingStep", "TrainingTask",
           "training_step"]

OPTIMIZER_BYTES: Mapping[str, int] = {
    "sgd": 12,  # read w, g; write w (float32)
    "momentum": 20,  # read w, g, m; write w, m (ApplyMomentum)
    "adam": 28,  # read w, g, m, v; write w, m, v (ApplyAdam / ApplyAdamW)
    "lamb": 44,  # adam's 28 + the trust-ratio pass: read w and the update, write w (LambApply*)
}
"""Bytes moved per parameter by one optimizer update (float32 weights and states)."""

MIXED_PRECISION_BYTES = 12
"""Per parameter under mixed precision: gradient 16 -> 32 bit (read 2, write 4) and the
weight back to 16 bit for the next forward (read 4, write 2)."""

_BN = frozenset({"BatchNorm"})
_MASK = 1.0 / 16.0
"""An activation's saved bit mask (ReluV2's one bit per element) against a 16-bit tensor."""
_DROPOUT = frozenset({"Dropout"})


@attrs.frozen(kw_only=True)
class TrainingTask:
    """One task of a training step."""

    name: str
    op_type: str
    phase: str
    """``forward``, ``backward`` or ``optimizer``."""
    duration_us: float
    flops: float = 0.0
    bytes_moved: float = 0.0


@attrs.frozen(kw_only=True)
class TrainingStep:
    """The tasks of one training step and their sums (µs)."""

    tasks: tuple[TrainingTask, ...]
    optimizer: str

    def phase_us(self, phase: str) -> float:
        """Total time of the tasks of ``phase``."""
        return float(sum(t.duration_us for t in self.tasks if t.phase == phase))

    @property
    def forward_us(self) -> float:
        return self.phase_us("forward")

    @property
    def backward_us(self) -> float:
        return self.phase_us("backward")

    @property
    def optimizer_us(self) -> float:
        return self.phase_us("optimizer")

    @property
    def step_us(self) -> float:
        """One step: every task one after another on the compute stream."""
        return float(sum(t.duration_us for t in self.tasks))

    @property
    def flops(self) -> float:
        return float(sum(t.flops for t in self.tasks))


def _vector_us(nbytes: float, product: Product, l2_bytes: float = 0.0) -> float:
    c = product.compute
    l2 = min(l2_bytes, nbytes) if c.l2_bandwidth_gbps > 0 else 0.0
    us = (nbytes - l2) / (c.memory_bandwidth_gbps * 1e9 * c.vector_bandwidth_fraction) * 1e6
    return us + (l2 / (c.l2_bandwidth_gbps * 1e9) * 1e6 if l2 else 0.0)


def _l2_window_fits(window_bytes: float, batch: int, product: Product) -> bool:
    """The on-chip reuse rule of :func:`geplug.device.cost.l2_resident_bytes` for an
    intermediate the derivation introduces: the two tasks' bytes, per batch slice, fit in
    the declared L2."""
    c = product.compute
    capacity = c.l2_cache_mib * (1 << 20)
    return capacity > 0 and c.l2_bandwidth_gbps > 0 and window_bytes / max(batch, 1) <= capacity


def _gemm_task(name: str, op_type: str, gemm: Gemm, dtype: str, nbytes: float,
               product: Product, overhead: float) -> TrainingTask:
    c = product.compute
    cube_us, _ = cube_time_us(gemm, c, dtype)
    memory_us = nbytes / (c.memory_bandwidth_gbps * 1e9 * c.matrix_bandwidth_fraction) * 1e6
    return TrainingTask(name=name, op_type=op_type, phase="backward",
                        duration_us=overhead + max(cube_us, memory_us), flops=gemm.flops,
                        bytes_moved=nbytes)


def _positions(graph: Graph, node: Node) -> int:
    """Batch x spatial positions of a convolution's input (0 when unknown or not 4-D): the
    rows its input gradient computes over (:func:`geplug.device.cost.input_gradient`)."""
    x = _dims(graph, node.inputs[0]) if node.inputs and node.inputs[0] else ()
    return x[0] * math.prod(x[2:]) if len(x) >= 3 else 0


def _grad_op_types(op_type: str) -> tuple[str, str]:
    if op_type.startswith("Conv"):
        return "Conv2DBackpropInput", "Conv2DBackpropFilter"
    if op_type in {"DynamicRNN", "DynamicGRUV2", "RNN"}:
        return f"{op_type}Grad", f"{op_type}Grad"
    return op_type, op_type


def _vector_task(name: str, op_type: str, phase: str, nbytes: float, flops: float,
                 product: Product, overhead: float, l2_bytes: float = 0.0) -> TrainingTask:
    return TrainingTask(name=name, op_type=op_type, phase=phase,
                        duration_us=overhead + _vector_us(nbytes, product, l2_bytes),
                        flops=flops, bytes_moved=nbytes)


def _output_bytes(model: DeviceModel, plan: TaskPlan) -> float:
    graph = model.graph.graph
    total = 0
    for t in plan.task.outputs:
        tt = graph.tensor(t)
        if tt is not None:
            total += numel(tt.shape) * dtype_bytes(plan.dtype or tt.dtype)
    return float(total)


def _batch(model: DeviceModel, plan: TaskPlan) -> int:
    """The leading (batch) dimension of the task's first output: the slices L2 fusion may
    cut a window into."""
    graph = model.graph.graph
    tt = graph.tensor(plan.task.outputs[0]) if plan.task.outputs else None
    if tt is None or not tt.shape or not isinstance(tt.shape[0], int):
        return 1
    return max(int(tt.shape[0]), 1)


def _backward(model: DeviceModel, plan: TaskPlan, product: Product, overhead: float
              ) -> list[TrainingTask]:
    if plan.task.inserted:  # a TransData: the gradient converted back, same bytes
        return [_vector_task(f"{plan.name}_grad", plan.task.op_type, "backward",
                             plan.cost.bytes_moved, 0.0, product, overhead)]
    graph = model.graph.graph
    nodes = {n.name: n for n in graph.nodes}
    members = [nodes[m] for m in plan.task.members]
    out: list[TrainingTask] = []
    fwd_bytes = plan.cost.bytes_moved
    grads = [attrs.evolve(n, op_type=ATTENTION_GRADIENTS[n.op_type]) for n in members
             if n.op_type in ATTENTION_GRADIENTS]
    if grads:
        cost = task_cost(grads, [node_work(n, graph, "matrix") for n in grads],
                         [plan.dtype] * len(grads), engine="AI_CORE",
                         bytes_moved=2.0 * fwd_bytes, product=product,
                         issue_mode=model.issue_mode)
        return [TrainingTask(name=f"{plan.name}_grad", op_type=grads[0].op_type,
                             phase="backward", duration_us=cost.duration_us,
                             flops=cost.flops, bytes_moved=cost.bytes_moved)]
    if plan.cost.cube_flops > 0:
        from_data = all(t in graph.inputs for t in plan.task.inputs
                        if t not in model.graph.known)
        dgrad_op, wgrad_op = _grad_op_types(plan.task.op_type)
        for node, work in zip(members, plan.works, strict=False):
            for i, g in enumerate(work.gemms):
                tag = f"{node.name}{i or ''}"
                if not from_data:
                    out.append(_gemm_task(f"{tag}_dgrad", dgrad_op,
                                          input_gradient(g, _positions(graph, node)),
                                          plan.dtype, fwd_bytes, product, overhead))
                out.append(_gemm_task(f"{tag}_wgrad", wgrad_op, weight_gradient(g),
                                      plan.dtype, fwd_bytes, product, overhead))
        epilogue = [n for n, w in zip(members, plan.works, strict=False)
                    if not w.gemms and n.op_type not in _BN]
        y = _output_bytes(model, plan)
        if any(n.op_type in _BN for n in members):
            out += _bn_backward(model, plan, bool(epilogue), y, product, overhead)
        elif epilogue:
            out.append(_vector_task(f"{plan.name}_epilogue_grad",
                                    f"{epilogue[-1].op_type}Grad", "backward", 3 * y, 0.0,
                                    product, overhead))
        return out
    if any(n.op_type in _BN for n in members):
        # a BatchNorm no convolution took, with the activation chain fused after it
        # (``bn_act``): the same two gradient tasks as a convolution's BatchNorm
        act = any(n.op_type not in _BN for n in members)
        return _bn_backward(model, plan, act, _output_bytes(model, plan), product, overhead)
    norm = any(n.op_type in _NORM for n in members)
    factor = 2.5 if norm else 1.5
    flops = plan.cost.flops * (2.0 if norm else 1.0)
    out.append(_vector_task(f"{plan.name}_grad", f"{plan.task.op_type}Grad", "backward",
                            factor * fwd_bytes, flops, product, overhead))
    return out


def _bn_backward(model: DeviceModel, plan: TaskPlan, act: bool, y: float, product: Product,
                 overhead: float) -> list[TrainingTask]:
    """A BatchNorm's backward over its output of ``y`` bytes (``act``: an activation fused
    after it): BNTrainingUpdateGrad reads dy and x; with an activation its gradient is
    fused in (reads the activation's bit mask, writes dy' for BNTrainingReduceGrad).
    BNTrainingReduceGrad: read dy', x; write dx."""
    passes = 2.0 + ((1.0 + _MASK) if act else 0.0)
    # dy' lives from BNTrainingUpdateGrad to BNTrainingReduceGrad and is saved by nothing:
    # the on-chip reuse rule decides whether it stays in L2 (its write and its read), as
    # for the intermediates of a forward graph (not under buffer_optimize=off_optimize)
    reuse = act and model.buffer_optimize == "l2_optimize"
    inner = y if reuse and _l2_window_fits(
        (passes + 3.0) * y, _batch(model, plan), product) else 0.0
    return [_vector_task(f"{plan.name}_bn_update_grad", "BNTrainingUpdateGrad", "backward",
                         passes * y, 0.0, product, overhead, inner),
            _vector_task(f"{plan.name}_bn_reduce_grad", "BNTrainingReduceGrad", "backward",
                         3 * y, 0.0, product, overhead, inner)]


def training_step(model: DeviceModel, product: Product, *, optimizer: str = "momentum",
                  mixed_precision: bool = True) -> TrainingStep:
    """The training step of the forward graph ``model`` on ``product`` (module docstring).

    ``optimizer``: a key of :data:`OPTIMIZER_BYTES`; ``mixed_precision``: float32 master
    weights with a lower-precision compute copy (the casts each step).
    """
    if optimizer not in OPTIMIZER_BYTES:
        raise CompileError(f"optimizer {optimizer!r} is not one of {sorted(OPTIMIZER_BYTES)}; "
                           "pick the update rule the training script uses")
    overhead = task_overhead_us(product.compute, model.issue_mode)
    graph = model.graph.graph
    nodes = {n.name: n for n in graph.nodes}
    forward: list[TrainingTask] = []
    backward: list[TrainingTask] = []
    for plan in model.tasks:
        # the forward's activations are saved for the backward: they outlive the forward
        # graph's liveness, so no L2 reuse (docs/device-model.md, "On-chip reuse")
        forward.append(TrainingTask(name=plan.name, op_type=plan.task.op_type,
                                    phase="forward", duration_us=plan.cost.duration_no_l2_us,
                                    flops=plan.cost.flops, bytes_moved=plan.cost.bytes_moved))
        if any(nodes[m].op_type in _BN for m in plan.task.members) and plan.cost.cube_flops:
            y = _output_bytes(model, plan)
            # BNTrainingReduce fused into the convolution's output (FE's conv + BN-reduce
            # fusion); BNTrainingUpdate (read x, write y) carries the activation
            act = any(nodes[m].op_type not in _BN for m in plan.task.members[1:])
            forward.append(_vector_task(f"{plan.name}_bn_update", "BNTrainingUpdate",
                                        "forward", (2.0 + (_MASK if act else 0.0)) * y, 0.0,
                                        product, overhead))
        elif any(nodes[m].op_type in _BN for m in plan.task.members):
            # a BatchNorm no convolution took: the task is BNTrainingUpdate (with its
            # activation chain); its batch statistics are a pass of their own before it
            # (BNTrainingReduce: read x)
            forward.append(_vector_task(f"{plan.name}_bn_reduce", "BNTrainingReduce",
                                        "forward", _output_bytes(model, plan), 0.0, product,
                                        overhead))
        backward[:0] = _backward(model, plan, product, overhead)  # reverse order
    for node in graph.nodes:
        if node.op_type in _DROPOUT and node.outputs:
            t = graph.tensor(node.outputs[0])
            if t is None:
                continue
            y = float(numel(t.shape) * dtype_bytes(t.dtype))
            for phase, out in (("forward", forward), ("backward", backward)):
                out.append(_vector_task(f"{node.name}_{phase}", "DropOutDoMask", phase,
                                        2.125 * y, 0.0, product, overhead))
    per_param = OPTIMIZER_BYTES[optimizer] + (MIXED_PRECISION_BYTES if mixed_precision else 0)
    updates: list[TrainingTask] = []
    read = {t for plan in model.tasks for t in plan.task.inputs}
    for name, tensor in graph.tensors.items():
        if tensor.kind != "weight" or name not in read:
            continue
        n = numel(tensor.shape)
        updates.append(_vector_task(f"{name}_apply", "ApplyMomentum" if optimizer ==
                                    "momentum" else f"Apply{optimizer.capitalize()}",
                                    "optimizer", float(per_param * n), 0.0, product, overhead))
    return TrainingStep(tasks=(*forward, *backward, *updates), optimizer=optimizer)
