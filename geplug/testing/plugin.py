"""geplug's pytest plugin: prefixed fixtures and markers over the installed products.

Opt-in: installing geplug changes nothing in another project's test run. Turn it on with
``pytest -p geplug.testing``, ``pytest_plugins = ["geplug.testing"]`` in a root
``conftest.py``, or the ini line ``addopts = "-p geplug.testing"``. Then:

- ``geplug_product``: parametrised over the selected installed products (tests run once per
  product; skipped when none is installed). Test ids are the product names.
- ``--geplug-products=NAME[,NAME]`` (or the environment variable ``GEPLUG_PRODUCTS``): select
  products for this run - single products even when one plugin package declares two. Unknown
  or uninstalled names are a usage error.
- ``@pytest.mark.geplug_product_capability("profiling.aic_metrics", "MemoryAccess")``: limits
  the ``geplug_product`` parametrisation to products supporting that value (markers combine).
- ``@pytest.mark.geplug_requires_products("atlas_a2", ...)`` (also as a module's
  ``pytestmark``): skip unless every named product is installed and selected.
- ``geplug_product_registry``: the installed products (loaded once per session; read-only).
- ``geplug_fresh_manager``: a freshly loaded :class:`~geplug.plugin.PluginManager`, installed
  as the process-wide manager for the test and dropped afterwards.
- ``geplug_fake_distribution``: write a fake installed distribution and put it on ``sys.path``.
- :func:`require_product`: the named product, or a skip when it is not installed/selected.
- Tests inside a plugin package directory (one with its own ``pyproject.toml`` below the
  rootdir) are not collected when that distribution is not installed (a summary line says so).
- ``geplug_conformance_product`` and ``--geplug-conformance=NAME[,NAME]``: the conformance
  suite of :mod:`geplug.testing.conformance` over the named products.
- ini ``geplug_marker_aliases = true``: also honour the unprefixed marker names of geplug 0.1
  (``requires_products``, ``product_capability``) - a transition aid.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import pytest

from geplug.testing.installed import installed_products, installed_registry

if TYPE_CHECKING:
    from geplug.plugin import PluginManager
    from geplug.products import Product, ProductRegistry

__all__ = ["installed_products", "installed_registry", "require_product", "selected_products"]

CONFORMANCE_OPTION = "--geplug-conformance"
BACKEND_OPTION = "--geplug-backend-conformance"
BACKEND_ATTR = "GEPLUG_BACKEND_CONFORMANCE"
"""Module-level name a backend's test module sets to the backend(s) under test."""
PRODUCTS_OPTION = "--geplug-products"
PRODUCTS_ENV = "GEPLUG_PRODUCTS"
ALIASES_INI = "geplug_marker_aliases"
CONFORMANCE_ATTR = "GEPLUG_CONFORMANCE"
"""Module-level name a vendor's test module sets to the product(s) under test."""

REQUIRES_MARKER = "geplug_requires_products"
CAPABILITY_MARKER = "geplug_product_capability"
_ALIASES = {REQUIRES_MARKER: "requires_products", CAPABILITY_MARKER: "product_capability"}

_left_out_key = pytest.StashKey[dict[str, str]]()
"""Distribution -> first directory left out because the distribution is not installed."""


class _Active:
    """The selection of the pytest run in progress (``None``: every installed product)."""

    selection: tuple[str, ...] | None = None


_previous_key = pytest.StashKey["tuple[str, ...] | None"]()
"""The selection before this run (restored at unconfigure: pytester nests runs)."""


def _split_names(option: str) -> list[str]:
    """``NAME[,NAME]`` -> names; ``all`` -> [] (every installed product)."""
    if option.strip() == "all":
        return []
    return [n.strip() for n in option.split(",") if n.strip()]


def selected_products() -> list[Product]:
    """The installed products this run is about (``--geplug-products`` / ``GEPLUG_PRODUCTS``)."""
    products = installed_products()
    if _Active.selection is None:
        return products
    return [p for p in products if p.name in _Active.selection]


def _not_selected(name: str) -> bool:
    return _Active.selection is not None and name not in _Active.selection


def _skip_here(reason: str) -> NoReturn:
    """Skip, reported at the test's own location (not at this plugin's line)."""
    raise pytest.skip.Exception(reason, _use_item_location=True)


