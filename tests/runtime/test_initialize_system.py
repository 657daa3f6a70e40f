"""initialize_system / shutdown_system, backend choice and the rank queries (options.md §15)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import geplug
from geplug import hookimpl
from geplug.errors import BackendError, ConfigError, NotInitializedError, RankQueryError
from geplug.plugin import PluginManager
from geplug.runtime import api

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")


class _Runtime:
    """The least that fulfils geplug.backend.Runtime (this test never compiles)."""

    name = "test"

    def __init__(self) -> None:
        self.closed = False

    def compile(self, model: Any, **options: Any) -> Any:
        raise NotImplementedError("this test backend does not compile")

    def sample_models(self) -> list[Any]:
        return []

    def close(self) -> None:
        self.closed = True


class _Backend:
    """A test backend: serves when ``accept`` is true, else passes with a reason."""

    GEPLUG_PLUGIN_API = 1

    def __init__(self, name: str, accept: bool) -> None:
        self.name, self.accept = name, accept
        self.shutdowns = 0

    @hookimpl
    def geplug_init_system(self, system: Any) -> Any:
        if not self.accept:
            system.pass_reason(self.name, "no device for this test")
            return None
        return _Runtime()

    @hookimpl
    def geplug_shutdown_system(self, system: Any) -> None:
        self.shutdowns += 1


@pytest.fixture
def manager() -> Iterator[PluginManager]:
    manager = PluginManager().load()
    yield manager
    while api._current:
        api._current[-1].shutdown()


def test_initialize_picks_the_backend_that_accepts(manager: PluginManager) -> None:
    manager.register(_Backend("decline", False), "decline")
    manager.register(_Backend("serve", True), "serve")
    with geplug.initialize_system(product="atlas_a2", manager=manager, env={},
                                  backend=None) as system:
        assert system.backend == "serve"


def test_passing_backends_are_reported_with_reasons(manager: PluginManager) -> None:
    manager.register(_Backend("decline", False), "decline")
    with pytest.raises(BackendError) as info:
        geplug.initialize_system(product="atlas_a2", manager=manager, env={},
                                 backend="decline")
    assert info.value.reasons.get("decline") == "no device for this test"


def test_reasons_of_passing_backends_are_kept_on_success(manager: PluginManager) -> None:
    manager.register(_Backend("serve", True), "serve")
    manager.register(_Backend("decline", False), "decline")
    with geplug.initialize_system(product="atlas_a2", manager=manager, env={}) as system:
        assert system.backend == "serve"
        assert system.pass_reasons == {"decline": "no device for this test"}


def test_strict_backend_name_that_is_absent_is_refused(manager: PluginManager) -> None:
    manager.register(_Backend("serve", True), "serve")
    with pytest.raises(BackendError, match="not installed"):
        geplug.initialize_system(product="atlas_a2", manager=manager, env={}, backend="nope")


def test_shutdown_calls_shutdown_hook(manager: PluginManager) -> None:
    backend = _Backend("serve", True)
    manager.register(backend, "serve")
    system = geplug.initialize_system(product="atlas_a2", manager=manager, env={})
    geplug.shutdown_system()
    assert backend.shutdowns == 1 and system.closed and system.runtime.closed


def test_bad_config_is_refused_with_every_problem(manager: PluginManager) -> None:
    manager.register(_Backend("serve", True), "serve")
    with pytest.raises(ConfigError) as info:
        geplug.initialize_system(product="atlas_a2", manager=manager, env={},
                                 config={"dump_mode": "x", "graph_run_mod": 1})
    options = {p.option for p in info.value.problems}
    assert {"dump_mode", "graph_run_mod"} <= options


def test_product_without_initialize_system_is_refused(manager: PluginManager) -> None:
    if "atlas_infer" not in manager.products():
        pytest.skip("atlas_infer is not installed")
    manager.register(_Backend("serve", True), "serve")
    with pytest.raises(ConfigError) as info:
        geplug.initialize_system(product="atlas_infer", manager=manager, env={})
    assert any(p.option == "initialize_system" for p in info.value.problems)


def test_rank_queries_before_initialize_system_say_to_call_it() -> None:
    with pytest.raises(NotInitializedError, match="initialize_system"):
        geplug.get_rank_id()


def test_rank_queries_answer_from_the_system(manager: PluginManager) -> None:
    manager.register(_Backend("serve", True), "serve")
    env = {"RANK_ID": "1", "RANK_SIZE": "2"}
    with geplug.initialize_system(product="atlas_a2", manager=manager, env=env):
        assert (geplug.get_rank_id(), geplug.get_rank_size(), geplug.get_local_rank_id(),
                geplug.get_local_rank_size()) == (1, 2, 1, 2)


@pytest.mark.parametrize("group", [3, "", "g" * 128, "my_group"])
def test_rank_query_group_is_checked(manager: PluginManager, group: Any) -> None:
    manager.register(_Backend("serve", True), "serve")
    with geplug.initialize_system(product="atlas_a2", manager=manager, env={}):
        with pytest.raises(RankQueryError):
            geplug.get_rank_size(group)


def test_system_resolves_config(manager: PluginManager) -> None:
    manager.register(_Backend("serve", True), "serve")
    with geplug.initialize_system(product="atlas_a2", manager=manager, env={},
                                  config={"graph_run_mode": 0}) as system:
        assert system.config.config.precision_mode == "force_fp16"


def test_product_comes_from_soc_version(manager: PluginManager) -> None:
    manager.register(_Backend("serve", True), "serve")
    with geplug.initialize_system(manager=manager, env={},
                                  config={"soc_version": "Ascend910B3"}) as system:
        assert system.product.name == "atlas_a2"


def test_no_product_among_several_is_refused_naming_them(manager: PluginManager) -> None:
    if len(list(manager.products())) < 2:
        pytest.skip("needs two installed products")
    manager.register(_Backend("serve", True), "serve")
    with pytest.raises(ConfigError) as info:
        geplug.initialize_system(manager=manager, env={})
    assert info.value.problems[0].option == "product"
    assert "atlas_a2" in info.value.problems[0].message


def test_initialize_by_soc_string_resolves_that_soc(manager: PluginManager) -> None:
    manager.register(_Backend("serve", True), "serve")
    with geplug.initialize_system(product="Ascend910B3", manager=manager, env={},
                                  backend="serve") as system:
        assert system.config.config.soc_version == "Ascend910B3"
