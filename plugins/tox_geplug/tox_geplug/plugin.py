"""The tox hooks: ``geplug_products = a, b`` -> one environment per product.

In the project's tox configuration (``[tox]`` of tox.ini, ``[tool.tox]``/tox.toml core)::

    [tox]
    requires = tox-geplug
    geplug_products = atlas_train, atlas_a2, atlas_350

    [testenv]
    deps = pytest
    commands = pytest {posargs}

gives environments ``atlas_train``, ``atlas_a2`` and ``atlas_350`` (``tox -l`` lists them),
each inheriting ``[testenv]`` and holding geplug, one backend (``geplug_backend``, default
``geplug-simulator``) and only that product's plugin; ``GEPLUG_PRODUCTS`` is set to the
product, which geplug's pytest plugin selects. ``geplug_packages`` maps a product or a
distribution name to a requirement or a local directory (relative to the tox root)::

    geplug_packages =
        acme_b9 = ./acme_b9
        geplug-atlas-a2 = geplug-atlas-a2>=0.1

A local directory is built into a wheel once per content hash and reinstalled whenever its
content changed since the environment last installed it (no ``tox -r`` needed).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tox.execute.request import StdinSource
from tox.plugin import impl
from tox.tox_env.errors import Fail

from tox_geplug.sources import build_wheel, distribution_name, requires

if TYPE_CHECKING:
    from tox.config.sets import ConfigSet
    from tox.session.state import State
    from tox.tox_env.api import ToxEnv

__all__ = [
    "PRODUCT_DISTRIBUTIONS",
    "tox_add_core_config",
    "tox_before_run_commands",
    "tox_extend_envs",
    "tox_on_install",
]

PRODUCTS_KEY, PACKAGES_KEY, BACKEND_KEY = "geplug_products", "geplug_packages", "geplug_backend"
CORE = "geplug"
DEFAULT_BACKEND = "geplug-simulator"
ENV_VAR = "GEPLUG_PRODUCTS"
STATE_FILE = ".tox-geplug.json"
WHEELHOUSE = ".tox-geplug-wheels"

PRODUCT_DISTRIBUTIONS: Mapping[str, str] = {
    "atlas_train": "geplug-atlas-train",
    "atlas_a2": "geplug-atlas-a2",
    "atlas_a3": "geplug-atlas-a3",
    "atlas_350": "geplug-atlas-350",
    "atlas_infer": "geplug-atlas-infer",
    "atlas_200i_a2": "geplug-atlas-infer",
    "example_card": "geplug-example-card",
}
"""The distribution declaring each of geplug's own products (any other product ``p``:
``geplug-p`` with ``-`` for ``_``, unless ``geplug_packages`` names it)."""


class _Holder:
    """The core configuration, kept between tox's hooks (tox has one per run)."""

    core: ConfigSet | None = None


_held = _Holder()


@impl
def tox_add_core_config(core_conf: ConfigSet, state: State) -> None:
    """Declare ``geplug_products``, ``geplug_packages`` and ``geplug_backend``."""
    core_conf.add_config(keys=[PRODUCTS_KEY], of_type=list[str], default=[],
                         desc="simulated products: one tox environment per product")
    core_conf.add_config(keys=[PACKAGES_KEY], of_type=dict[str, str], default={},
                         desc="product or distribution -> requirement or local directory")
    core_conf.add_config(keys=[BACKEND_KEY], of_type=str, default=DEFAULT_BACKEND,
                         desc="the geplug backend every product environment installs")
    _held.core = core_conf
    env_list = core_conf["env_list"]  # a mutable EnvList: `tox -l` and plain `tox` see them
    for name in products():
        if name not in env_list.envs:
            env_list.envs.append(name)


class _ProductEnvs:
    """The product names, read when tox first lists its environments (after core config)."""

    def __iter__(self) -> Iterator[str]:
        return iter(products())


@impl
def tox_extend_envs() -> _ProductEnvs:
    """One environment name per entry of ``geplug_products`` (read lazily)."""
    return _ProductEnvs()


def products() -> list[str]:
    """``geplug_products`` of this run ([] before the core configuration is loaded)."""
    if _held.core is None:
        return []
    names = _held.core[PRODUCTS_KEY]
    return list(dict.fromkeys(n.strip() for n in names if n.strip()))


