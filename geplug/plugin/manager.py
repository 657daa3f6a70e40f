"""The plugin manager: loads built-ins then entry points, isolates broken plugins, reports.

Policy (DESIGN.md "Plugin loading"): built-in plugins first, then the ``geplug`` entry points;
a plugin that fails to import, names a hook that does not exist, was written for an
unsupported plugin API version, raises in a hook or declares an invalid ``capabilities.toml``
is skipped with a :class:`PluginSkippedWarning` naming it, its distribution and the reason,
and everything else keeps working. ``GEPLUG_DISABLE_PLUGINS=name,name`` blocks plugins (a name
matching no plugin gets a :class:`PluginNameWarning` with the closest names); a product or
backend asked for while its plugin is disabled or skipped is explained as such
(:meth:`PluginManager.backend_hint`, ``ProductRegistry.get``). Two plugins declaring one
product raise a single :class:`PluginConflictError` naming both.
"""

from __future__ import annotations

import difflib
import importlib
import os
import time
import warnings
from collections.abc import Callable, Iterable
from importlib import metadata
from typing import Any

import attrs
import pluggy

from geplug import hookspecs
from geplug.errors import CapabilityError, GeplugError, GeplugWarning, PluginConflictError
from geplug.plugin import guard
from geplug.plugin.guard import (
    install_interrupt_counter,
    interrupt_count,
    is_plugin_fault,
    plugin_output,
)
from geplug.plugin.static import StaticInfo, inspect_target
from geplug.plugin.timing import warn_if_slow
from geplug.products.assemble import assemble, find_conflicts
from geplug.products.load import Declaration
from geplug.products.query import ProductRegistry

__all__ = [
    "BUILTIN_PLUGINS",
    "DISABLE_ENV",
    "PluginManager",
    "PluginNameWarning",
    "PluginRecord",
    "PluginSkippedWarning",
    "SocConflictWarning",
]

DISABLE_ENV = "GEPLUG_DISABLE_PLUGINS"
ENTRY_POINT_GROUP = "geplug"
BUILTIN_PLUGINS: tuple[tuple[str, str], ...] = (
    ("dump", "geplug.dump.plugin:DumpPlugin"),
    ("profiling", "geplug.profiling.plugin:ProfilingPlugin"),
)
"""(name, ``module:Class``) of the core's own plugins, registered before any entry point.
Each manager instantiates its own (pytest's ``StepwisePlugin`` is the model): their state
lives on the instance, never in a module."""
_HOOK_NAMES: tuple[str, ...] = tuple(sorted(n for n in dir(hookspecs) if n.startswith("geplug_")))
_RELAYED_HOOKS = frozenset({"geplug_compile"})
"""Hooks called through pluggy's own relay (which honours wrappers). geplug calls every other
hook in its own isolated loop, in pluggy's order; a wrapper there is refused at load."""


class PluginSkippedWarning(GeplugWarning):
    """A plugin was skipped; the message names the plugin, its distribution and why."""


class PluginNameWarning(GeplugWarning):
    """``GEPLUG_DISABLE_PLUGINS`` names a plugin that does not exist (a typo guard)."""


class SocConflictWarning(GeplugWarning):
    """Two installed products declare the same SoC version string (lookups by it fail)."""


_Impl = tuple[Callable[..., Any], tuple[str, ...], str]
"""(function, argument names, plugin name) of one hook implementation."""


