"""Training iterations: where a step begins and ends, and the simulated device clock.

A step (iteration) is counted at ``optimizer.step()`` (a global optimizer step hook), at the
profiler's ``step()``, and - so that a step ``torch.amp.GradScaler`` skips still counts -
when a model's forward graph runs again after its backward graph ran in the same iteration
with no ``optimizer.step()`` in between. An inference graph (no backward) is one step per
call until an optimizer or profiler step is seen. Every compiled graph of one
:class:`~geplug_torch.runtime.TorchRuntime` shares one device clock, so the forward ops, the
backward ops and the gradient refresh of an iteration follow each other on one timeline.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

__all__ = ["install_optimizer_hook", "runtimes"]

_runtimes: weakref.WeakSet[Any] = weakref.WeakSet()
_hook_lock = threading.Lock()
_hook_handle: list[Any] = []


def runtimes() -> list[Any]:
    """The live :class:`~geplug_torch.runtime.TorchRuntime` objects (open systems)."""
    return [r for r in list(_runtimes) if not r.system.closed]


def install_optimizer_hook(runtime: Any) -> None:
    """Track ``runtime`` and make sure the global optimizer step hook is installed once."""
    from torch.optim.optimizer import register_optimizer_step_post_hook

    _runtimes.add(runtime)
    with _hook_lock:
        if not _hook_handle:
            _hook_handle.append(register_optimizer_step_post_hook(_on_optimizer_step))


def _on_optimizer_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    for runtime in runtimes():
        runtime.optimizer_step(optimizer)


_active_profilers: list[Any] = []
"""Profilers between start() and stop() (every runtime reports to them)."""


def active_profilers() -> list[Any]:
    """The :class:`geplug_torch.profiler.profile` objects currently started."""
    return list(_active_profilers)


def add_profiler(prof: Any) -> None:
    """Register a started profiler."""
    if prof not in _active_profilers:
        _active_profilers.append(prof)


def remove_profiler(prof: Any) -> None:
    """Forget a stopped profiler."""
    if prof in _active_profilers:
        _active_profilers.remove(prof)
