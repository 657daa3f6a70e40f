"""initialize_system reports configuration warnings as Python warnings, and says clearly when
no product was named (ConfigWarning, ProductNotNamedError)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import geplug
from geplug import hookimpl
from geplug.errors import ConfigError, ConfigWarning, ProductNotNamedError
from geplug.plugin import PluginManager
from geplug.runtime import api

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")


class _Serve:
    """A backend that serves every product."""

    GEPLUG_PLUGIN_API = 1

    @hookimpl
    def geplug_init_system(self, system: Any) -> Any:
        return object()


@pytest.fixture
def manager() -> Iterator[PluginManager]:
    manager = PluginManager().load()
    manager.register(_Serve(), "serve")
    yield manager
    while api._current:
        api._current[-1].shutdown()


def _init(manager: PluginManager, config: Any, **kw: Any) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        geplug.initialize_system(manager=manager, env={}, config=config, **kw)
    return [w for w in caught if issubclass(w.category, ConfigWarning)]


def test_config_warning_is_issued_as_python_warning(manager: PluginManager) -> None:
    caught = _init(manager, {"dump_path": "/tmp"}, product="atlas_a2")
    assert len(caught) == 1
    text = str(caught[0].message)
    assert text.startswith("dump_path = '/tmp': ") and "enable_dump" in text


def test_config_warning_carries_the_problem(manager: PluginManager) -> None:
    caught = _init(manager, {"dump_path": "/tmp"}, product="atlas_a2")
    problem = caught[0].message.problem  # type: ignore[union-attr]
    assert (problem.option, problem.value, problem.severity) == ("dump_path", "/tmp", "warning")


def test_config_warning_is_a_user_warning() -> None:
    assert issubclass(ConfigWarning, UserWarning)


def test_each_warning_is_issued_once(manager: PluginManager) -> None:
    caught = _init(manager, {"dump_path": "/tmp", "debug_dir": "/tmp"}, product="atlas_a2")
    assert sorted(str(w.message).split(" = ")[0] for w in caught) == ["debug_dir", "dump_path"]


def test_clean_config_issues_no_warning(manager: PluginManager) -> None:
    assert _init(manager, {"precision_mode": "allow_mix_precision"}, product="atlas_a2") == []


def test_config_warning_points_at_the_caller(manager: PluginManager) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        geplug.initialize_system(product="atlas_a2", manager=manager, env={},
                                 config={"dump_path": "/tmp"})
    assert caught[0].filename == __file__


def test_warnings_can_be_made_errors(manager: PluginManager) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConfigWarning)
        with pytest.raises(ConfigWarning):
            geplug.initialize_system(product="atlas_a2", manager=manager, env={},
                                     config={"dump_path": "/tmp"})


def test_no_product_named_raises_product_not_named(manager: PluginManager) -> None:
    if len(manager.products()) < 2:
        pytest.skip("needs two installed products")
    with pytest.raises(ProductNotNamedError) as info:
        geplug.initialize_system(manager=manager, env={})
    assert isinstance(info.value, ConfigError)
    assert "atlas_a2" in info.value.installed
    assert 'initialize_system(product="<name>"' in str(info.value)


def test_cli_run_prints_config_warnings(tmp_path: Path, capsys: Any,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("geplug_simulator")
    import onnx
    from onnx import TensorProto, helper

    from geplug.cli.main import main
    from geplug.plugin import reset_manager

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    toml = tmp_path / "s.toml"
    toml.write_text(f'dump_path = "{tmp_path}"\n')
    monkeypatch.chdir(tmp_path)
    try:
        code = main(["run", str(model), "--product", "atlas_a2", "--config", str(toml)])
    finally:
        reset_manager()
    assert code == 0
    assert f"geplug: warning: dump_path = '{tmp_path}': " in capsys.readouterr().err
