"""Typed profiling values for one system, computed once by :func:`geplug.config.resolve`.

``profiling_options`` arrives as strings (options.md §3.2: every JSON value is a string). The
checker (``geplug.config.check``) rejects bad values before a system exists; this module turns
the accepted strings into typed values and fills the reference defaults for keys that are
still unset (options.md §3.3). It is the one place those defaults live: :func:`resolve` calls
:func:`effective_profiling` and stores the result (and each default's source) on the
:class:`~geplug.config.resolved.ResolvedConfig`; the profiling collectors only read it. The
value syntax (the ``storage_limit`` pattern, the ``Custom:`` prefix) is the checker's own
definition (:mod:`geplug.config.rules.profiling`), so checker and collectors cannot disagree.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import attrs

from geplug.config.rules.profiling import CUSTOM, STORAGE_RE
from geplug.errors import ProfilingError

if TYPE_CHECKING:
    from geplug.config.model import ProfilingOptions
    from geplug.config.resolved import ResolvedConfig
    from geplug.products.schema import Product

__all__ = ["CUSTOM_PREFIX", "Effective", "effective_profiling", "parse_custom",
           "parse_storage_limit"]

CUSTOM_PREFIX = CUSTOM
"""aic_metrics prefix of a register list, case-sensitive as the checker reads it (§3.3)."""


def _switch(value: str | None) -> bool:
    return value is not None and value not in ("", "off")


def _freq(value: str | None) -> int:
    """A frequency string: "0", "" or non-numeric means unset (options.md §3.2)."""
    if value is None or not value.strip().isdigit():
        return 0
    return int(value)


def _list(value: str | None) -> tuple[str, ...]:
    if not value:
        return ()
    return tuple(v.strip() for v in value.split(",") if v.strip())


def parse_storage_limit(value: str | None) -> int:
    """``"<N>MB"`` -> N (MB); 0 when unset; raises for a malformed value (options.md §3.3)."""
    if value is None or value == "":
        return 0
    match = STORAGE_RE.fullmatch(value)
    if match is None:
        raise ProfilingError(
            f"profiling_options.storage_limit = {value!r} is invalid: expected digits followed by "
            "upper-case MB, e.g. '500MB' (storage-limit should be in range [200,4294967295], "
            "end with MB)"
        )
    return int(match.group(1))


def parse_custom(value: str) -> tuple[str, ...]:
    """The register names of ``Custom:<ev>,<ev>...`` normalised to lower-case hex (``0x1b``).

    options.md §3.3: the text after ``Custom:`` is lower-cased first; each event is hex
    (``0x..``) or decimal; at most 8, no repeats (the checker enforces the ranges).
    """
    body = value[len(CUSTOM_PREFIX):].lower()
    regs: list[str] = []
    for raw in body.split(","):
        item = raw.strip()
        if not item:
            continue
        try:
            number = int(item, 16) if item.startswith("0x") else int(item, 10)
        except ValueError:
            raise ProfilingError(
                f"profiling_options.aic_metrics = {value!r}: register {item!r} is neither "
                "hexadecimal (0x..) nor decimal; only hexadecimal or decimal parameters are "
                "allowed"
            ) from None
        name = hex(number)
        if name in regs:
            raise ProfilingError(
                f"profiling_options.aic_metrics = {value!r}: register {name} is set twice; "
                "list each register once"
            )
        regs.append(name)
    return tuple(regs)


@attrs.frozen(kw_only=True)
class Effective:
    """Typed profiling switches for one system (defaults per options.md §3.3 filled in)."""

    output_root: str
    """Directory under which ``PROF_*`` is created (absolute)."""
    task_level: str
    """``off``, ``l0`` or ``l1`` (``on`` = l1; task_time wins over task_trace when both set)."""
    training_trace: bool
    fp_point: str = ""
    bp_point: str = ""
    aic_group: str = ""
    """aic_metrics group after aliases, ``Custom`` for a register list, "" for none."""
    aic_custom: tuple[str, ...] = ()
    aiv_group: str = ""
    """aiv_metrics group ("" = the aic group drives the aiv_ half too)."""
    aiv_custom: tuple[str, ...] = ()
    l2: bool = False
    hccl: bool = False
    aicpu: bool = False
    msproftx: bool = False
    runtime_api: bool = False
    task_memory: bool = False
    """CANN operator memory (``task_memory``; msprof ``--task-memory``): NPU_OP_MEM,
    operator_memory and memory_record from the models' memory plans."""
    ge_api: str = "off"
    storage_limit_mb: int = 0
    host_sys: tuple[str, ...] = ()
    host_sys_usage: tuple[str, ...] = ()
    host_freq: int = 50
    sys_hardware_mem_freq: int = 0
    llc_profiling: str = "read"
    sys_io_sampling_freq: int = 0
    sys_interconnection_freq: int = 0
    dvpp_freq: int = 0
    instr_profiling_freq: int = 0
    """instr_profiling_freq, or the product's default rate when the ``instr_profiling`` switch
    is on (950); 0 = off."""

    @classmethod
    def from_config(cls, config: ResolvedConfig, product: Product) -> Effective:
        """The typed values :func:`geplug.config.resolve` computed for ``config`` on
        ``product``; nothing is derived here. Raises :class:`ProfilingError` when the options
        in force cannot be collected on the product, or when ``config`` carries no profiling
        values (profiling off, or a ``ResolvedConfig`` not made by ``resolve()``)."""
        if config.profiling_error:
            raise ProfilingError(config.profiling_error)
        if not isinstance(config.profiling, cls):
            raise ProfilingError(
                f"no profiling values resolved for product {product.name!r}: profiling is off "
                "in this configuration, or it was not made by geplug.config.resolve(); "
                "build the system's configuration with resolve()"
            )
        return config.profiling

    @property
    def pmu_on(self) -> bool:
        """PMU columns are written: l1 task data and a metrics group (formats.md §6.4)."""
        return self.task_level == "l1" and bool(self.aic_group)


