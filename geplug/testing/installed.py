"""The installed products, loaded once per process, for the conformance checks and fixtures.

Free of pytest on purpose: :func:`geplug.testing.conformance.check_product` runs outside pytest
(a vendor's CI script, ``python -c``) on a plain ``pip install geplug``.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from geplug.products import Product, ProductRegistry

__all__ = ["installed_products", "installed_registry"]


@functools.lru_cache(maxsize=1)
def installed_registry() -> ProductRegistry:
    """The products of the installed plugins (loaded once per process, warnings muted)."""
    import warnings

    from geplug.plugin import PluginManager

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PluginManager().load().products()


def installed_products() -> list[Product]:
    """The installed products, in name order."""
    return list(installed_registry())