def require_product(name: str) -> Product:
    """The installed product ``name``; skips the calling test when it is not installed (or
    not among the products selected for this run)."""
    registry = installed_registry()
    if name not in registry:
        _skip_here(f"product {name!r} is not installed in this environment")
    if _not_selected(name):
        _skip_here(f"product {name!r} is not selected ({PRODUCTS_OPTION} / {PRODUCTS_ENV})")
    return registry.get(name)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("geplug")
    group.addoption(
        CONFORMANCE_OPTION, action="store", default=None, metavar="NAME[,NAME]",
        help="run geplug's product conformance suite on these installed products "
             "('all' = every selected product)",
    )
    group.addoption(
        BACKEND_OPTION, action="store", default=None, metavar="NAME[,NAME]",
        help="run geplug's backend conformance suite for these installed backends (plugin "
             "names, e.g. simulator) on every selected product",
    )
    group.addoption(
        PRODUCTS_OPTION, action="store", default=None, metavar="NAME[,NAME]",
        help=f"run product tests only for these installed products (default: the environment "
             f"variable {PRODUCTS_ENV}, else every installed product)",
    )
    parser.addini(ALIASES_INI, type="bool", default=False,
                  help="also honour geplug 0.1's unprefixed marker names (requires_products, "
                       "product_capability)")


def _read_selection(config: pytest.Config) -> tuple[str, ...] | None:
    option = config.getoption(PRODUCTS_OPTION, None)
    source = PRODUCTS_OPTION
    if not option:
        option, source = os.environ.get(PRODUCTS_ENV, ""), PRODUCTS_ENV
    if not option.strip() or option.strip() == "all":
        return None
    names = _split_names(option)
    problem = _unknown_names(names)
    if problem:
        raise pytest.UsageError(f"{source}={option}: {problem}")
    return tuple(names)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{CAPABILITY_MARKER}(capability, value=True): parametrise `geplug_product` only over "
        "products supporting value of the dotted capability",
    )
    config.addinivalue_line(
        "markers",
        f"{REQUIRES_MARKER}(*names): skip unless every named product is installed and selected",
    )
    if config.getini(ALIASES_INI):
        for prefixed, alias in _ALIASES.items():
            config.addinivalue_line("markers", f"{alias}: alias of {prefixed} (geplug 0.1 name)")
    config.stash[_left_out_key] = {}
    config.stash[_previous_key] = _Active.selection
    _Active.selection = _read_selection(config)
    option = config.getoption(CONFORMANCE_OPTION, None)
    if option:
        from geplug.testing import conformance

        problem = _unknown_names(_split_names(str(option)))
        if problem:
            raise pytest.UsageError(f"{CONFORMANCE_OPTION}={option}: {problem}")

        path = str(conformance.__file__)
        if config.args_source == pytest.Config.ArgsSource.INVOCATION_DIR:
            config.args[:] = [path]  # no paths given: the suite alone, not the whole folder
        elif path not in config.args:
            config.args.append(path)
    backends = config.getoption(BACKEND_OPTION, None)
    if backends:
        from geplug.testing import backend_conformance

        problem = _unknown_backends(_split_names(str(backends)))
        if problem:
            raise pytest.UsageError(f"{BACKEND_OPTION}={backends}: {problem}")
        path = str(backend_conformance.__file__)
        if path not in config.args:
            config.args.append(path)


def _unknown_backends(names: list[str]) -> str:
    """Why some of ``names`` are not loaded backends ("" when all are)."""
    import warnings

    from geplug.plugin import PluginManager

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        backends = PluginManager().load().implementers("geplug_init_system")
    for name in names:
        if name not in backends:
            return (f"{name!r} is not an installed backend (backends: "
                    f"{', '.join(backends) or 'none'}); install it or name one of those")
    if not names:
        return "name a backend (e.g. simulator)"
    return ""

def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each conformance check once per product: a test module that imports the suite and
    ``--geplug-conformance`` (which collects the suite's own module) would run it twice."""
    seen: set[tuple[object, str]] = set()
    keep: list[pytest.Item] = []
    for item in items:
        function = getattr(item, "function", None)
        if getattr(function, "__module__", "") == "geplug.testing.conformance":
            key = (function, getattr(getattr(item, "callspec", None), "id", ""))
            if key in seen:
                continue
            seen.add(key)
        keep.append(item)
    if len(keep) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in keep])
        items[:] = keep


def pytest_unconfigure(config: pytest.Config) -> None:
    _Active.selection = config.stash.get(_previous_key, None)


def _markers(node: pytest.Item, name: str) -> list[pytest.Mark]:
    """Markers ``name`` of a node, plus those of its unprefixed alias where turned on."""
    found = list(node.iter_markers(name))
    if node.config.getini(ALIASES_INI):
        found += list(node.iter_markers(_ALIASES[name]))
    return found