def _local_dir(spec: str, root: Path) -> Path | None:
    """``spec`` as a local project directory, or None when it is a requirement."""
    if not spec.startswith((".", "/", "~")) and "/" not in spec and "\\" not in spec:
        return None
    path = (root / Path(spec).expanduser()).resolve()
    if not (path / "pyproject.toml").is_file():
        raise Fail(f"{PACKAGES_KEY}: {spec!r} is not a project directory (no pyproject.toml "
                   f"in {path}); name a directory holding a plugin, or a requirement")
    return path


def _plan(product: str, core: ConfigSet) -> tuple[list[str], dict[str, Path]]:
    """(what to install: requirements and local distribution names; local sources by
    distribution name, every local entry of ``geplug_packages``, so dependencies between
    local plugins resolve to the local copies)."""
    root = Path(core["tox_root"])
    packages: dict[str, str] = dict(core[PACKAGES_KEY])
    local: dict[str, Path] = {}
    for spec in packages.values():
        path = _local_dir(spec, root)
        if path is not None:
            local[distribution_name(path)] = path
    backend = str(core[BACKEND_KEY])
    product_dist = PRODUCT_DISTRIBUTIONS.get(product, f"geplug-{product.replace('_', '-')}")
    specs = [packages.get(CORE, CORE), packages.get(backend, backend),
             packages.get(product, packages.get(product_dist, product_dist))]
    names = []
    for spec in specs:
        path = _local_dir(spec, root)
        names.append(distribution_name(path) if path is not None else spec)
    return list(dict.fromkeys(names)), local


def _run(tox_env: ToxEnv, cmd: list[str], run_id: str) -> int:
    outcome = tox_env.execute(cmd, stdin=StdinSource.OFF, run_id=run_id)
    return int(outcome.exit_code or 0)


def _install(tox_env: ToxEnv, product: str, core: ConfigSet) -> None:
    """Install geplug, the backend and ``product``'s plugin; rebuild changed local ones."""
    requirements, local = _plan(product, core)
    python = str(tox_env.env_python())  # type: ignore[attr-defined]
    wheelhouse = Path(core["work_dir"]) / WHEELHOUSE
    wheels: dict[str, tuple[Path, str]] = {}
    pending = [r for r in requirements if r in local]
    while pending:  # local sources and the local sources they depend on
        name = pending.pop()
        if name in wheels:
            continue
        try:
            wheels[name] = build_wheel(local[name], wheelhouse, python,
                                       lambda cmd: _run(tox_env, list(cmd), "geplug-wheel"))
        except (RuntimeError, ValueError) as exc:
            raise Fail(str(exc)) from None
        pending += [d for d in requires(wheels[name][0]) if d in local and d not in wheels]
    state_path = Path(tox_env.env_dir) / STATE_FILE
    try:
        old = json.loads(state_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        old = {}
    new = {"product": product, "requirements": requirements,
           "local": {name: digest for name, (_, digest) in sorted(wheels.items())}}
    if old == new:
        return
    links = [arg for _, (wheel, _) in sorted(wheels.items())
             for arg in ("--find-links", str(wheel.parent))]
    remote = [r for r in requirements if r not in wheels]
    files = [str(wheel) for _, (wheel, _) in sorted(wheels.items())]  # never an index's copy
    status = _run(tox_env, [python, "-m", "pip", "install", "--quiet", *links, *remote, *files],
                  "geplug-products")
    changed = [str(wheel) for name, (wheel, digest) in sorted(wheels.items())
               if old.get("local", {}).get(name) not in (None, digest)]
    if status == 0 and changed:  # same version, new content: pip alone would keep the old
        status = _run(tox_env, [python, "-m", "pip", "install", "--quiet", "--force-reinstall",
                                "--no-deps", *changed], "geplug-reinstall")
    if status != 0:
        raise Fail(f"installing {', '.join(requirements)} for product {product!r} failed "
                   f"(pip exit status {status}); see the output above")
    state_path.write_text(json.dumps(new, indent=2), encoding="utf-8")


@impl
def tox_on_install(tox_env: ToxEnv, arguments: Any, section: str, of_type: str) -> None:
    """Before a product environment's ``deps``: install its geplug packages."""
    core = _held.core
    if of_type != "deps" or core is None or tox_env.name not in products():
        return
    _install(tox_env, tox_env.name, core)


@impl
def tox_before_run_commands(tox_env: ToxEnv) -> None:
    """Point geplug's pytest plugin at the environment's product (``GEPLUG_PRODUCTS``)."""
    if tox_env.name in products():
        tox_env.conf["set_env"].update({ENV_VAR: tox_env.name}, override=True)
