"""The lead's smoke test: the core imports and the Atlas A2 plugin is discovered."""

from geplug.testing.plugin import require_product


def test_atlas_a2_is_found_by_soc_version() -> None:
    product = require_product("atlas_a2")
    assert "Ascend910B3" in product.soc_versions
