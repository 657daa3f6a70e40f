"""The plugin manager: loads built-ins then entry points, isolates broken plugins, reports.

Policy (DESIGN.md "Plugin loading"): built-in plugins first, then the ``geplug`` entry points;
a plugin that fails to import, names a hook that does not exist, was written for an
unsupported plugin API version, raises in a hook or declares an invalid ``capabilities.toml``
is skipped with a :class:`PluginSkippedWarning` naming it, its distribution and the reason,
and everything else keeps working. ``GEPLUG_DISABLE_PLUGINS=name,name`` blocks plugins. Two
plugins declaring one product raise a single :class:`PluginConflictError` naming both.
"""

from __future__ import annotations

import difflib
import importlib
import os
import warnings
from collections.abc import Callable, Iterable
from importlib import metadata
from typing import Any

import attrs
import pluggy

from geplug import hookspecs
from geplug.errors import CapabilityError, GeplugError, PluginConflictError
from geplug.products.assemble import assemble, find_conflict
from geplug.products.load import Declaration
from geplug.products.query import ProductRegistry

__all__ = [
    "BUILTIN_PLUGINS",
    "DISABLE_ENV",
    "PluginManager",
    "PluginRecord",
    "PluginSkippedWarning",
]

DISABLE_ENV = "GEPLUG_DISABLE_PLUGINS"
ENTRY_POINT_GROUP = "geplug"
BUILTIN_PLUGINS: tuple[tuple[str, str], ...] = (
    ("dump", "geplug.dump.plugin"),
    ("profiling", "geplug.profiling.plugin"),
)
"""(name, module) of the core's own plugins, registered before any entry point."""
_HOOK_NAMES: tuple[str, ...] = tuple(sorted(n for n in dir(hookspecs) if n.startswith("geplug_")))


class PluginSkippedWarning(UserWarning):
    """A plugin was skipped; the message names the plugin, its distribution and why."""


