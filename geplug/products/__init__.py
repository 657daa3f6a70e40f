"""Product declarations: the schema records, the TOML loader and the queries."""

from geplug.products.load import Declaration, build_product, read_declaration
from geplug.products.query import ProductRegistry, capability_value
from geplug.products.schema import SCHEMA_VERSION, OpSupport, Product

__all__ = [
    "SCHEMA_VERSION",
    "Declaration",
    "OpSupport",
    "Product",
    "ProductRegistry",
    "build_product",
    "capability_value",
    "declare",
    "read_declaration",
]


def declare(path: object) -> Declaration:
    """What a product plugin's ``geplug_capabilities`` returns for one ``capabilities.toml``."""
    from pathlib import Path

    return read_declaration(Path(str(path)))
