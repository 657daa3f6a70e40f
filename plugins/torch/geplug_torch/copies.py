"""The host<->device copies around a compiled graph's run (torch_npu's ``.to("npu")`` of an
input batch, ``loss.item()`` / ``.cpu()`` of a result).

On a real card a training script moves each input batch to the device before the forward
(H2D) and reads its results back after it (D2H); the parameters, buffers and everything the
backward reads stay on the device. geplug's tensors never leave the CPU, so the copies are
modelled at the graph boundary, from what torch.compile hands the backend:

- **H2D:** each input of the dynamo graph that is not module state - its source is neither
  a ``_parameters[...]`` nor a ``_buffers[...]`` entry, nor an ``nn.Parameter`` - is copied
  to the device before every forward (or inference) run;
- **D2H:** the results read back once after each run: every output of an inference graph
  (what a serving loop returns), and each *scalar* user-visible output of a training
  forward (AOTAutograd's ``fw_metadata``: after the mutated inputs, ``num_outputs`` of
  them), the loss a training loop logs with ``loss.item()``. A training forward's tensor
  results (logits, the activations of DDP's split graphs) stay on the device, where the
  next graph or the eager loss reads them.

This is a model of a typical script, not an observation: geplug cannot see whether a script
calls ``.item()``; a script that never reads its loss shows one copy too many per step, and
a script that copies other tensors (``.cpu()`` of logits in training) shows too few.

Each copy is a synchronous ``aclrtMemcpy`` runtime call: the host issues it (the product's
``launch_overhead_us``, as for any task), then waits for the device's ``MEMCPY_ASYNC`` task
on the copy stream, which costs what the core's device model charges a copy
(:func:`geplug.device.copy_us`: the product's ``host_copy_overhead_us`` plus bytes over
``host_link_gbps``; :mod:`geplug.profiling.memcpy`). The device clock advances by both. A
backward graph has no copies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

__all__ = ["GraphCopy", "graph_copies", "host_input_positions"]

_STATE = ("._parameters[", "._buffers[")


@attrs.frozen
class GraphCopy:
    """One copy of a graph run: ``direction`` ``H2D`` (before) or ``D2H`` (after)."""

    direction: str
    name: str
    nbytes: int


def host_input_positions(gm: Any, example_inputs: Sequence[Any]) -> tuple[int, ...]:
    """Positions of the dynamo graph's inputs fed from the host on each call (not module
    state): the input batch and other per-call tensors."""
    import torch

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    found = []
    for i, (node, value) in enumerate(zip(placeholders, example_inputs, strict=False)):
        if not isinstance(value, torch.Tensor) or isinstance(value, torch.nn.Parameter):
            continue
        source = _source(node)
        # no source: an intermediate of a split graph (DDP's buckets), already on the device
        if not source or any(s in source for s in _STATE):
            continue
        found.append(i)
    return tuple(found)


def state_positions(gm: Any, example_inputs: Sequence[Any]) -> tuple[int, ...]:
    """Positions of the dynamo graph's inputs that are module state: parameters and
    buffers (the device memory account holds them for the job: :mod:`geplug_torch.memory`)."""
    import torch

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    found = []
    for i, (node, value) in enumerate(zip(placeholders, example_inputs, strict=False)):
        if isinstance(value, torch.nn.Parameter):
            found.append(i)
            continue
        if isinstance(value, torch.Tensor) and "._buffers[" in _source(node):
            found.append(i)
    return tuple(found)


def _source(node: Any) -> str:
    """Where dynamo took a graph input from (``L['self']._buffers['running_mean']``, ...;
    "" when it does not say)."""
    source = getattr(getattr(node.meta.get("grapharg"), "source", None), "name", "")
    return source if isinstance(source, str) else ""


def _nbytes(node: Any) -> int:
    val = node.meta.get("val") if hasattr(node, "meta") else None
    if val is None or not hasattr(val, "element_size"):
        return 0
    return int(val.numel()) * int(val.element_size())


def graph_copies(gm: Any, phase: str, host_inputs: Sequence[int]) -> tuple[GraphCopy, ...]:
    """The copies of one run of ``gm`` (an AOTAutograd graph of ``phase``; see the module
    docstring). ``host_inputs``: :func:`host_input_positions` of its dynamo graph."""
    if phase not in ("forward", "inference"):
        return ()
    names = {f"primals_{i + 1}" for i in host_inputs} | {f"arg{i}_1" for i in host_inputs}
    copies = [GraphCopy("H2D", n.name, _nbytes(n)) for n in gm.graph.nodes
              if n.op == "placeholder" and n.name in names]
    out_node = next((n for n in gm.graph.nodes if n.op == "output"), None)
    outs = list(out_node.args[0]) if out_node is not None and out_node.args else []
    first, count = 0, len(outs)
    if phase == "forward":
        import torch

        ctx = torch._guards.TracingContext.try_get()
        meta = getattr(ctx, "fw_metadata", None)
        if meta is None:
            count = 0  # which outputs the user sees is unknown: no read-back modelled
        else:
            first = int(meta.num_mutated_inp_runtime_indices)
            count = int(meta.num_outputs)
    for node in outs[first:first + count]:
        val = node.meta.get("val") if hasattr(node, "meta") else None
        if val is None or not _nbytes(node):
            continue
        if phase == "forward" and getattr(val, "dim", lambda: 1)() != 0:
            continue  # a training forward's tensor result stays on the device
        copies.append(GraphCopy("D2H", node.name, _nbytes(node)))
    return tuple(copies)
