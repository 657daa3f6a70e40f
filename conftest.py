"""Repository-wide pytest configuration.

geplug's pytest plugin is turned on by ``addopts`` in ``pyproject.toml``. The fixtures below
are unprefixed aliases of the plugin's ``geplug_*`` fixtures (geplug 0.1 names), kept while
parallel branches still use the old names; new tests take the prefixed fixtures.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from geplug.plugin import PluginManager
    from geplug.products import Product, ProductRegistry


@pytest.fixture
def product(geplug_product: Product) -> Product:
    """Alias of ``geplug_product``."""
    return geplug_product


@pytest.fixture
def product_registry(geplug_product_registry: ProductRegistry) -> ProductRegistry:
    """Alias of ``geplug_product_registry``."""
    return geplug_product_registry


@pytest.fixture
def fresh_manager(geplug_fresh_manager: PluginManager) -> PluginManager:
    """Alias of ``geplug_fresh_manager``."""
    return geplug_fresh_manager


@pytest.fixture
def fake_distribution(
    geplug_fake_distribution: Callable[..., Path],
) -> Callable[..., Path]:
    """Alias of ``geplug_fake_distribution``."""
    return geplug_fake_distribution
