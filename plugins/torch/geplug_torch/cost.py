"""Modelled device time of what runs outside the compiled graphs: the optimizer's update.

Ops inside the graphs are timed by the core's device model (:mod:`geplug_torch.graph`). The
gradient refresh of ``optimizer.step()`` runs eagerly, op by op from the host (torch_npu's
optimizers are not part of the compiled graph), so it is costed by the same core formula
(:func:`geplug.device.node_work`, :func:`geplug.device.task_cost`) with the ``single_op``
issue mode: one vector task per parameter tensor that reads the parameter, its gradient and
each per-parameter state tensor (Adam's two moments) and writes the parameter and the states
back - a bandwidth-bound update, as on the device.
"""

from __future__ import annotations

from typing import Any

from geplug.device import Graph, Node, Tensor, node_work, task_cost
from geplug_torch.devicegraph import dtype_name

__all__ = ["REFRESH_OP_TYPE", "refresh_time_us"]

REFRESH_OP_TYPE = "ApplyAdamW"
"""The Ascend op type of one parameter's update (a vector op)."""


def _update_cost(product: Any, shape: tuple[int, ...], dtype: str, states: int) -> float:
    """Device µs of one parameter's update (``states`` state tensors of its shape)."""
    reads = ["param", "grad", *(f"state{i}" for i in range(states))]
    writes = [f"{n}_new" for n in ("param", *(f"state{i}" for i in range(states)))]
    tensors = {n: Tensor(name=n, dtype=dtype, shape=shape, kind="input") for n in reads}
    tensors.update({n: Tensor(name=n, dtype=dtype, shape=shape) for n in writes})
    node = Node(name="optimizer", op_type=REFRESH_OP_TYPE, source_op="optimizer.step",
                inputs=tuple(reads), outputs=tuple(writes))
    graph = Graph(name="optimizer", nodes=(node,), tensors=tensors, inputs=tuple(reads),
                  outputs=tuple(writes))
    work = node_work(node, graph, "vector")
    moved = float(sum(t.nbytes for t in tensors.values()))
    cost = task_cost([node], [work], [dtype], engine="AI_CORE", bytes_moved=moved,
                     product=product, issue_mode="single_op", op_classes=["vector"])
    return cost.duration_us


def refresh_time_us(product: Any, optimizer: Any) -> float:
    """Device µs of ``optimizer``'s update of every parameter that has a gradient."""
    total = 0.0
    for group in getattr(optimizer, "param_groups", ()):
        for p in group.get("params", ()):
            if getattr(p, "grad", None) is None:
                continue
            shape = tuple(int(d) for d in p.shape)
            states = sum(1 for v in optimizer.state.get(p, {}).values()
                         if hasattr(v, "shape") and tuple(v.shape) == shape)
            total += _update_cost(product, shape, dtype_name(p.dtype), states)
    return total