def effective_profiling(opts: ProfilingOptions, product: Product, output_root: str,
                        options_source: str, output_source: str
                        ) -> tuple[Effective, dict[str, str]]:
    """The typed values of the profiling options in force, and where each came from.

    ``output_root`` is the resolved output directory (from ``output_source``);
    ``options_source`` is the source of ``opts`` as a whole; a value the options leave unset
    gets its default here and the source ``product default`` (declared by the product) or
    ``built-in default``. Keys of the returned sources are ``profiling.<field>``. Raises
    :class:`ProfilingError` for a value the product cannot collect (the checker reports
    those first).
    """
    from geplug.config.resolved import Source

    caps = product.profiling
    src: dict[str, str] = {}

    def given(key: str, field: str, default_source: str = Source.BUILTIN_DEFAULT) -> None:
        value = getattr(opts, key)
        src[f"profiling.{field}"] = options_source if value not in (None, "") else \
            default_source

    root = output_root
    level = opts.task_time if opts.task_time not in (None, "") else opts.task_trace
    if level is None or level == "":
        level = "on"
    level = {"on": "l1", "l2": "l1", "l3": "l1"}.get(level, level)
    aic_group, aic_custom = _group(opts.aic_metrics, product, "aic_metrics")
    if opts.aic_metrics is None:
        aic_group = caps.aic_metrics_default
    aiv_group, aiv_custom = _group(opts.aiv_metrics, product, "aiv_metrics")
    freqs = caps.frequencies
    host_freq = _freq(opts.host_sys_usage_freq)
    if not host_freq:
        rng = freqs.get("host_sys_usage_freq")
        host_freq = (rng.default if rng is not None else None) or 50
    instr = _freq(opts.instr_profiling_freq)
    if not instr and _switch(opts.instr_profiling) and caps.instr_profiling == "switch":
        rng = freqs.get("instr_profiling_freq")
        instr = (rng.default if rng is not None else None) or 1000
    for field, key in (("training_trace", "training_trace"), ("fp_point", "fp_point"),
                       ("bp_point", "bp_point"), ("aiv_group", "aiv_metrics"), ("l2", "l2"),
                       ("hccl", "hccl"), ("aicpu", "aicpu"), ("msproftx", "msproftx"),
                       ("runtime_api", "runtime_api"), ("ge_api", "ge_api"),
                       ("task_memory", "task_memory"),
                       ("storage_limit_mb", "storage_limit"), ("host_sys", "host_sys"),
                       ("host_sys_usage", "host_sys_usage"),
                       ("sys_hardware_mem_freq", "sys_hardware_mem_freq"),
                       ("llc_profiling", "llc_profiling"),
                       ("sys_io_sampling_freq", "sys_io_sampling_freq"),
                       ("sys_interconnection_freq", "sys_interconnection_freq"),
                       ("dvpp_freq", "dvpp_freq")):
        given(key, field)
    src["profiling.task_level"] = options_source if (opts.task_time or opts.task_trace) \
        else Source.BUILTIN_DEFAULT
    src["profiling.aic_group"] = options_source if opts.aic_metrics is not None else \
        Source.PRODUCT_DEFAULT
    src["profiling.aic_custom"] = src["profiling.aic_group"]
    src["profiling.aiv_custom"] = src["profiling.aiv_group"]
    given("host_sys_usage_freq", "host_freq", Source.PRODUCT_DEFAULT)
    src["profiling.instr_profiling_freq"] = options_source if opts.instr_profiling_freq else \
        Source.PRODUCT_DEFAULT if _switch(opts.instr_profiling) else Source.BUILTIN_DEFAULT
    src["profiling.output_root"] = output_source
    effective = Effective(
        output_root=os.path.abspath(root),
        task_level=level,
        training_trace=_switch(opts.training_trace) and caps.training_trace,
        fp_point=opts.fp_point or "",
        bp_point=opts.bp_point or "",
        aic_group=aic_group,
        aic_custom=aic_custom,
        aiv_group=aiv_group,
        aiv_custom=aiv_custom,
        l2=_switch(opts.l2),
        hccl=_switch(opts.hccl),
        aicpu=_switch(opts.aicpu),
        msproftx=_switch(opts.msproftx),
        runtime_api=_switch(opts.runtime_api),
        task_memory=_switch(opts.task_memory),
        ge_api=opts.ge_api or "off",
        storage_limit_mb=parse_storage_limit(opts.storage_limit),
        host_sys=tuple(v for v in _list(opts.host_sys) if v in caps.host_sys),
        host_sys_usage=_list(opts.host_sys_usage),
        host_freq=host_freq,
        sys_hardware_mem_freq=_supported_freq(opts.sys_hardware_mem_freq, product,
                                              "sys_hardware_mem_freq"),
        llc_profiling=opts.llc_profiling or "read",
        sys_io_sampling_freq=_supported_freq(opts.sys_io_sampling_freq, product,
                                             "sys_io_sampling_freq"),
        sys_interconnection_freq=_supported_freq(opts.sys_interconnection_freq, product,
                                                 "sys_interconnection_freq"),
        dvpp_freq=_supported_freq(opts.dvpp_freq, product, "dvpp_freq"),
        instr_profiling_freq=instr if caps.instr_profiling != "unsupported" else 0,
    )
    return effective, src


def _supported_freq(value: str | None, product: Product, key: str) -> int:
    """The frequency, or 0 when unset or the product does not declare the option."""
    return _freq(value) if key in product.profiling.frequencies else 0


def _group(value: str | None, product: Product, key: str) -> tuple[str, tuple[str, ...]]:
    if value is None or value == "" or value.lower() == "none":
        return "", ()
    if value.startswith(CUSTOM_PREFIX):
        return "Custom", parse_custom(value)
    caps = product.profiling
    group = caps.aic_metrics_aliases.get(value, value)
    if group not in caps.pmu_columns:
        names = "|".join([*caps.aic_metrics, "Custom:xx,xx"])
        raise ProfilingError(
            f"profiling_options.{key} = {value!r} is not available on {product.name!r}: "
            f"aic-metrics[{value}] is invalid, please set metrics in range [{names}]."
        )
    return group, ()
