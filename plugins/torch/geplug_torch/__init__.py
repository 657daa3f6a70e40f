"""geplug-torch: PyTorch onto a simulated Ascend product (torch.compile, training, profiler).

``import geplug_torch`` works without PyTorch; using the backend or the profiler without it
raises :class:`~geplug_torch._torch.TorchMissingError` saying what to install.

    import torch, geplug_torch
    npu = geplug_torch.backend(product="atlas_a2",
                               config={"precision_mode": "must_keep_origin_dtype"})
    model = torch.compile(model, backend=npu)
"""

from __future__ import annotations

from typing import Any

from geplug_torch._torch import INSTALL_HINT, TorchMissingError, have_torch
from geplug_torch.config import CompilerConfig
from geplug_torch.memory import NpuOutOfMemoryError
from geplug_torch.static import TorchModel

__version__ = "0.1.0"

__all__ = ["INSTALL_HINT", "CompilerConfig", "NpuOutOfMemoryError", "TorchMissingError",
           "TorchModel", "__version__", "backend", "have_torch"]


def backend(product: Any = None, config: Any = None, **kwargs: Any) -> Any:
    """A ``torch.compile`` backend for ``product``
    (see :func:`geplug_torch.npu_backend.backend`)."""
    from geplug_torch.npu_backend import backend as make

    return make(product, config, **kwargs)