def _unknown_names(names: list[str]) -> str:
    """Why some of ``names`` are not installed products ("" when all are installed)."""
    from geplug.errors import UnknownProductError

    registry = installed_registry()
    for name in names:
        try:
            registry.get(name)
        except UnknownProductError as exc:
            listing = f" (installed products: {', '.join(registry.names()) or 'none'})"
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
    problem = _unknown_names(names)
    if problem:
        raise pytest.Collector.CollectError(
            f"{metafunc.module.__name__}.{CONFORMANCE_ATTR} = {declared!r}: {problem}")
    return names


@functools.lru_cache(maxsize=256)
def _uninstalled_distribution(directory: Path, rootdir: Path) -> str | None:
    """The distribution whose source tree (below ``rootdir``) holds ``directory``, when it is
    not installed. Only the folders between ``directory`` and ``rootdir`` are read."""
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
    config.stash.setdefault(_left_out_key, {}).setdefault(missing, str(directory))
    return True


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip tests marked ``geplug_requires_products`` whose products are not all installed
    (or not all selected)."""
    for marker in _markers(item, REQUIRES_MARKER):
        registry = installed_registry()
        missing = [name for name in marker.args if name not in registry]
        if missing:
            _skip_here(f"product(s) not installed in this environment: {', '.join(missing)}")
        unselected = [name for name in marker.args if _not_selected(name)]
        if unselected:
            _skip_here(f"product(s) not selected ({PRODUCTS_OPTION} / {PRODUCTS_ENV}): "
                        f"{', '.join(unselected)}")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    left_out = terminalreporter.config.stash.get(_left_out_key, {})
    for dist, where in sorted(left_out.items()):
        terminalreporter.write_line(
            f"geplug: not collected, distribution {dist!r} is not installed: {where}")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "geplug_conformance_product" in metafunc.fixturenames:
        names = _conformance_names(metafunc)
        if names is None:
            names = [p.name for p in selected_products()]
        if not names:
            metafunc.parametrize("geplug_conformance_product", [pytest.param(
                None, marks=pytest.mark.skip(reason="no product plugin installed"))])
        else:
            metafunc.parametrize("geplug_conformance_product", names, ids=names, indirect=True)
    if "geplug_backend_case" in metafunc.fixturenames:
        _parametrize_backend(metafunc)
    if "geplug_product" not in metafunc.fixturenames:
        return
    products = selected_products()
    for marker in _markers(metafunc.definition, CAPABILITY_MARKER):
        capability = marker.args[0]
        value = marker.args[1] if len(marker.args) > 1 else marker.kwargs.get("value", True)
        products = [p for p in products if p.supports(capability, value)]
    if not products:
        metafunc.parametrize(
            "geplug_product",
            [pytest.param(None, marks=pytest.mark.skip(reason="no matching product installed"))],
        )
        return
    metafunc.parametrize("geplug_product", products, ids=[p.name for p in products])


def _parametrize_backend(metafunc: pytest.Metafunc) -> None:
    """``geplug_backend_case`` = (backend, product) over the backends named by the option or
    the module's ``GEPLUG_BACKEND_CONFORMANCE`` and every selected product."""
    option = metafunc.config.getoption(BACKEND_OPTION, None)
    declared = getattr(metafunc.module, BACKEND_ATTR, None)
    if option:
        backends = _split_names(str(option))
    elif declared:
        backends = [declared] if isinstance(declared, str) else [str(n) for n in declared]
        problem = _unknown_backends(backends)
        if problem:
            raise pytest.Collector.CollectError(
                f"{metafunc.module.__name__}.{BACKEND_ATTR} = {declared!r}: {problem}")
    else:
        backends = []
    cases = [(b, p.name) for b in backends for p in selected_products()]
    if not cases:
        reason = ("no backend named (--geplug-backend-conformance=NAME)" if not backends
                  else "no product plugin installed")
        metafunc.parametrize("geplug_backend_case", [pytest.param(
            None, marks=pytest.mark.skip(reason=reason))])
        return
    metafunc.parametrize("geplug_backend_case", cases, ids=[f"{b}-{p}" for b, p in cases])


@pytest.fixture
def geplug_conformance_product(request: pytest.FixtureRequest) -> Product:
    """The product under conformance test (an error, not a skip, when it is not installed)."""
    return installed_registry().get(request.param)


@pytest.fixture(scope="session")
def geplug_product_registry() -> ProductRegistry:
    """The installed products, loaded once per test session (warnings muted)."""
    return installed_registry()


@pytest.fixture
def geplug_fresh_manager() -> Iterator[PluginManager]:
    """A newly loaded plugin manager, also the process-wide one for this test."""
    from geplug.plugin import PluginManager, reset_manager

    manager = PluginManager().load()
    reset_manager(manager)
    yield manager
    reset_manager(None)


@pytest.fixture
def geplug_fake_distribution(
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