class _PluggyManager(pluggy.PluginManager):
    """pluggy's manager counting changes, so geplug can cache implementation lists per hook.

    Every register / unregister (also those made directly on ``manager.pm``, and the unregister
    of a skipped plugin) bumps :attr:`generation`; a cached list of another generation is
    rebuilt.
    """

    generation: int = 0

    def register(self, plugin: Any, name: str | None = None) -> str | None:
        try:
            return super().register(plugin, name)
        finally:
            self.generation += 1

    def unregister(self, plugin: Any | None = None, name: str | None = None) -> Any | None:
        try:
            return super().unregister(plugin=plugin, name=name)
        finally:
            self.generation += 1

    def add_hookspecs(self, module_or_class: Any) -> None:
        try:
            super().add_hookspecs(module_or_class)
        finally:
            self.generation += 1


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
    load_seconds: float = 0.0
    """Time to import the plugin plus its ``geplug_capabilities`` (geplug/plugin/timing.py)."""

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
        self.pm: pluggy.PluginManager = _PluggyManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self._records: dict[str, PluginRecord] = {}
        self._targets: dict[str, str] = {}
        """plugin name -> its entry-point target (to explain a disabled or skipped plugin)."""
        self._static: dict[str, StaticInfo] = {}
        self._impls: dict[str, tuple[int, list[_Impl]]] = {}
        self._external: dict[str, tuple[int, bool]] = {}
        """hook name -> (pluggy generation, implementations) for :meth:`call_each`."""
        self._registry: ProductRegistry | None = None
        self._declared: dict[str, tuple[str, ...]] = {}
        self.conflict: PluginConflictError | None = None
        """Set by :meth:`report` when two plugins declare one product."""
        self._open_systems: list[Any] = []
        """Systems opened with this manager, not yet shut down (see :attr:`open_systems`)."""
        self.unknown_disabled: tuple[str, ...] = ()
        """The :class:`PluginNameWarning` messages of the last :meth:`load` (typo guard)."""

    # -- loading -------------------------------------------------------------------------

    @property
    def hook(self) -> Any:
        """The pluggy hook relay (``manager.hook.geplug_dump(event=...)``)."""
        return self.pm.hook

    def load(self, *, builtins: bool = True, entry_points: bool = True) -> PluginManager:
        """Register the built-in plugins, then every ``geplug`` entry point; returns self."""
        install_interrupt_counter()
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
        if disabled:
            self._warn_unknown_disabled(disabled)
        return self

    @staticmethod
    def disabled_names() -> frozenset[str]:
        """Plugin names listed in ``GEPLUG_DISABLE_PLUGINS`` (comma separated)."""
        raw = os.environ.get(DISABLE_ENV, "")
        return frozenset(n.strip() for n in raw.split(",") if n.strip())

    def _warn_unknown_disabled(self, disabled: frozenset[str]) -> None:
        """Warn about each ``GEPLUG_DISABLE_PLUGINS`` name that matches no plugin (a typo)."""
        known = sorted(set(self._records) | {n for n, _ in BUILTIN_PLUGINS}
                       | {ep.name for ep in _entry_points()})
        messages = []
        for name in sorted(disabled - set(known)):
            close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
            hint = ("did you mean " + " or ".join(repr(c) for c in close) + "? "
                    if close else "")
            messages.append(
                f"{DISABLE_ENV} names {name!r}, which matches no installed plugin, so it blocks "
                f"nothing; {hint}the plugin names are {', '.join(known) or 'none'} (see "
                "`geplug plugins`)")
        self.unknown_disabled = tuple(messages)
        for message in messages:
            warnings.warn(PluginNameWarning(message), stacklevel=3)

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
        wrapped = _wrapper_hooks(self.pm, name)
        if wrapped:
            self._skip(record, f"{wrapped[0]} is a wrapper (wrapper=True / hookwrapper=True); "
                       "geplug calls it in its own isolated loop, where wrappers are not "
                       "supported: make it a plain implementation (tryfirst/trylast order it)")
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
        self._targets[name] = target
        if name in disabled:
            self._records[name] = attrs.evolve(
                record, status="disabled", reason=f"listed in {DISABLE_ENV}"
            )
            return
        started = time.perf_counter()
        before = interrupt_count()
        try:
            with plugin_output():
                module = loader() if loader is not None else _import_target(target)
        except BaseException as exc:  # a broken plugin must not break the others
            if not is_plugin_fault(exc, before):
                raise
            self._skip(record, f"failed to import {target!r}: {type(exc).__name__}: {exc}")
            return
        seconds = time.perf_counter() - started
        if self.register(module, name, distribution=distribution, version=version,
                         origin=origin):
            registered = next(reversed(self._records))  # `name`, or `name[dist]` when renamed
            self._records[registered] = attrs.evolve(self._records[registered],
                                                     load_seconds=seconds)
            warn_if_slow(registered, record.provider, seconds, "import")

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
        self.products(strict=False)
        return [
            attrs.evolve(r, products=self._declared.get(r.name, ()))
            for r in sorted(self._records.values(), key=lambda r: (r.origin != "builtin", r.name))
        ]

    def loaded(self) -> list[str]:
        """Names of the plugins currently registered."""
        return [r.name for r in self._records.values() if r.status == "loaded"]

    def disabled_report(self) -> list[PluginRecord]:
        """The plugins installed but blocked by ``GEPLUG_DISABLE_PLUGINS`` (not imported)."""
        return [r for r in self.report() if r.status == "disabled"]

    def why_not_loaded(self, name: str) -> str:
        """Why the installed plugin ``name`` is not loaded ("" when it is loaded or unknown).

        E.g. ``"plugin 'simulator' (geplug-simulator 0.1.0) is installed but disabled by
        GEPLUG_DISABLE_PLUGINS; remove 'simulator' from GEPLUG_DISABLE_PLUGINS to use it"``.
        """
        return self._not_loaded(name, "{who} is installed but")

    def _not_loaded(self, name: str, lead: str) -> str:
        """``lead`` (with ``{who}`` filled) + why plugin ``name`` is not loaded, or ""."""
        record = self._records.get(name)
        if record is None or record.status == "loaded":
            return ""
        who = f"plugin {name!r}" + (f" ({record.provider})" if record.distribution else "")
        if record.status == "disabled":
            return (f"{lead.format(who=who)} disabled by {DISABLE_ENV}; remove {name!r} from "
                    f"{DISABLE_ENV} to use it")
        return f"{lead.format(who=who)} was skipped ({record.reason}); see `geplug plugins`"

    def backend_hint(self, backend: str | None = None) -> str:
        """How to get a backend, for the "no backend serves ..." error of ``initialize_system``.

        With ``backend`` (a strict request): why that plugin is not loaded, or "" when it is
        not installed at all. Without: the installed backends (plugins whose hooks module
        defines ``geplug_init_system``, found without importing them) that are disabled by
        ``GEPLUG_DISABLE_PLUGINS`` or skipped, and how to enable them; when there is none,
        ``"install geplug-simulator"``.
        """
        if backend is not None:
            return self.why_not_loaded(backend)
        notes = [self.why_not_loaded(name) for name in sorted(self._records)
                 if self._records[name].status != "loaded"
                 and "geplug_init_system" in (self._static_info(name).hooks or ())]
        return "; ".join(n for n in notes if n) or "install geplug-simulator"

    def _static_info(self, name: str) -> StaticInfo:
        """What the files of the not-loaded plugin ``name`` declare (cached, never imports)."""
        if name not in self._static:
            target = self._targets.get(name, "")
            self._static[name] = inspect_target(target) if target else StaticInfo()
        return self._static[name]

    def _unavailable_products(self) -> dict[str, str]:
        """Product name / SoC string -> why it is missing although its plugin is installed."""
        notes: dict[str, str] = {}
        for name, record in sorted(self._records.items()):
            if record.status == "loaded" or name not in self._targets:
                continue
            info = self._static_info(name)
            why = self._not_loaded(name, "it is declared by {who}, which is installed but")
            for key in (*info.products, *info.soc_versions):
                notes.setdefault(key, why)
        return notes

    # -- products ------------------------------------------------------------------------

    def products(self, *, strict: bool = True) -> ProductRegistry:
        """The products declared by the loaded plugins (validated once, then cached).

        A plugin whose declaration is invalid (or whose ``extends`` base is unavailable) is
        skipped with a warning and its products are dropped; the others are kept. When two
        plugins declare one product, ``strict`` (the default) raises that
        :class:`PluginConflictError`; ``strict=False`` (what the CLI, ``get_product`` and
        ``initialize_system`` use) returns every *other* product, and looking the conflicting
        name up raises the conflict error naming both distributions.
        """
        if self._registry is None:
            self._registry = self._build_registry()
        if strict and self.conflict is not None:
            raise self.conflict
        return self._registry

    def _build_registry(self) -> ProductRegistry:
        """Assemble the registry; sets :attr:`conflict` (the first conflict) or clears it."""
        collected = self._collect_declarations()
        conflicts: dict[str, PluginConflictError] = {}
        for product, first, second in find_conflicts(collected):
            pair = (self._records[first].provider, self._records[second].provider)
            conflicts[product] = PluginConflictError(
                f"product {product!r} is declared by two plugins: {pair[0]} and {pair[1]}; "
                f"uninstall one of them or disable one with {DISABLE_ENV}={first} or "
                f"{DISABLE_ENV}={second}",
                product=product,
                providers=pair,
            )
        self.conflict = next(iter(conflicts.values()), None)
        collected = [(p, d) for p, d in collected if d.name not in conflicts]
        providers = {name: record.provider for name, record in self._records.items()}
        while True:
            assembly = assemble(collected, providers)
            if not assembly.failed_plugin:
                break
            self._skip(self._records[assembly.failed_plugin], assembly.reason)
            collected = [(p, d) for p, d in collected if p != assembly.failed_plugin]
        self._declared = dict(assembly.declared)
        unavailable = {k: v for k, v in self._unavailable_products().items()
                       if k not in assembly.products}
        registry = ProductRegistry(assembly.products, unavailable=unavailable,
                                   conflicts=conflicts)
        for soc, names in sorted(registry.soc_owners().items()):
            if len(names) > 1:
                who = " and ".join(f"{n} ({assembly.products[n].distribution})" for n in names)
                warnings.warn(SocConflictWarning(
                    f"SoC version {soc!r} is declared by several products: {who}; looking a "
                    "product up by this SoC fails until one plugin drops it (SoC strings must "
                    "be unique across installed products)"), stacklevel=3)
        return registry

    def _collect_declarations(self) -> list[tuple[str, Declaration]]:
        """(plugin name, declaration) from every ``geplug_capabilities``; raisers skipped."""
        collected: list[tuple[str, Declaration]] = []
        for impl in list(self.pm.hook.geplug_capabilities.get_hookimpls()):
            started = time.perf_counter()
            before = interrupt_count()
            try:
                with plugin_output():
                    result: Any = impl.function()
                    declarations = list(result or ())
                self._add_load_time(impl.plugin_name, time.perf_counter() - started)
                for decl in declarations:
                    if not isinstance(decl, Declaration):
                        raise TypeError(
                            f"geplug_capabilities returned {type(decl).__name__}, expected "
                            "geplug.products.declare(path) results"
                        )
            except CapabilityError as exc:
                self._skip(self._records[impl.plugin_name], f"invalid capabilities: {exc}")
                continue
            except BaseException as exc:  # a broken plugin must not break the others
                if not is_plugin_fault(exc, before):
                    raise
                self._skip(self._records[impl.plugin_name],
                           f"geplug_capabilities raised {type(exc).__name__}: {exc}")
                continue
            collected.extend((impl.plugin_name, d) for d in declarations)
        return collected

    def _add_load_time(self, plugin_name: str, seconds: float) -> None:
        """Add ``geplug_capabilities``'s time to a plugin's load time; warn when slow."""
        record = self._records.get(plugin_name)
        if record is not None:
            self._records[plugin_name] = attrs.evolve(
                record, load_seconds=record.load_seconds + seconds)
            warn_if_slow(plugin_name, record.provider, seconds, "geplug_capabilities")

    # -- calling hooks with the error policy ---------------------------------------------

    def call_each(self, hook_name: str, **kwargs: Any) -> list[Any]:
        """Call every implementation of a notify hook in turn, isolating failures.

        A :class:`GeplugError` (a deliberate stop, e.g. the disk is full) propagates after the
        remaining implementations are skipped, and so does a real interrupt (Ctrl-C). Any
        other exception from a third-party plugin - ``SystemExit`` and a ``KeyboardInterrupt``
        it raised itself included - or a result of the wrong type (``geplug_dump``: ``None``
        or a list of paths) disables that plugin with a warning naming the plugin, its
        distribution and the hook - after its ``geplug_shutdown_system`` was given every open
        system, so what it wrote is completed - and the call goes on with the others. A
        built-in plugin's exception propagates: disabling geplug's own dump or profiling
        writers would silently lose the artifacts the user asked for. What a plugin prints
        goes to stderr (:func:`geplug.plugin.guard.plugin_output`).
        """
        results = []
        cached = self._impls.get(hook_name)
        if cached is not None and cached[0] == getattr(self.pm, "generation", -1):
            impls = cached[1]
        else:
            impls = self._implementations(hook_name)
        nargs = len(kwargs)
        check = _RESULT_CHECKS.get(hook_name)
        before = guard._interrupts
        guard.enter_plugin_output()  # (not a `with`: this loop runs once per op and task)
        try:
            for function, argnames, plugin_name in impls:
                try:
                    if len(argnames) == nargs:  # the usual case: it takes every argument
                        result = function(**kwargs)
                    else:
                        result = function(**{a: kwargs[a] for a in argnames})
                    if check is not None and result is not None:
                        wrong = check(result)
                        if wrong:
                            raise _WrongResult(wrong)
                    results.append(result)
                except GeplugError:
                    raise
                except BaseException as exc:
                    record = self._records.get(plugin_name)
                    if (record is None or record.origin == "builtin"
                            or not is_plugin_fault(exc, before)):
                        raise  # outside our policy, a real Ctrl-C, or geplug's own writer
                    self._flush_before_skip(plugin_name)
                    self._skip(record, _fault(hook_name, exc))
        finally:
            guard.exit_plugin_output()
        return results

    def call_first(
        self, hook_name: str, accept: Callable[[Any], str], *, only: str | None = None,
        failed: dict[str, str] | None = None, **kwargs: Any,
    ) -> tuple[Any, str]:
        """Call a firstresult hook's implementations in pluggy's order, isolating each.

        Returns ``(result, plugin name)`` of the first implementation returning something
        other than ``None`` that ``accept`` takes (``accept(result)`` returns ``""``, or what
        is wrong with it), or ``(None, "")``. A third-party implementation that raises (any
        exception but a :class:`GeplugError` or a real interrupt) or returns what ``accept``
        refuses is disabled with a warning naming plugin, distribution and hook, and the next
        one is asked; a built-in's exception propagates. ``only``: ask just that plugin;
        ``failed`` (a dict) receives plugin name -> why it was disabled.
        """
        before = interrupt_count()
        for function, argnames, plugin_name in self._implementations(hook_name):
            if only is not None and plugin_name != only:
                continue
            try:
                with plugin_output():
                    result = function(**{a: kwargs[a] for a in argnames})
                if result is None:
                    continue
                wrong = accept(result)
                if wrong:
                    raise _WrongResult(wrong)
            except GeplugError:
                raise
            except BaseException as exc:
                record = self._records.get(plugin_name)
                if (record is None or record.origin == "builtin"
                        or not is_plugin_fault(exc, before)):
                    raise
                reason = _fault(hook_name, exc)
                if failed is not None:
                    failed[plugin_name] = f"disabled: {reason}"
                self._skip(record, reason)
                continue
            return result, plugin_name
        return None, ""

    @property
    def open_systems(self) -> list[Any]:
        """The systems opened with this manager and not yet shut down (oldest first)."""
        return self._open_systems

    def _flush_before_skip(self, plugin_name: str) -> None:
        """Give a failing plugin's ``geplug_shutdown_system`` every open system first."""
        shutdown = getattr(self.pm.get_plugin(plugin_name), "geplug_shutdown_system", None)
        if not callable(shutdown):
            return
        for system in list(self._open_systems):
            try:
                with plugin_output():
                    shutdown(system=system)
            except BaseException:  # it is being disabled for failing already
                continue

    def _implementations(self, hook_name: str) -> list[_Impl]:
        """The implementations of ``hook_name`` with their argument names, cached per hook.

        Rebuilt after any register / unregister (a skipped plugin is unregistered): the cache
        is keyed on the pluggy manager's change counter. Callers iterate the returned list,
        which is never mutated, so a plugin skipped mid-call does not disturb the loop.
        """
        generation = getattr(self.pm, "generation", None)
        cached = self._impls.get(hook_name)
        if cached is not None and generation is not None and cached[0] == generation:
            return cached[1]
        # pluggy stores trylast, plain, tryfirst (each in registration order) and calls them
        # last-registered first, tryfirst first: the reverse of the stored order
        impls: list[_Impl] = [
            (impl.function, tuple(impl.argnames), impl.plugin_name)
            for impl in reversed(getattr(self.pm.hook, hook_name).get_hookimpls())
            if not (impl.hookwrapper or impl.wrapper)
        ]
        if generation is not None:
            self._impls[hook_name] = (generation, impls)
        return impls

    def call_all(self, hook_name: str, **kwargs: Any) -> list[BaseException]:
        """Call every implementation even if some raise; return the built-ins' exceptions.

        A third-party implementation that raises (``SystemExit`` and a self-raised
        ``KeyboardInterrupt`` included) is disabled with a warning naming plugin,
        distribution and hook; a built-in's exception (or a :class:`GeplugError`) is
        returned for the caller to raise once every implementation ran.
        """
        errors: list[BaseException] = []
        before = interrupt_count()
        for function, argnames, plugin_name in self._implementations(hook_name):
            try:
                with plugin_output():
                    function(**{a: kwargs[a] for a in argnames})
            except BaseException as exc:
                record = self._records.get(plugin_name)
                if (isinstance(exc, GeplugError) or record is None
                        or record.origin == "builtin"):
                    if isinstance(exc, Exception):
                        errors.append(exc)
                        continue
                    raise
                if not is_plugin_fault(exc, before):
                    raise
                self._skip(record, _fault(hook_name, exc))
        return errors

    def has_external(self, hook_name: str) -> bool:
        """Whether a plugin that is not one of geplug's built-ins implements ``hook_name``.

        Backends use it to decide whether per-task profiling events are worth building next
        to the batched step record the built-in collectors consume.
        """
        generation = getattr(self.pm, "generation", None)
        cached = self._external.get(hook_name)
        if cached is not None and generation is not None and cached[0] == generation:
            return cached[1]
        found = any(
            (record := self._records.get(name)) is None or record.origin != "builtin"
            for _, _, name in self._implementations(hook_name)
        )
        if generation is not None:
            self._external[hook_name] = (generation, found)
        return found

    def subcommands(self, taken: Iterable[str] = ()) -> list[Any]:
        """The :class:`geplug.backend.Subcommand` records of every ``geplug_subcommands``.

        A plugin that raises or returns something else is skipped with a warning naming it; a
        name in ``taken`` (the core's commands) or already returned by another plugin is left
        out with a :class:`PluginSkippedWarning`-style note.
        """
        from geplug.backend import Subcommand

        seen = set(taken)
        found: list[Any] = []
        before = interrupt_count()
        for impl in list(reversed(self.pm.hook.geplug_subcommands.get_hookimpls())):
            record = self._records.get(impl.plugin_name)
            try:
                with plugin_output():
                    returned: Any = impl.function()
                    result = list(returned or ())
                bad = [r for r in result if not isinstance(r, Subcommand)]
                if bad:
                    raise TypeError(f"returned {type(bad[0]).__name__}, expected "
                                    "geplug.backend.Subcommand records")
            except BaseException as exc:
                if (record is None or record.origin == "builtin"
                        or not is_plugin_fault(exc, before)):
                    raise
                self._skip(record, _fault("geplug_subcommands", exc))
                continue
            for command in result:
                if command.name in seen:
                    who = record.provider if record is not None else impl.plugin_name
                    warnings.warn(PluginSkippedWarning(
                        f"geplug plugin {impl.plugin_name!r} ({who}): sub-command "
                        f"{command.name!r} left out, the name is already taken"), stacklevel=2)
                    continue
                seen.add(command.name)
                found.append(command)
        return found

    def has_wrapper(self, hook_name: str) -> bool:
        """Whether an implementation of ``hook_name`` is a wrapper (only relayed hooks)."""
        return any(i.hookwrapper or i.wrapper
                   for i in getattr(self.pm.hook, hook_name).get_hookimpls())

    def implementers(self, hook_name: str) -> list[str]:
        """Names of the plugins implementing ``hook_name``, in call order."""
        return [i.plugin_name for i in reversed(getattr(self.pm.hook, hook_name).get_hookimpls())]


