"""The one place that imports torch: a clear one-line error when it is not installed.

torch is an optional dependency of geplug-torch (the ``torch`` extra), so ``import
geplug_torch`` works without it and only *using* the backend or the profiler needs it.
"""

from __future__ import annotations

from types import ModuleType

from geplug.errors import BackendError

__all__ = ["INSTALL_HINT", "TorchMissingError", "have_torch", "require_torch"]

INSTALL_HINT = "pip install torch==2.13.0  (the CPU build; or pip install 'geplug-torch[torch]')"


class TorchMissingError(BackendError, ImportError):
    """PyTorch is not installed; the message says what to install."""


def have_torch() -> bool:
    """Whether ``import torch`` would succeed (without importing it)."""
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def require_torch(feature: str = "geplug_torch") -> ModuleType:
    """``torch``, or :class:`TorchMissingError` naming ``feature`` and what to install."""
    try:
        import torch
    except ImportError:
        raise TorchMissingError(
            f"{feature} needs PyTorch, which is not installed: {INSTALL_HINT}",
            reasons={"torch": "PyTorch is not installed"},
        ) from None
    return torch
