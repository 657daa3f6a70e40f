"""The device model: GE-style graph compilation, calibrated costs, streams, memory.

Backend-independent (no onnx, no torch): a backend builds a :class:`Graph`, runs
:func:`optimize` (dead-node elimination, constant folding, views), decides precision for the
device nodes, then :func:`build_device_model` (fusion by the product's patterns, per-task
cost, the stream schedule and its makespan, the memory plan against HBM).
``docs/device-model.md`` documents the model and its validation.
"""

from __future__ import annotations

from geplug.device.cost import ISSUE_MODES, NodeWork, TaskCost, node_work, task_cost
from geplug.device.ir import Graph, Node, Tensor, dtype_bytes, numel
from geplug.device.memory import DeviceMemoryError, MemoryBlock, MemoryPlan, capacity_bytes
from geplug.device.model import DeviceModel, TaskPlan, build_device_model, copy_us
from geplug.device.passes import Fusion, OptimizedGraph, Task, fuse, optimize
from geplug.device.patterns import DEFAULT_PATTERNS
from geplug.device.schedule import STREAMS, Schedule, ScheduledTask

__all__ = [
    "DEFAULT_PATTERNS",
    "ISSUE_MODES",
    "STREAMS",
    "DeviceMemoryError",
    "DeviceModel",
    "Fusion",
    "Graph",
    "MemoryBlock",
    "MemoryPlan",
    "Node",
    "NodeWork",
    "OptimizedGraph",
    "Schedule",
    "ScheduledTask",
    "Task",
    "TaskCost",
    "TaskPlan",
    "Tensor",
    "build_device_model",
    "capacity_bytes",
    "copy_us",
    "dtype_bytes",
    "fuse",
    "node_work",
    "numel",
    "optimize",
    "task_cost",
]