class _WrongResult(TypeError):
    """A hook implementation returned a value of the wrong kind (the message says which)."""


def _fault(hook_name: str, exc: BaseException) -> str:
    """The reason recorded for a plugin disabled for ``exc`` in ``hook_name``."""
    if isinstance(exc, _WrongResult):
        return f"{hook_name} returned {exc}"
    return f"{hook_name} raised {type(exc).__name__}: {exc}"


def _paths_or_none(result: Any) -> str:
    """What is wrong with a ``geplug_dump`` result ("" for a path or a list of paths)."""
    items = result if isinstance(result, (list, tuple)) else [result]
    bad = [r for r in items if not isinstance(r, (str, os.PathLike))]
    if bad:
        return (f"{type(bad[0]).__name__} {_short(bad[0])}, expected None or a list of the "
                "paths written")
    return ""


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_RESULT_CHECKS: dict[str, Callable[[Any], str]] = {"geplug_dump": _paths_or_none}
"""Notify hooks whose results geplug uses, and the check each result must pass."""


def _wrapper_hooks(pm: pluggy.PluginManager, name: str) -> list[str]:
    """The hooks (other than relayed ones) that plugin ``name`` implements as a wrapper."""
    found = []
    for caller in pm.get_hookcallers(pm.get_plugin(name)) or ():
        if caller.name in _RELAYED_HOOKS:
            continue
        for impl in caller.get_hookimpls():
            if impl.plugin_name == name and (impl.hookwrapper or impl.wrapper):
                found.append(caller.name)
    return sorted(found)


def _import_target(target: str) -> Any:
    """``package.module`` -> the module; ``package.module:Class`` -> a new ``Class()``."""
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    if not attr:
        return module
    found = getattr(module, attr)
    return found() if isinstance(found, type) else found


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
