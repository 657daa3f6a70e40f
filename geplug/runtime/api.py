"""``initialize_system`` / ``shutdown_system``: the seed's TF1 API, as plain Python.

The real ``initialize_system`` initialises GE (and HCCL) once per process with the options of
its session (options.md §15.1). geplug checks the configuration against the product first and
refuses with every problem at once, then asks the backends through ``geplug_init_system``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from typing import Any

from geplug.errors import (
    BackendError,
    ConfigError,
    ConfigWarning,
    GeplugError,
    NotInitializedError,
    ProductNotNamedError,
    RankTableError,
)
from geplug.runtime.system import System

__all__ = ["current_system", "initialize_system", "open_device", "shutdown_system"]

_current: list[System] = []


def initialize_system(
    product: Any = None,
    config: Any = None,
    *,
    backend: str | None = None,
    manager: Any = None,
    env: Mapping[str, str] | None = None,
) -> System:
    """Check ``config`` for ``product``, pick a backend, and return the running :class:`System`.

    The TF1 API: products without it (``runtime.initialize_system = false``) are refused;
    :func:`open_device` opens them.

    ``product``: a product name, SoC version string or :class:`Product` (default: the
    config's ``soc_version``, else the only installed product). ``config``: a
    :class:`SessionConfig`, a mapping of option names, a path to a TOML file, or ``None``.
    ``backend``: the plugin name of the backend to use (strict), or ``None`` to take the first
    that accepts. ``env``: the environment to read (default ``os.environ``).

    Raises :class:`ConfigError` with every problem when the configuration (or the product)
    does not allow it (:class:`ProductNotNamedError` when no product is named and several are
    installed; when RANK_TABLE_FILE names a bad table, the :class:`RankTableError` is its
    ``__cause__``, so ``except ConfigError as e: isinstance(e.__cause__, RankTableError)``
    tells rank-table problems apart), and :class:`BackendError` naming every backend asked
    and why it passed. Each warning of the check is issued as a
    :class:`~geplug.errors.ConfigWarning` (option, value, hint), once. The returned
    system is also a context manager that shuts itself down.
    """
    return _open(product, config, backend=backend, manager=manager, env=env,
                 for_initialize_system=True, api="initialize_system")


def open_device(
    product: Any = None,
    config: Any = None,
    *,
    device_id: int | None = None,
    backend: str | None = None,
    manager: Any = None,
    env: Mapping[str, str] | None = None,
) -> System:
    """Open a simulated device for the ATC / ACL path (``aclrtSetDevice``), on any product.

    The same :class:`System` as :func:`initialize_system` (a context manager that shuts
    itself down), with every rule of the configuration check applied except TF
    ``initialize_system`` support - so it serves the inference products too (``atlas_infer``,
    ``atlas_200i_a2``), which :func:`initialize_system` refuses. ``device_id``: the device to
    open (default: the rank table, else ``ASCEND_DEVICE_ID``, else ``DEVICE_ID``, else 0).
    The other arguments and the errors raised are those of :func:`initialize_system`::

        with geplug.open_device(product="atlas_infer",
                                config={"precision_mode": "force_fp16"}) as device:
            outputs = device.compile("model.onnx").run({"x": x})
    """
    if device_id is not None and (isinstance(device_id, bool) or not isinstance(device_id, int)
                                  or device_id < 0):
        from geplug.errors import UsageError

        raise UsageError(f"open_device(device_id={device_id!r}): give an integer >= 0",
                         argument="device_id")
    return _open(product, config, backend=backend, manager=manager, env=env,
                 for_initialize_system=False, api="open_device", device_id=device_id)


def _open(
    product: Any,
    config: Any,
    *,
    backend: str | None,
    manager: Any,
    env: Mapping[str, str] | None,
    for_initialize_system: bool,
    api: str,
    device_id: int | None = None,
) -> System:
    """The shared body of :func:`initialize_system` and :func:`open_device`."""
    import attrs

    from geplug.config import check, resolve
    from geplug.config.parse import parse_source
    from geplug.config.problems import unique
    from geplug.config.rank import read_rank_info
    from geplug.plugin import get_manager
    from geplug.products.schema import Product

    manager = manager if manager is not None else get_manager()
    env = dict(os.environ if env is None else env)
    cfg, problems = parse_source(config)
    prod = product if isinstance(product, Product) else _product(manager, product, cfg, api)
    soc = product if isinstance(product, str) and product in prod.soc_versions else None
    problems = unique([*problems, *check(cfg, prod, env=env,
                                         for_initialize_system=for_initialize_system,
                                         soc=soc)])
    if any(p.severity == "error" for p in problems):
        raise ConfigError(problems, source=f"{api}(product={prod.name!r})"
                          ) from _rank_table_error(env, prod)
    for problem in problems:
        warnings.warn(ConfigWarning(problem), stacklevel=3)
    resolved = resolve(cfg, prod, env=env, soc=soc)
    if device_id is not None:
        resolved = attrs.evolve(resolved, device_id=device_id)
    rank = resolved.rank if resolved.rank is not None else read_rank_info(env, prod)
    system = System(product=prod, config=resolved, manager=manager, rank=rank)
    if backend is not None and backend not in manager.implementers("geplug_init_system"):
        raise BackendError(manager.backend_hint(backend) or (
            f"backend {backend!r} is not installed (backends: "
            f"{', '.join(manager.implementers('geplug_init_system')) or 'none'}); "
            "install it or call initialize_system without backend="),
            reasons={backend: "not installed"},
        )
    runtime, served_by = manager.call_first("geplug_init_system", _runtime_problem,
                                            only=backend, failed=system.pass_reasons,
                                            system=system)
    if runtime is None:
        for name in manager.implementers("geplug_init_system"):
            if backend is None or name == backend:
                system.pass_reasons.setdefault(name, "returned None")
        asked = system.pass_reasons or {"(none)": "no backend plugin is loaded"}
        detail = "; ".join(f"{name}: {why}" for name, why in asked.items())
        raise BackendError(
            f"no backend serves product {prod.name!r} ({detail}); {manager.backend_hint()}",
            reasons=asked,
        )
    system.runtime = runtime
    system.backend = served_by
    manager.open_systems.append(system)
    _current.append(system)
    return system


def _runtime_problem(runtime: Any) -> str:
    """What is wrong with a ``geplug_init_system`` result ("" when it is a runtime)."""
    from geplug.backend import RUNTIME_MEMBERS, missing_members

    missing = missing_members(runtime, RUNTIME_MEMBERS)
    if missing:
        return (f"{type(runtime).__name__}, which lacks {', '.join(missing)} of "
                "geplug.backend.Runtime")
    return ""


def _rank_table_error(env: Mapping[str, str], product: Any) -> RankTableError | None:
    """The :class:`RankTableError` reading the rank table raises (None without one or when it
    reads fine): chained as the cause of initialize_system's ConfigError."""
    from geplug.config.rank import read_rank_info

    if not env.get("RANK_TABLE_FILE"):
        return None
    try:
        read_rank_info(env, product)
    except RankTableError as exc:
        return exc
    except GeplugError:
        return None
    return None


def _product(manager: Any, name: Any, config: Any, api: str = "initialize_system") -> Any:
    """The product ``name`` names, else the config's ``soc_version``, else the only installed
    product (the real stack detects its SoC; geplug cannot guess between several)."""
    from geplug.config.problems import Problem

    registry = manager.products(strict=False)
    name = name or config.soc_version
    if name:
        return registry.get(str(name))
    installed = list(registry)
    if len(installed) == 1:
        return installed[0]
    listing = ", ".join(p.name for p in installed) or "none installed"
    raise ProductNotNamedError([Problem(
        option="product", value=None, severity="error",
        message=f"no product named: {api} needs product=... (or soc_version in the "
                f"config) when {len(installed)} products are installed ({listing})",
        hint=f'e.g. geplug.{api}(product="<name>", config=...)')],
        source=f"{api}()", installed=[p.name for p in installed])


def shutdown_system(system: System | None = None) -> None:
    """Shut down ``system`` (default: the most recently initialised one still open)."""
    if system is None:
        if not _current:
            raise NotInitializedError(
                "shutdown_system() called but no system is initialised; call "
                "geplug.initialize_system() first"
            )
        system = _current[-1]
    system.shutdown()


def current_system() -> System:
    """The most recently initialised open system; raises if none (HCCL needs one)."""
    if not _current:
        raise NotInitializedError(
            "HCCL not initialised: run geplug.initialize_system() first (the real rank "
            "queries also need initialize_system before any collective-communication call)"
        )
    return _current[-1]


def _forget(system: System) -> None:
    if system in _current:
        _current.remove(system)
