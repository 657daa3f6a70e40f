"""``torch.distributed`` on the ``hccl`` backend: gloo moves the data, geplug times it.

    import torch.distributed as dist
    dist.init_process_group("hccl")      # launched by torchrun, as on a real cluster

``hccl`` is registered with ``torch.distributed.Backend.register_backend`` when torch loads
its device-backend extensions (the ``torch.backends`` entry point of geplug-torch, as
torch_npu registers it; ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` turns that off) and by importing
``geplug_torch.distributed`` (:func:`register`). Each process's rank environment is
checked, each collective is timed by geplug's HCCL model over the job's topology and emitted
as a communication task (:mod:`geplug_torch.distributed.timing`). docs/distributed.md.
"""

from __future__ import annotations

__all__ = ["BACKEND", "autoload", "register"]

BACKEND = "hccl"


def register() -> None:
    """Register the ``hccl`` backend with torch.distributed (idempotent; nothing without
    PyTorch)."""
    from geplug_torch._torch import have_torch

    if not have_torch():
        return
    import torch.distributed as dist

    if not dist.is_available():
        return
    if BACKEND.upper() in getattr(dist.Backend, "_plugins", {}):
        return
    from geplug_torch.distributed.process_group import create

    dist.Backend.register_backend(BACKEND, create, devices=["cpu"])


def autoload() -> None:
    """torch's device-backend autoload entry point: register, never break ``import torch``."""
    try:
        register()
    except Exception as exc:  # torch must import whatever happens here
        import warnings

        from geplug.errors import GeplugWarning

        warnings.warn(f"geplug-torch could not register the 'hccl' backend: {exc}",
                      GeplugWarning, stacklevel=2)


autoload()
