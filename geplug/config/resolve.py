"""What the real stack would do with a config on a product: every effective value + its source.

Priorities follow options.md §3.1 (profiling), §5.3 (precision defaults), §7.3 and
formats.md §5 (kernel_meta), §8 and formats.md §4 (exception dump), §9 (implementation modes),
§14 (environment). Resolution never raises for a config :func:`geplug.config.check` accepts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import attrs

from geplug import vocab
from geplug.config.defaults import (
    default_exception_dump,
    default_precision,
    default_soc,
    graph_run_mode,
)
from geplug.config.locations import exception_dump_location
from geplug.config.model import ProfilingOptions, SessionConfig
from geplug.config.options import OPTION_ORDER
from geplug.config.profiling_source import profiling_in_force
from geplug.config.resolve_profiling import effective_profiling
from geplug.config.resolved import ResolvedConfig, Source
from geplug.config.text import digits
from geplug.errors import ProfilingError
from geplug.products.schema import Product

__all__ = ["default_profiling_options", "resolve"]



NPU_COLLECT_DEBUG_ITEMS = ("dump_cce", "dump_loc", "ccec_g")
"""FE's internal op_debug_config with NPU_COLLECT_PATH and no config (options.md §7.2 lists
``dump_bin,dump_cce,dump_loc,ccec_g``; ``dump_bin`` keeps .o/.json, which the others keep too)."""


def default_profiling_options(product: Product, run_mode: int) -> ProfilingOptions:
    """The TF adapter's default JSON when profiling is on without options (2026 form, §3.1).

    geplug deviations, documented: ``aic_metrics`` is the product's default group (310b:
    PipelineExecuteUtilization), and ``training_trace`` is left out in online inference and on
    products without an iteration trace, where the real stack does not support it (R21).
    """
    fields: dict[str, str] = {"output": "./"}
    if run_mode == 1 and product.profiling.training_trace:
        fields["training_trace"] = "on"
    fields.update(task_time="on", hccl="on", aicpu="on",
                  aic_metrics=product.profiling.aic_metrics_default, msproftx="off")
    return ProfilingOptions(**fields)


def _int_env(env: Mapping[str, str], name: str) -> int | None:
    raw = (env.get(name) or "").strip()
    return int(raw) if digits(raw) else None


def resolve(
    config: SessionConfig,
    product: Product,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    soc: str | None = None,
) -> ResolvedConfig:
    """The effective configuration of ``config`` on ``product``, with ``sources``.

    ``env`` defaults to ``os.environ``, ``cwd`` to the current directory. Contract for the
    simulator: exactly one of ``precision_mode``/``precision_mode_v2`` is set afterwards (the
    user's, else ``precision_mode`` = the product default for the run mode). ``soc``: the SoC
    string the product was named by (``Ascend910B3``); an unset soc_version becomes it rather
    than the product's first SoC.
    """
    env = os.environ if env is None else env
    p = _Pass(config, product, env, os.path.abspath(os.getcwd() if cwd is None else cwd))
    run_mode = _run_mode(p)
    _precision(p, run_mode)
    profiling_output, profiling, profiling_error = _profiling(p, run_mode)
    dump_root = _dump(p)
    device_id, rank = _device(p)
    items, op_list, kernel_meta_dir = _op_debug(p)
    exc_level, exception_dir, exception_path = _exception_dump(p, device_id)
    by_type, by_node, impl_default = _implmode(p)
    mixlist = _mixlist(p)
    _compile_cache(p)
    p.fill("soc_version", default_soc(p.product, soc), Source.PRODUCT_DEFAULT)
    effective = attrs.evolve(p.c, **p.new)
    return ResolvedConfig(
        product=p.product.name,
        config=effective,
        sources=p.sources,
        run_mode="training" if run_mode == 1 else "inference",
        device_id=device_id,
        dump_root=dump_root,
        profiling_output=profiling_output,
        profiling=profiling,
        profiling_error=profiling_error,
        kernel_meta_dir=kernel_meta_dir,
        op_debug_items=items,
        op_debug_list=op_list,
        exception_dump_level=exc_level if exc_level in (0, 1, 2) else 0,
        exception_dump_path=exception_path,
        exception_dump_dir=exception_dir,
        impl_by_op_type=by_type,
        impl_by_node=by_node,
        impl_default=impl_default,
        enable_small_channel=effective.enable_small_channel == 1,
        mixlist_overrides=mixlist,
        rank=rank,
    )


class _Pass:
    """What every section of :func:`resolve` reads and writes: the config, the product, the
    environment, the directory, the effective values filled in (``new``) and their sources."""

    def __init__(self, config: SessionConfig, product: Product, env: Mapping[str, str],
                 cwd: str) -> None:
        self.c, self.product, self.env, self.cwd = config, product, env, cwd
        self.sources: dict[str, str] = {n: Source.USER for n in OPTION_ORDER
                                        if getattr(config, n) is not None}
        self.new: dict[str, Any] = {}

    def fill(self, name: str, value: Any, source: str) -> None:
        """Set option ``name`` to ``value`` (from ``source``) when the user left it unset."""
        if getattr(self.c, name) is None:
            self.new[name] = value
            self.sources[name] = source


def _run_mode(p: _Pass) -> int:
    """The graph_run_mode and what it forces (R29)."""
    run_mode, run_src = graph_run_mode(p.c, p.product)
    p.fill("graph_run_mode", run_mode, run_src)
    p.sources["run_mode"] = run_src
    # R29: the TF adapter forces enable_small_channel = 1 in online inference; ATC and GE
    # default to 0 (ATC docs, --enable_small_channel); a value the user set is kept
    if p.c.front_end == "tf" and run_mode == 0:
        p.fill("enable_small_channel", 1, Source.RUN_MODE_DEFAULT)
    else:
        p.fill("enable_small_channel", 0, Source.BUILTIN_DEFAULT)
    return run_mode


def _precision(p: _Pass, run_mode: int) -> None:
    """Precision_mode default (§5.3)."""
    # precision (§5.3)
    if p.c.precision_mode is None and p.c.precision_mode_v2 is None:
        p.fill("precision_mode", default_precision(p.product, run_mode, p.c.front_end),
             Source.PRODUCT_DEFAULT)
    elif p.c.precision_mode is not None and p.c.precision_mode_v2 is not None:
        p.new["precision_mode_v2"] = None  # invalid (E10056); keep v1 so the contract holds
        p.sources.pop("precision_mode_v2", None)


def _profiling(p: _Pass, run_mode: int) -> tuple[str | None, Any, str | None]:
    """Profiling in force, its output directory and its typed values (§3.1, §3.3, §14)."""
    # profiling (§3.1, §14): one rule with check (geplug.config.profiling_source)
    force = profiling_in_force(p.c, p.env)
    profiling_output = None
    if force.on != bool(p.c.profiling_mode) or p.c.profiling_mode is None:
        p.new["profiling_mode"] = force.on
        p.sources["profiling_mode"] = force.mode_source
    if force.on:
        opts = force.options
        opts_src = force.options_source
        if opts is None or not force.usable:
            opts = attrs.evolve(default_profiling_options(p.product, run_mode), output=None)
            opts_src = opts_src if force.default else Source.BUILTIN_DEFAULT
        p.sources["profiling_options"] = opts_src
        if opts.output:
            profiling_output = os.path.abspath(os.path.join(p.cwd, opts.output))
            out_src = opts_src
        elif p.env.get("ASCEND_WORK_PATH"):
            profiling_output = os.path.abspath(os.path.join(p.cwd, p.env["ASCEND_WORK_PATH"]))
            out_src = Source.env("ASCEND_WORK_PATH")
        else:
            profiling_output, out_src = p.cwd, Source.BUILTIN_DEFAULT
        opts = attrs.evolve(opts, output=profiling_output)
        p.new["profiling_options"] = opts
        p.sources["profiling_output"] = out_src
        try:
            typed, typed_sources = effective_profiling(opts, p.product, profiling_output,
                                                       opts_src, out_src)
        except ProfilingError as exc:
            p.sources["profiling_error"] = opts_src
            return profiling_output, None, str(exc)
        p.sources["profiling"] = opts_src
        p.sources.update(typed_sources)
        return profiling_output, typed, None
    if p.c.profiling_options is not None:
        p.sources["profiling_options"] = Source.USER  # kept as written; not in force
    return profiling_output, None, None


def _dump(p: _Pass) -> str | None:
    """Dump defaults and the dump root (§4)."""
    # dump (§4)
    p.fill("enable_dump", False, Source.BUILTIN_DEFAULT)
    p.fill("enable_dump_debug", False, Source.BUILTIN_DEFAULT)
    p.fill("dump_mode", "output", Source.BUILTIN_DEFAULT)
    p.fill("dump_debug_mode", "all", Source.BUILTIN_DEFAULT)
    p.fill("dump_data", "tensor", Source.BUILTIN_DEFAULT)
    dump_root = None
    if (p.c.enable_dump or p.c.enable_dump_debug) and p.c.dump_path:
        dump_root = os.path.abspath(os.path.join(p.cwd, p.c.dump_path))
        p.sources["dump_root"] = Source.USER
    return dump_root


def _device(p: _Pass) -> tuple[int, Any]:
    """The device id (§14: rank table > ASCEND_DEVICE_ID > DEVICE_ID > 0), rank info."""
    # device id (§14: rank table > ASCEND_DEVICE_ID > DEVICE_ID > 0)
    device_id, dev_src = 0, Source.BUILTIN_DEFAULT
    table_device = None
    from geplug.config.rank import read_rank_info
    from geplug.errors import GeplugError

    try:
        rank = read_rank_info(p.env, p.product)  # the one read of the rank table
    except GeplugError:
        rank = None  # the check says why
    if rank is not None:
        p.sources["rank"] = next((Source.env(name) for name in ("RANK_TABLE_FILE", "RANK_ID")
                                  if p.env.get(name)), Source.BUILTIN_DEFAULT)
    if p.env.get("RANK_TABLE_FILE") and rank is not None:
        table_device = rank.device_id
    if table_device is not None:
        device_id, dev_src = table_device, Source.env("RANK_TABLE_FILE")
    elif _int_env(p.env, "ASCEND_DEVICE_ID") is not None:
        device_id = _int_env(p.env, "ASCEND_DEVICE_ID") or 0
        dev_src = Source.env("ASCEND_DEVICE_ID")
    elif _int_env(p.env, "DEVICE_ID") is not None:
        device_id, dev_src = _int_env(p.env, "DEVICE_ID") or 0, Source.env("DEVICE_ID")
    p.sources["device_id"] = dev_src
    return device_id, rank


def _op_debug(p: _Pass) -> tuple[tuple[str, ...], tuple[str, ...], str | None]:
    """Op_debug_config items and the kernel_meta directory (§7, formats.md §5)."""
    # operator debug (§7, formats.md §5)
    p.fill("op_debug_level", 0, Source.BUILTIN_DEFAULT)
    level = p.c.op_debug_level or 0
    items: tuple[str, ...] = ()
    op_list: tuple[str, ...] = ()
    p.sources["op_debug_items"] = p.sources["op_debug_list"] = Source.BUILTIN_DEFAULT
    if p.c.op_debug_config is not None:
        from geplug.config.files import read_debug_config

        parsed, _ = read_debug_config(os.path.join(p.cwd, p.c.op_debug_config))
        if parsed is not None:
            items, op_list = parsed.items, parsed.op_list
        p.sources["op_debug_items"] = p.sources["op_debug_list"] = Source.USER
    collect = p.env.get("NPU_COLLECT_PATH") or ""
    if collect and p.c.op_debug_config is None:
        items = NPU_COLLECT_DEBUG_ITEMS
        p.sources["op_debug_items"] = Source.env("NPU_COLLECT_PATH")
    kernel_meta_dir = None
    if level != 0 or p.c.op_debug_config is not None or collect:
        if (level != 0 or p.c.op_debug_config is not None) and p.c.debug_dir:
            base, km_src = os.path.join(p.cwd, p.c.debug_dir), Source.USER
        elif p.env.get("ASCEND_WORK_PATH"):
            base, km_src = os.path.join(p.cwd, p.env["ASCEND_WORK_PATH"]), \
                Source.env("ASCEND_WORK_PATH")
        else:
            base, km_src = p.cwd, Source.BUILTIN_DEFAULT
        kernel_meta_dir = os.path.abspath(os.path.join(base, "kernel_meta"))
        p.sources["kernel_meta_dir"] = km_src
    return items, op_list, kernel_meta_dir


def _compile_cache(p: _Pass) -> None:
    """AI Cores in use (the product's ``compute.ai_cores`` unless aicore_num is set),
    buffer_optimize (``l2_optimize``, ATC's default on every family) and the operator
    compile cache: mode ``disable`` (CANN ATC/GE docs; torch_npu's own default is
    ``enable``, its ACL_OP_COMPILER_CACHE_MODE docs), directory ``ASCEND_CACHE_PATH`` else
    ``$HOME/atc_data`` (ATC docs: --op_compiler_cache_dir > ASCEND_CACHE_PATH > default)."""
    p.fill("aicore_num", p.product.compute.ai_cores, Source.PRODUCT_DEFAULT)
    p.fill("buffer_optimize", vocab.BUFFER_OPTIMIZE_DEFAULT, Source.BUILTIN_DEFAULT)
    p.fill("op_compiler_cache_mode", "enable" if p.c.front_end == "torch" else "disable",
           Source.BUILTIN_DEFAULT)
    if p.env.get("ASCEND_CACHE_PATH"):
        p.fill("op_compiler_cache_dir", os.path.join(p.cwd, p.env["ASCEND_CACHE_PATH"]),
               Source.env("ASCEND_CACHE_PATH"))
    else:
        home = p.env.get("HOME") or os.path.expanduser("~")
        p.fill("op_compiler_cache_dir", os.path.join(home, "atc_data"), Source.BUILTIN_DEFAULT)


def _exception_dump(p: _Pass, device_id: int) -> tuple[int, str | None, str | None]:
    """The exception dump level and directory (§8, formats.md §4)."""
    # exception dump (§8, formats.md §4): one rule, shared with the dump writer
    p.fill("enable_exception_dump", default_exception_dump(p.c.front_end),
         Source.front_end(p.c.front_end))
    option_level = p.new.get("enable_exception_dump", p.c.enable_exception_dump)
    location = exception_dump_location(
        option_level if option_level in (0, 1, 2) else 0, p.env, device_id, p.cwd)
    if location.level_source:
        p.new["enable_exception_dump"] = location.level
        p.sources["enable_exception_dump"] = location.level_source
    exc_level = location.level
    p.sources["exception_dump_level"] = p.sources["enable_exception_dump"]
    exception_dir, exception_path = location.directory, location.path
    if exception_dir is not None:
        p.sources["exception_dump_dir"] = location.root_source
        p.sources["exception_dump_path"] = location.root_source
    return exc_level, exception_dir, exception_path


def _implmode(p: _Pass) -> tuple[dict[str, str], dict[str, str], str]:
    """Implementation modes per op type and node (§9)."""
    # implementation modes (§9)
    imp = p.product.implmode
    p.fill("op_select_implmode", imp.default_mode, Source.PRODUCT_DEFAULT)
    by_type: dict[str, str] = {}
    by_node: dict[str, str] = {}
    impl_default = imp.default_mode
    if p.c.op_precision_mode is not None:
        from geplug.config.files import read_precision_ini

        ini, _ = read_precision_ini(os.path.join(p.cwd, p.c.op_precision_mode), imp.ini_values)
        if ini is not None:
            by_type, by_node = dict(ini.by_op_type), dict(ini.by_node)
        p.sources["impl_by_op_type"] = p.sources["impl_by_node"] = Source.USER
        p.sources["impl_default"] = Source.PRODUCT_DEFAULT
    else:
        mode = p.c.op_select_implmode or imp.default_mode
        mode_src = Source.USER if p.c.op_select_implmode else Source.PRODUCT_DEFAULT
        if mode.endswith("_for_all"):
            by_type = dict(imp.builtin_lists.get(mode, {}))
            impl_default = mode[: -len("_for_all")]
        elif p.c.optypelist_for_implmode:
            by_type = {t.strip(): mode for t in p.c.optypelist_for_implmode.split(",") if t.strip()}
        else:
            by_type = dict(imp.builtin_lists.get(mode, {}))
        p.sources["impl_by_op_type"] = mode_src
        p.sources["impl_by_node"] = Source.BUILTIN_DEFAULT
        p.sources["impl_default"] = mode_src if mode.endswith("_for_all") else \
            Source.PRODUCT_DEFAULT
    return by_type, by_node, impl_default


def _mixlist(p: _Pass) -> dict[str, bool | None]:
    """The final list of every op modify_mixlist names (§5.5)."""
    # mixed-precision list changes (§5.5)
    mixlist: dict[str, bool | None] = {}
    p.sources["mixlist_overrides"] = Source.BUILTIN_DEFAULT
    if p.c.modify_mixlist is not None:
        from geplug.config.files import mixlist_names, mixlist_state, read_mixlist

        edits, _ = read_mixlist(os.path.join(p.cwd, p.c.modify_mixlist))
        flag = {"white": True, "black": False, "grey": None}
        for op_type in mixlist_names(edits or {}):
            reduce = p.product.op(op_type).precision_reduce
            builtin = "white" if reduce is True else "black" if reduce is False else "grey"
            mixlist[op_type] = flag[mixlist_state(builtin, op_type, edits or {})]
        p.sources["mixlist_overrides"] = Source.USER
    return mixlist
