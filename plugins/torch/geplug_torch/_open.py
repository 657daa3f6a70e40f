"""Opening a geplug system of a product for geplug-torch's own use, by the API it serves.

The profiler's system of a collection and the clock of an eager ``hccl`` job open a
system of a product someone else chose. ``geplug.initialize_system`` is the TF API: products
whose declaration says ``runtime.initialize_system = false`` (the inference families) refuse
it and serve the ACL path, ``geplug.open_device``, instead - as the real stack opens their
devices with ``aclrtSetDevice`` (torch_npu runs, and profiles, on them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from geplug.products.schema import Product
    from geplug.runtime.system import System

__all__ = ["open_system"]


def open_system(product: Product, config: Any, *, manager: Any = None,
                device_id: int | None = None) -> System:
    """A ``backend="torch"`` system of ``product`` under ``config``: through
    ``geplug.initialize_system`` when the product declares it, else through
    ``geplug.open_device`` on ``device_id`` (``None``: the environment's device, as
    ``initialize_system`` picks it)."""
    import geplug

    if product.runtime.initialize_system:
        return geplug.initialize_system(product, config, backend="torch", manager=manager)
    return geplug.open_device(product, config, device_id=device_id, backend="torch",
                              manager=manager)
