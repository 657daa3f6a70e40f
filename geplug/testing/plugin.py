"""pytest plugin: fixtures over the installed products, shared by geplug and vendors.

Registered through the ``pytest11`` entry point of the core, so it is active wherever geplug
is installed:

- ``product``: parametrised over every installed product (tests run once per product the
  environment has; skipped when none is installed). Test ids are the product names.
- ``@pytest.mark.product_capability("profiling.aic_metrics", "MemoryAccess")``: limits the
  ``product`` parametrisation to products supporting that value (several markers combine).
- ``product_registry``: the installed products (a
  :class:`~geplug.products.ProductRegistry`, loaded once per session; read-only).
- ``fresh_manager``: a freshly loaded :class:`~geplug.plugin.PluginManager`, installed as the
  process-wide manager for the test and dropped afterwards.
- :func:`require_product`: the named product, or a skip when it is not installed.
- ``@pytest.mark.requires_products("atlas_a2", ...)`` (also as a module's ``pytestmark``):
  skip unless every named product is installed - for tests about one specific family, so the
  ``core`` and single-product tox environments skip them instead of failing.
- ``fake_distribution``: write a fake installed distribution (``*.dist-info`` plus source)
  and put it first on ``sys.path``; its modules are forgotten afterwards.
- Tests inside a plugin package directory (one with its own ``pyproject.toml``, e.g.
  ``plugins/atlas_a3/tests``) are not collected when that distribution is not installed (a
  line in the summary says so), so one ``pytest tests plugins`` command serves every tox env.
- ``conformance_product`` and ``--geplug-conformance=NAME[,NAME]``: the conformance suite of
  :mod:`geplug.testing.conformance` over the named products.
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from geplug.testing.installed import installed_products, installed_registry

if TYPE_CHECKING:
    from geplug.plugin import PluginManager
    from geplug.products import Product, ProductRegistry

__all__ = ["installed_products", "installed_registry", "require_product"]

CONFORMANCE_OPTION = "--geplug-conformance"
_left_out: dict[str, str] = {}
"""Distribution -> first directory left out because the distribution is not installed."""
CONFORMANCE_ATTR = "GEPLUG_CONFORMANCE"
"""Module-level name a vendor's test module sets to the product(s) under test."""


def require_product(name: str) -> Product:
    """The installed product ``name``; skips the calling test when it is not installed."""
    registry = installed_registry()
    if name in registry:
        return registry.get(name)
    pytest.skip(f"product {name!r} is not installed in this environment")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("geplug")
    group.addoption(
        CONFORMANCE_OPTION, action="store", default=None, metavar="NAME[,NAME]",
        help="run geplug's product conformance suite on these installed products "
             "('all' = every installed product)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "product_capability(capability, value=True): parametrise `product` only over products "
        "supporting value of the dotted capability",
    )
    config.addinivalue_line(
        "markers",
        "requires_products(*names): skip unless every named product is installed",
    )
    option = config.getoption(CONFORMANCE_OPTION, None)
    if option:
        from geplug.testing import conformance

        problem = _unknown_conformance_names(_split_names(str(option)))
        if problem:
            raise pytest.UsageError(f"{CONFORMANCE_OPTION}={option}: {problem}")

        path = str(conformance.__file__)
        if path not in config.args:
            config.args.append(path)


def _split_names(option: str) -> list[str]:
    """``NAME[,NAME]`` -> names; ``all`` -> [] (every installed product)."""
    if option.strip() == "all":
        return []
    return [n.strip() for n in option.split(",") if n.strip()]


def _unknown_conformance_names(names: list[str]) -> str:
    """Why some of ``names`` cannot be conformance-tested ("" when all are installed)."""
    from geplug.errors import UnknownProductError

    registry = installed_registry()
    for name in names:
        try:
            registry.get(name)
        except UnknownProductError as exc:
            listing = f" (installed products: {', '.join(registry.names())})"
            return f"{exc}{listing if exc.suggestions else ''}; name installed products or 'all'"
    return ""


def _conformance_names(metafunc: pytest.Metafunc) -> list[str] | None:
    option = metafunc.config.getoption(CONFORMANCE_OPTION, None)
    if option and option != "all":
        return _split_names(str(option))
    declared = getattr(metafunc.module, CONFORMANCE_ATTR, None)
    if not declared:
        return None
    names = [declared] if isinstance(declared, str) else [str(n) for n in declared]
    problem = _unknown_conformance_names(names)
    if problem:
        raise pytest.Collector.CollectError(
            f"{metafunc.module.__name__}.{CONFORMANCE_ATTR} = {declared!r}: {problem}")
    return names


