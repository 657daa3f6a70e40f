"""geplug-torch's hook implementations: the ``torch`` backend serves every declared product.

It is asked last (``trylast``): ``initialize_system`` without ``backend=`` keeps choosing
the simulator for ONNX models, and ``backend="torch"`` (what :func:`geplug_torch.backend`
asks for) makes the choice strict.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from geplug import hookimpl

if TYPE_CHECKING:
    from geplug.runtime.system import System
    from geplug_torch.runtime import TorchRuntime

GEPLUG_PLUGIN_API = 1

__all__ = ["GEPLUG_PLUGIN_API", "geplug_init_system"]


@hookimpl(trylast=True)
def geplug_init_system(system: System) -> TorchRuntime | None:
    """A :class:`~geplug_torch.runtime.TorchRuntime` (``None`` without PyTorch, with the
    reason and what to install)."""
    from geplug_torch._torch import INSTALL_HINT, have_torch

    if not have_torch():
        system.pass_reason("torch", f"PyTorch is not installed: {INSTALL_HINT}")
        return None
    from geplug_torch.runtime import TorchRuntime

    return TorchRuntime(system)