@attrs.frozen(kw_only=True)
class PluginRecord:
    """One line of the load report."""

    name: str
    distribution: str = ""
    version: str = ""
    origin: str = "entry point"
    """``builtin``, ``entry point`` or ``registered`` (added from Python)."""
    status: str = "loaded"
    """``loaded``, ``skipped`` or ``disabled``."""
    reason: str = ""
    products: tuple[str, ...] = ()
    hooks: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready mapping of this record."""
        return attrs.asdict(self)

    @property
    def provider(self) -> str:
        """``distribution version`` (or the plugin name when it has no distribution)."""
        if self.distribution:
            return f"{self.distribution} {self.version}".strip()
        return self.name


class PluginManager:
    """A pluggy manager for the ``geplug`` hooks plus geplug's load policy and report."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self._records: dict[str, PluginRecord] = {}
        self._registry: ProductRegistry | None = None
        self._declared: dict[str, tuple[str, ...]] = {}
        self.conflict: PluginConflictError | None = None
        """Set by :meth:`report` when two plugins declare one product."""

    # -- loading -------------------------------------------------------------------------

    @property
    def hook(self) -> Any:
        """The pluggy hook relay (``manager.hook.geplug_dump(event=...)``)."""
        return self.pm.hook

    def load(self, *, builtins: bool = True, entry_points: bool = True) -> PluginManager:
        """Register the built-in plugins, then every ``geplug`` entry point; returns self."""
        disabled = self.disabled_names()
        if builtins:
            for name, module in BUILTIN_PLUGINS:
                self._load_module(name, module, origin="builtin", disabled=disabled)
        if entry_points:
            for ep in sorted(_entry_points(), key=lambda e: e.name):
                dist = getattr(ep, "dist", None)
                self._load_module(
                    ep.name,
                    ep.value,
                    origin="entry point",
                    disabled=disabled,
                    distribution=dist.metadata["Name"] if dist is not None else "",
                    version=dist.version if dist is not None else "",
                    loader=ep.load,
                )
        return self

    @staticmethod
    def disabled_names() -> frozenset[str]:
        """Plugin names listed in ``GEPLUG_DISABLE_PLUGINS`` (comma separated)."""
        raw = os.environ.get(DISABLE_ENV, "")
        return frozenset(n.strip() for n in raw.split(",") if n.strip())

    def register(
        self,
        plugin: object,
        name: str,
        *,
        distribution: str = "",
        version: str = "",
        origin: str = "registered",
    ) -> bool:
        """Register ``plugin`` (a module or object with hook implementations) under ``name``.

        Returns False (and warns, and records the reason) when the plugin is refused.
        """
        if name in self.disabled_names():
            self._records[name] = PluginRecord(
                name=name, distribution=distribution, version=version, origin=origin,
                status="disabled", reason=f"listed in {DISABLE_ENV}",
            )
            return False
        first = self._records.get(name)
        if first is not None and first.status == "loaded":
            if first.distribution == distribution:
                self._skip(
                    PluginRecord(name=f"{name}#{len(self._records)}", distribution=distribution,
                                 version=version, origin=origin),
                    f"a plugin named {name!r} is already loaded ({first.provider})",
                )
                return False
            # Same plugin name from another distribution: keep both, named apart, so that a
            # product they both declare is reported as one conflict naming both.
            name = f"{name}[{distribution or origin}]"
        record = PluginRecord(name=name, distribution=distribution, version=version, origin=origin)
        api = getattr(plugin, "GEPLUG_PLUGIN_API", None)
        if type(api) is not int or api not in hookspecs.SUPPORTED_PLUGIN_APIS:
            supported = ", ".join(str(v) for v in sorted(hookspecs.SUPPORTED_PLUGIN_APIS))
            got = "no GEPLUG_PLUGIN_API" if api is None else f"GEPLUG_PLUGIN_API = {api!r}"
            self._skip(record, f"written for an incompatible plugin API ({got}); this geplug "
                       f"supports plugin API {supported}: install a version of the plugin made "
                       "for this geplug, or a geplug that supports it")
            return False
        impl_names = sorted(_hookimpl_names(plugin))
        unknown = [n for n in impl_names if n not in _HOOK_NAMES]
        if unknown:
            close = difflib.get_close_matches(unknown[0], _HOOK_NAMES, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            self._skip(record, f"unknown hook {unknown[0]!r} (misspelled?); {hint}the hooks "
                       "are " + ", ".join(_HOOK_NAMES))
            return False
        try:
            self.pm.register(plugin, name=name)
        except pluggy.PluginValidationError as exc:
            self._skip(record, f"invalid hook implementation: {exc}")
            return False
        except ValueError as exc:
            self._skip(record, str(exc))
            return False
        self._records[name] = attrs.evolve(record, hooks=tuple(impl_names))
        self._registry = None
        return True

    def _load_module(
        self,
        name: str,
        target: str,
        *,
        origin: str,
        disabled: frozenset[str],
        distribution: str = "geplug",
        version: str = "",
        loader: Callable[[], Any] | None = None,
    ) -> None:
        if origin == "builtin":
            version = _core_version()
        record = PluginRecord(name=name, distribution=distribution, version=version, origin=origin)
        if name in disabled:
            self._records[name] = attrs.evolve(
                record, status="disabled", reason=f"listed in {DISABLE_ENV}"
            )
            return
        try:
            module = loader() if loader is not None else importlib.import_module(target)
        except Exception as exc:  # a broken plugin must not break the others
            self._skip(record, f"failed to import {target!r}: {type(exc).__name__}: {exc}")
            return
        self.register(module, name, distribution=distribution, version=version, origin=origin)

    def _skip(self, record: PluginRecord, reason: str) -> None:
        self._records[record.name] = attrs.evolve(record, status="skipped", reason=reason)
        if self.pm.has_plugin(record.name):
            self.pm.unregister(name=record.name)
        self._registry = None
        where = f" (distribution {record.provider})" if record.distribution else ""
        warnings.warn(
            PluginSkippedWarning(f"geplug plugin {record.name!r}{where} skipped: {reason}"),
            stacklevel=3,
        )

    # -- reporting -----------------------------------------------------------------------

    def report(self) -> list[PluginRecord]:
        """Every plugin seen: loaded, skipped or disabled, with the products it declares.

        Never raises: a product conflict is kept in :attr:`conflict` for the caller to show.
        """
        try:
            self.products()
            self.conflict = None
        except PluginConflictError as exc:
            self.conflict = exc
        return [
            attrs.evolve(r, products=self._declared.get(r.name, ()))
            for r in sorted(self._records.values(), key=lambda r: (r.origin != "builtin", r.name))
        ]

    def loaded(self) -> list[str]:
        """Names of the plugins currently registered."""
        return [r.name for r in self._records.values() if r.status == "loaded"]

    # -- products ------------------------------------------------------------------------

    def products(self) -> ProductRegistry:
        """The products declared by the loaded plugins (validated once, then cached).

        A plugin whose declaration is invalid (or whose ``extends`` base is unavailable) is
        skipped with a warning and its products are dropped; the others are kept. Raises
        :class:`PluginConflictError` when two plugins declare one product.
        """
        if self._registry is not None:
            return self._registry
        collected = self._collect_declarations()
        conflict = find_conflict(collected)
        if conflict is not None:
            product, first, second = conflict
            pair = (self._records[first].provider, self._records[second].provider)
            raise PluginConflictError(
                f"product {product!r} is declared by two plugins: {pair[0]} and {pair[1]}; "
                f"uninstall one of them or disable one with {DISABLE_ENV}={first} or "
                f"{DISABLE_ENV}={second}",
                product=product,
                providers=pair,
            )
        providers = {name: record.provider for name, record in self._records.items()}
        while True:
            assembly = assemble(collected, providers)
            if not assembly.failed_plugin:
                break
            self._skip(self._records[assembly.failed_plugin], assembly.reason)
            collected = [(p, d) for p, d in collected if p != assembly.failed_plugin]
        self._declared = dict(assembly.declared)
        self._registry = ProductRegistry(assembly.products)
        return self._registry

    def _collect_declarations(self) -> list[tuple[str, Declaration]]:
        """(plugin name, declaration) from every ``geplug_capabilities``; raisers skipped."""
        collected: list[tuple[str, Declaration]] = []
        for impl in list(self.pm.hook.geplug_capabilities.get_hookimpls()):
            try:
                result: Any = impl.function()
                declarations = list(result or ())
                for decl in declarations:
                    if not isinstance(decl, Declaration):
                        raise TypeError(
                            f"geplug_capabilities returned {type(decl).__name__}, expected "
                            "geplug.products.declare(path) results"
                        )
            except CapabilityError as exc:
                self._skip(self._records[impl.plugin_name], f"invalid capabilities: {exc}")
                continue
            except Exception as exc:  # a broken plugin must not break the others
                self._skip(self._records[impl.plugin_name],
                           f"geplug_capabilities raised {type(exc).__name__}: {exc}")
                continue
            collected.extend((impl.plugin_name, d) for d in declarations)
        return collected

    # -- calling hooks with the error policy ---------------------------------------------

    def call_each(self, hook_name: str, **kwargs: Any) -> list[Any]:
        """Call every implementation of a notify hook in turn, isolating failures.

        A :class:`GeplugError` (a deliberate stop, e.g. the disk is full) propagates after the
        remaining implementations are skipped; any other exception disables the plugin that
        raised it with a warning and the call goes on with the others.
        """
        results = []
        for impl in list(getattr(self.pm.hook, hook_name).get_hookimpls()):
            try:
                results.append(impl.function(**{a: kwargs[a] for a in impl.argnames}))
            except GeplugError:
                raise
            except Exception as exc:
                record = self._records.get(impl.plugin_name)
                if record is None:  # registered directly on self.pm, outside our policy
                    raise
                self._skip(record, f"{hook_name} raised {type(exc).__name__}: {exc}")
        return results

    def call_all(self, hook_name: str, **kwargs: Any) -> list[BaseException]:
        """Call every implementation even if some raise; return the exceptions raised."""
        errors: list[BaseException] = []
        for impl in list(getattr(self.pm.hook, hook_name).get_hookimpls()):
            try:
                impl.function(**{a: kwargs[a] for a in impl.argnames})
            except Exception as exc:
                errors.append(exc)
        return errors

    def implementers(self, hook_name: str) -> list[str]:
        """Names of the plugins implementing ``hook_name``, in call order."""
        return [i.plugin_name for i in reversed(getattr(self.pm.hook, hook_name).get_hookimpls())]


def _hookimpl_names(plugin: object) -> Iterable[str]:
    marker = f"{hookspecs.PROJECT}_impl"
    for attr in dir(plugin):
        try:
            value = getattr(plugin, attr)
        except Exception:
            continue
        if callable(value) and hasattr(value, marker):
            yield attr


def _entry_points() -> list[metadata.EntryPoint]:
    return list(metadata.entry_points(group=ENTRY_POINT_GROUP))


def _core_version() -> str:
    from geplug import __version__

    return __version__
