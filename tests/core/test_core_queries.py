"""Queries: list products, get by name or SoC string, closest names, ``supports``."""

from __future__ import annotations

import pytest

from geplug.errors import CapabilityError, UnknownProductError
from geplug.products import ProductRegistry, build_product, capability_value, read_declaration
from geplug.testing.samples import minimal_toml


@pytest.fixture
def registry(write_toml) -> ProductRegistry:
    """A training family owning ``Ascend910B`` and an A2-like family owning ``Ascend910B3``."""
    train = minimal_toml("old_train", ("Ascend910A", "Ascend910B"))
    a2 = minimal_toml("new_a2", ("Ascend910B3", "Ascend910B4-1")).replace(
        '"Memory"]', '"Memory", "MemoryAccess"]').replace(
        "[profiling.frequencies", 'MemoryAccess = ["aicore_time(us)"]\n[profiling.frequencies')
    products = [build_product(read_declaration(write_toml(t))) for t in (train, a2)]
    return ProductRegistry({p.name: p for p in products})


def test_products_are_listed_in_name_order(registry) -> None:
    assert registry.names() == ["new_a2", "old_train"]
    assert [p.name for p in registry] == ["new_a2", "old_train"] and len(registry) == 2


def test_get_by_product_name(registry) -> None:
    assert registry.get("new_a2").name == "new_a2"


def test_get_by_soc_version_string(registry) -> None:
    assert registry.get("Ascend910B3").name == "new_a2"


def test_soc_without_digit_is_the_old_training_family(registry) -> None:
    assert registry.get("Ascend910B").name == "old_train"


def test_get_ignores_case_and_dash_underscore(registry) -> None:
    assert registry.get("NEW-A2").name == "new_a2"
    assert registry.get("ascend910b4_1").name == "new_a2"  # torch_npu's enum spelling


def test_unknown_name_suggests_the_closest(registry) -> None:
    with pytest.raises(UnknownProductError) as info:
        registry.get("new_a3")
    assert "new_a2" in info.value.suggestions
    assert "did you mean 'new_a2'" in str(info.value)


def test_unknown_name_with_nothing_close_lists_the_products(registry) -> None:
    with pytest.raises(UnknownProductError, match="installed products: new_a2, old_train"):
        registry.get("zzzzzz")


def test_unknown_name_without_products_says_to_install_one() -> None:
    with pytest.raises(UnknownProductError, match="no product plugin is installed"):
        ProductRegistry({}).get("atlas_a2")


def test_supports_a_value_of_a_collection_capability(registry) -> None:
    assert registry.get("new_a2").supports("profiling.aic_metrics", "MemoryAccess")
    assert not registry.get("old_train").supports("profiling.aic_metrics", "MemoryAccess")


def test_supports_a_boolean_capability(registry) -> None:
    assert registry.get("old_train").supports("runtime.initialize_system")


def test_supports_a_scalar_capability_by_equality(registry) -> None:
    assert registry.get("old_train").supports("profiling.l2", "l2")
    assert not registry.get("old_train").supports("profiling.l2", "l2_tlb")


def test_supports_a_mapping_key(registry) -> None:
    assert registry.get("new_a2").supports("debug.kernel_meta", "4")


def test_supporting_filters_the_registry(registry) -> None:
    names = [p.name for p in registry.supporting("profiling.aic_metrics", "MemoryAccess")]
    assert names == ["new_a2"]


def test_unknown_capability_path_names_the_bad_part(registry) -> None:
    with pytest.raises(CapabilityError, match=r"'profiling.aic_metricz' does not exist"):
        capability_value(registry.get("new_a2"), "profiling.aic_metricz.x")


def test_unlisted_op_uses_the_default_entry(registry) -> None:
    op = registry.get("new_a2").op("NonMaxSuppression")
    assert op.op_type == "NonMaxSuppression" and "float32" in op.aicore_dtypes


def test_a_soc_declared_by_two_products_is_ambiguous_not_guessed(write_toml) -> None:
    import attrs

    fam = build_product(read_declaration(write_toml(minimal_toml("fam", ("X1",)))))
    card = attrs.evolve(fam, name="card", extends="fam")
    registry = ProductRegistry({"card": card, "fam": fam})
    with pytest.raises(UnknownProductError, match="declared by several products") as info:
        registry.get("X1")
    assert set(info.value.suggestions) == {"card", "fam"}
    assert registry.soc_owners()["X1"] == ["card", "fam"]
    assert registry.get("card").name == "card"  # by name it is unambiguous