@functools.lru_cache(maxsize=256)
def _uninstalled_distribution(directory: Path, rootdir: Path) -> str | None:
    """The distribution whose source tree holds ``directory``, when it is not installed."""
    from importlib import metadata

    for folder in (directory, *directory.parents):
        if folder == rootdir or rootdir not in folder.parents:
            return None
        project = folder / "pyproject.toml"
        if project.is_file():
            try:
                if sys.version_info >= (3, 11):
                    import tomllib
                else:  # pragma: no cover - 3.10
                    import tomli as tomllib
                name = tomllib.loads(project.read_text(encoding="utf-8"))["project"]["name"]
                metadata.distribution(name)
            except metadata.PackageNotFoundError:
                return str(name)
            except Exception:  # not a readable project file: leave tests alone
                return None
            return None
    return None


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Leave out the tests (and conftest files) of plugin packages that are not installed."""
    path = Path(str(collection_path)).resolve()
    directory = path if path.is_dir() else path.parent
    missing = _uninstalled_distribution(directory, Path(str(config.rootpath)).resolve())
    if missing is None:
        return None
    _left_out.setdefault(missing, str(directory))
    return True


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip tests marked ``requires_products`` whose products are not all installed."""
    for marker in item.iter_markers("requires_products"):
        registry = installed_registry()
        missing = [name for name in marker.args if name not in registry]
        if missing:
            pytest.skip(f"product(s) not installed in this environment: {', '.join(missing)}")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for dist, where in sorted(_left_out.items()):
        terminalreporter.write_line(
            f"geplug: not collected, distribution {dist!r} is not installed: {where}")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "conformance_product" in metafunc.fixturenames:
        names = _conformance_names(metafunc)
        if names is None:
            names = [p.name for p in installed_products()]
        if not names:
            metafunc.parametrize("conformance_product", [pytest.param(
                None, marks=pytest.mark.skip(reason="no product plugin installed"))])
        else:
            metafunc.parametrize("conformance_product", names, ids=names, indirect=True)
    if "product" not in metafunc.fixturenames:
        return
    products = installed_products()
    for marker in metafunc.definition.iter_markers("product_capability"):
        capability = marker.args[0]
        value = marker.args[1] if len(marker.args) > 1 else marker.kwargs.get("value", True)
        products = [p for p in products if p.supports(capability, value)]
    if not products:
        metafunc.parametrize(
            "product",
            [pytest.param(None, marks=pytest.mark.skip(reason="no matching product installed"))],
        )
        return
    metafunc.parametrize("product", products, ids=[p.name for p in products])


@pytest.fixture
def conformance_product(request: pytest.FixtureRequest) -> Product:
    """The product under conformance test (an error, not a skip, when it is not installed)."""
    return installed_registry().get(request.param)


@pytest.fixture(scope="session")
def product_registry() -> ProductRegistry:
    """The installed products, loaded once per test session (warnings muted)."""
    return installed_registry()


@pytest.fixture
def fresh_manager() -> Iterator[PluginManager]:
    """A newly loaded plugin manager, also the process-wide one for this test."""
    from geplug.plugin import PluginManager, reset_manager

    manager = PluginManager().load()
    reset_manager(manager)
    yield manager
    reset_manager(None)


@pytest.fixture
def fake_distribution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., Path]]:
    """``make(name, version=..., entry_points={...}, files={...}, path=None) -> root``.

    Each call writes one distribution (see :func:`geplug.testing.fakedist.write_distribution`)
    in its own directory and prepends it to ``sys.path``; ``path`` adds an existing source
    directory too (to "install" a package from a checkout). Modules imported from those
    directories are removed from ``sys.modules`` after the test.
    """
    from geplug.testing.fakedist import write_distribution

    roots: list[str] = []
    before = set(sys.modules)

    def make(name: str, *, path: str | Path | None = None, **kwargs: object) -> Path:
        root = write_distribution(tmp_path / f"site-{len(roots)}", name, **kwargs)  # type: ignore[arg-type]
        for entry in ([str(path)] if path is not None else []) + [str(root)]:
            monkeypatch.syspath_prepend(entry)
            roots.append(entry)
        importlib.invalidate_caches()
        return root

    yield make
    for mod_name in set(sys.modules) - before:
        module = sys.modules.get(mod_name)
        origin = str(getattr(module, "__file__", "") or "")
        if any(origin.startswith(r) for r in roots):
            del sys.modules[mod_name]
    importlib.invalidate_caches()
