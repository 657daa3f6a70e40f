"""``extends``: a card declares only what differs from its family."""

from __future__ import annotations

from pathlib import Path

import pytest

from geplug.plugin import DISABLE_ENV, PluginManager, PluginSkippedWarning
from geplug.testing.conformance import check_product
from geplug.testing.samples import card_files, minimal_toml

pytestmark = pytest.mark.usefixtures("entry_points_only")

REPO = Path(__file__).resolve().parents[2]

CARD = """
schema_version = 1
[product]
name = "{name}"
extends = "{base}"
display_name = "Card {name}"
soc_versions = ["{soc}"]
[compute]
ai_cores = 1
[ops.MatMulV2]
aicpu_dtypes = ["float64"]
"""


def _card(name: str, base: str, soc: str) -> str:
    return CARD.format(name=name, base=base, soc=soc)


def _install(fake_distribution, dist: str, package: str, toml: str) -> None:
    fake_distribution(dist, entry_points={package: f"{package}.hooks"},
                      files=card_files(package, toml))


def test_card_inherits_everything_it_does_not_override(geplug_fake_distribution) -> None:
    _install(geplug_fake_distribution, "fake-base", "basefam", minimal_toml("basefam", ("B1",)))
    _install(geplug_fake_distribution, "fake-card", "mycard", _card("mycard", "basefam", "C1"))
    products = PluginManager().load().products()
    card, base = products.get("mycard"), products.get("basefam")
    assert card.extends == "basefam" and card.family_id == base.family_id
    assert card.compute.ai_cores == 1 and card.compute.clock_mhz == base.compute.clock_mhz
    assert card.profiling == base.profiling


def test_card_overrides_one_key_of_one_op(geplug_fake_distribution) -> None:
    _install(geplug_fake_distribution, "fake-base", "basefam", minimal_toml("basefam", ("B1",)))
    _install(geplug_fake_distribution, "fake-card", "mycard", _card("mycard", "basefam", "C1"))
    products = PluginManager().load().products()
    card, base = products.get("mycard"), products.get("basefam")
    assert card.op("MatMulV2").aicpu_dtypes == ("float64",)
    assert card.op("MatMulV2").aicore_dtypes == base.op("MatMulV2").aicore_dtypes


def test_card_does_not_inherit_the_family_soc_versions(geplug_fake_distribution) -> None:
    _install(geplug_fake_distribution, "fake-base", "basefam", minimal_toml("basefam", ("B1",)))
    _install(geplug_fake_distribution, "fake-card", "mycard", _card("mycard", "basefam", "C1"))
    products = PluginManager().load().products()
    assert products.get("mycard").soc_versions == ("C1",)
    assert products.get("B1").name == "basefam" and products.get("C1").name == "mycard"


def test_card_of_a_card_resolves_the_whole_chain(geplug_fake_distribution) -> None:
    _install(geplug_fake_distribution, "fake-base", "basefam", minimal_toml("basefam", ("B1",)))
    _install(geplug_fake_distribution, "fake-card", "mycard", _card("mycard", "basefam", "C1"))
    _install(geplug_fake_distribution, "fake-sub", "subcard", _card("subcard", "mycard", "S1"))
    products = PluginManager().load().products()
    assert products.get("subcard").compute.clock_mhz == products.get("basefam").compute.clock_mhz


def test_card_whose_base_is_missing_is_skipped(geplug_fake_distribution) -> None:
    _install(geplug_fake_distribution, "fake-card", "mycard", _card("mycard", "nofamily", "C1"))
    with pytest.warns(PluginSkippedWarning, match=r"product\.extends: expected an installed "
                                                  r"product, got 'nofamily'"):
        products = PluginManager().load().products()
    assert "mycard" not in products


def test_card_of_an_invalid_family_is_skipped_with_it(geplug_fake_distribution) -> None:
    bad = minimal_toml("basefam", ("B1",)).replace('l2 = "l2"', "l2 = 3")
    _install(geplug_fake_distribution, "fake-base", "basefam", bad)
    _install(geplug_fake_distribution, "fake-card", "mycard", _card("mycard", "basefam", "C1"))
    with pytest.warns(PluginSkippedWarning):
        products = PluginManager().load().products()
    assert len(products) == 0


def test_extends_cycle_is_reported(geplug_fake_distribution) -> None:
    _install(geplug_fake_distribution, "fake-a", "carda", _card("carda", "cardb", "A1"))
    _install(geplug_fake_distribution, "fake-b", "cardb", _card("cardb", "carda", "B1"))
    with pytest.warns(PluginSkippedWarning, match="cycle"):
        products = PluginManager().load().products()
    assert len(products) == 0


def test_example_package_installs_loads_and_conforms(geplug_fake_distribution, monkeypatch) -> None:
    monkeypatch.delenv(DISABLE_ENV, raising=False)  # both packages come from the checkout
    geplug_fake_distribution("fake-atlas-a2", path=REPO / "plugins" / "atlas_a2",
                      entry_points={"atlas_a2": "geplug_atlas_a2.hooks"})
    geplug_fake_distribution("fake-example-card", path=REPO / "examples" / "geplug-example-card",
                      entry_points={"example_card": "geplug_example_card.hooks"})
    manager = PluginManager().load()
    card = manager.products().get("example_card")
    assert card.extends == "atlas_a2" and card.compute.ai_cores == 12
    assert not card.supports("profiling.aic_metrics", "MemoryAccess")
    assert card.distribution == "fake-example-card 1.0"
    failures = [f for f in check_product(card) if "across_installed" not in f]
    assert failures == []
