"""Every rule of options.md (§3-11, policy §12) applied to a config for one product.

:func:`check` returns all problems at once. Product rules read the product declaration
(``geplug/products/schema.py``); nothing here knows a product by name.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from typing import Any

from geplug.config.defaults import (
    PRECISION_MODES,
    PRECISION_MODES_V2,
    default_precision,
    graph_run_mode,
)
from geplug.config.model import ProfilingOptions, SessionConfig
from geplug.config.problems import Problem
from geplug.products.schema import Product

__all__ = ["check"]


def _digits(text: str) -> bool:
    """ASCII decimal digits only (``str.isdigit`` also accepts superscripts int() rejects)."""
    return text.isascii() and text.isdigit()

MIXED_V1 = ("allow_mix_precision", "allow_mix_precision_fp16", "allow_mix_precision_bf16")
MIXED_V2 = ("mixed_float16", "mixed_bfloat16", "mixed_hif8")
BF16_MODES = ("allow_mix_precision_bf16", "allow_fp32_to_bf16", "mixed_bfloat16")
TORCH_PRECISION = ("allow_fp32_to_fp16", "must_keep_origin_dtype")
SWITCHES = ("hccl", "aicpu", "l2", "msproftx", "runtime_api", "instr_profiling")
LEVELS = {"task_trace": ("on", "off", "l0", "l1", "l2"), "task_time": ("on", "off", "l0", "l1"),
          "ge_api": ("off", "l0", "l1")}
FREQ_KEYS = ("sys_hardware_mem_freq", "sys_io_sampling_freq", "sys_interconnection_freq",
             "dvpp_freq", "instr_profiling_freq", "host_sys_usage_freq")
INSTR_EXCLUSIVE = ("training_trace", "task_trace", "hccl", "aicpu", "fp_point", "bp_point",
                   "aic_metrics", "aiv_metrics", "l2", "task_time", "runtime_api")
FORBIDDEN_PATH_CHARS = "\n\f\r\b\t\v\x7f"
STORAGE_RE = re.compile(r"^([0-9]{1,10})MB$")
STEP_RE = re.compile(r"^([0-9]+)(?:-([0-9]+))?$")
INT32_MAX = 2**31 - 1
DEPRECATED_TF = {
    "op_debug_level": "[warning][tf_adapter] Option 'op_debug_level' is deprecated and will be "
                      "removed in future version. Please use 'op_debug_config' instead.",
    "op_select_implmode": "[warning][tf_adapter] Option 'op_select_implmode' is deprecated and "
                          "will be removed in future version. Please use 'op_precision_mode' "
                          "instead.",
    "optypelist_for_implmode": "Option 'optypelist_for_implmode' is deprecated; use an "
                               "op_precision_mode ini instead.",
}


class _Ctx:
    """The state one check run shares between the rule groups."""

    def __init__(self, config: SessionConfig, product: Product, env: Mapping[str, str],
                 cwd: str) -> None:
        self.c = config
        self.p = product
        self.env = env
        self.cwd = cwd
        self.out: list[Problem] = []
        self.run_mode, _ = graph_run_mode(config, product)

    def err(self, option: str, value: Any, message: str, hint: str = "", code: str = "") -> None:
        self.out.append(Problem(option=option, value=value, severity="error", message=message,
                                hint=hint, code=code))

    def warn(self, option: str, value: Any, message: str, hint: str = "", code: str = "") -> None:
        self.out.append(Problem(option=option, value=value, severity="warning", message=message,
                                hint=hint, code=code))

    def path(self, value: str) -> str:
        return value if os.path.isabs(value) else os.path.join(self.cwd, value)


def check(
    config: SessionConfig,
    product: Product,
    *,
    env: Mapping[str, str] | None = None,
    for_initialize_system: bool = False,
    cwd: str | None = None,
) -> list[Problem]:
    """Every problem of ``config`` on ``product``, errors and warnings, never just the first.

    ``env``: the environment the run will see (default ``os.environ``; NPU_COLLECT_PATH,
    RANK_TABLE_FILE... change the rules). ``for_initialize_system``: also check that the
    product supports ``initialize_system`` (options.md §15.1, R28). ``cwd``: the directory
    relative paths are resolved against (default the current one).
    """
    ctx = _Ctx(config, product, os.environ if env is None else env,
               os.getcwd() if cwd is None else cwd)
    _run_mode(ctx)
    _profiling(ctx)
    _dump(ctx)
    _precision(ctx)
    _debug(ctx)
    _exception_dump(ctx)
    _implmode(ctx)
    _soc(ctx)
    _environment(ctx)
    if for_initialize_system:
        _initialize_system(ctx)
    return ctx.out


# -- §6 graph_run_mode --------------------------------------------------------------------


def _run_mode(ctx: _Ctx) -> None:
    value = ctx.c.graph_run_mode
    if value is None:
        return
    if value not in (0, 1):
        ctx.err("graph_run_mode", value, "graph_run_mode must be 0 (online inference) or 1 "
                "(training)", "set graph_run_mode = 0 or 1",
                code="graph_run_mode value must be 0 or 1")
    elif value == 1 and not ctx.p.runtime.training:
        ctx.err("graph_run_mode", value, f"{ctx.p.display_name} has no training "
                "(runtime.training = false)", "set graph_run_mode = 0 (online inference)")


# -- §3 profiling -------------------------------------------------------------------------


def _profiling(ctx: _Ctx) -> None:
    opts = ctx.c.profiling_options
    if opts is None:
        return
    if ctx.c.profiling_mode is not True:
        ctx.warn("profiling_options", "...", "profiling_options has no effect while "
                 "profiling_mode is not true", "set profiling_mode = true to collect")
    items = opts.items().items()
    prof = ctx.p.profiling
    for key, value in items:
        path = f"profiling_options.{key}"
        if key == "output":
            _output_path(ctx, path, value)
        elif key == "storage_limit":
            _storage_limit(ctx, path, value)
        elif key == "training_trace":
            if value != "" and value != "on":
                ctx.err(path, value, "training_trace may only be \"on\"; GE rejects every "
                        "other non-empty value", "omit training_trace to disable it",
                        code="E10001")
            elif value == "on" and (ctx.run_mode == 0 or not prof.training_trace):
                ctx.err(path, value, "training_trace is not supported in online inference"
                        if ctx.run_mode == 0 else
                        f"{ctx.p.display_name} has no iteration trace (no training)",
                        "remove training_trace (online inference supports task_trace and "
                        "aicpu)")
        elif key in LEVELS:
            if value not in LEVELS[key]:
                allowed = ", ".join(LEVELS[key])
                ctx.err(path, value, f"The switch {key} should be set in range [{allowed}].",
                        f"use one of {allowed}")
        elif key in SWITCHES:
            if value not in ("on", "off"):
                ctx.err(path, value, f"The switch {key} should be set to on or off.",
                        'use "on" or "off"')
            elif key == "hccl" and value == "on":
                ctx.warn(path, value, "hccl is deprecated and will be removed",
                         "use task_time to collect communication data")
            elif key == "instr_profiling" and value == "on" and prof.instr_profiling != "switch":
                how = ("use instr_profiling_freq instead" if prof.instr_profiling == "frequency"
                       else "remove it: instruction profiling is unsupported here")
                ctx.err(path, value, f"the instr_profiling switch is not supported on "
                        f"{ctx.p.display_name}", how)
        elif key in ("aic_metrics", "aiv_metrics"):
            _aic_metrics(ctx, path, value)
        elif key == "llc_profiling":
            if value not in ("read", "write"):
                ctx.err(path, value, "llc_profiling should be in range [read, write].",
                        'use "read" or "write"')
        elif key in FREQ_KEYS:
            _frequency(ctx, key, path, value)
        elif key in ("host_sys", "host_sys_usage"):
            _host_list(ctx, key, path, value)
    _profiling_cross(ctx, opts)


def _output_path(ctx: _Ctx, path: str, value: str) -> None:
    bad = sorted({repr(ch) for ch in value if ch in FORBIDDEN_PATH_CHARS})
    if bad:
        ctx.err(path, value, f"Output path is invalid: it contains {', '.join(bad)}",
                "remove \\n \\f \\r \\b \\t \\v and \\u007F from the path", code="EK0003")
        return
    if value == "":
        return
    full = os.path.abspath(ctx.path(value))
    if len(full) > 1024:
        ctx.err(path, value, "Argument --output is invalid because of exceeds the maximum "
                "length of 1024.", "use a shorter output directory", code="EK0003")
        return
    if os.path.exists(full):
        if not os.path.isdir(full):
            ctx.err(path, value, f"Output path is invalid: {full!r} exists and is not a "
                    "directory", "point output at a directory (it is created if missing)",
                    code="EK0003")
        elif not os.access(full, os.W_OK | os.X_OK):
            ctx.err(path, value, f"Output path is invalid: {full!r} is not writable",
                    "choose a directory you can write", code="EK0003")


def _storage_limit(ctx: _Ctx, path: str, value: str) -> None:
    code = "EK0003"
    text = "storage-limit should be in range [200,4294967295], end with MB"
    match = STORAGE_RE.match(value)
    if not match:
        why = ("length is less than 3" if len(value) < 3 else "not end with MB"
               if not value.endswith("MB") else "invalid numbers")
        ctx.err(path, value, f"{text} (storage_limit:{value}, {why})",
                'write digits then "MB", e.g. "200MB"', code=code)
        return
    number = int(match.group(1))
    if not 200 <= number <= 4294967295:
        ctx.err(path, value, f"{text} (storage_limit:{value}, valid range is 200~4294967295)",
                "use a value between 200MB and 4294967295MB", code=code)


def _aic_metrics(ctx: _Ctx, path: str, value: str) -> None:
    prof = ctx.p.profiling
    names = list(prof.aic_metrics) + list(prof.aic_metrics_aliases)
    if value.startswith("Custom:"):
        _custom_metrics(ctx, path, value)
        return
    if value == "":
        return
    if value not in names:
        listing = "|".join([*prof.aic_metrics, "Custom:xx,xx"])
        hint = f"{ctx.p.display_name} supports: {', '.join(prof.aic_metrics)}"
        ctx.err(path, value, f"aic-metrics[{value}] is invalid, please set metrics in range "
                f"[{listing}].", hint)


def _custom_metrics(ctx: _Ctx, path: str, value: str) -> None:
    prefix = "aic-metrics Custom"
    if len(value) > 70:
        ctx.err(path, value, "The Custom metric parameter length exceeds max length value of 70.",
                "list at most 8 events")
        return
    events = [e.strip() for e in value[len("Custom:"):].lower().split(",")]
    if len(events) > 8:
        ctx.err(path, value, f"Custom PMU events size({len(events)}) is bigger than 8",
                "list at most 8 events")
    seen: set[int] = set()
    for event in events:
        try:
            number = int(event, 16) if event.startswith("0x") else int(event, 10)
            if not event or not (event.startswith("0x") or _digits(event)):
                raise ValueError(event)
        except ValueError:
            ctx.err(path, value, f"{prefix} event {event!r}: only hexadecimal or decimal "
                    "parameters are allowed.", "write events as 0x1b or 27")
            continue
        if not 0x1 <= number <= 0x6E:
            ctx.err(path, value, f"{prefix} event {event!r}: valid event range is [0x1, 0x6e].",
                    "use events between 0x1 and 0x6e")
        elif number in seen:
            ctx.err(path, value, f"{prefix} event {event!r}: it is set twice.",
                    "list each event once")
        seen.add(number)


def _frequency(ctx: _Ctx, key: str, path: str, value: str) -> None:
    if value in ("", "0"):
        return
    dashed = key.replace("_", "-")
    if not _digits(value):
        ctx.err(path, value, f"{dashed} is invalid. It should be nonnegative integer.",
                'write a number as a string, e.g. "50"', code="EK0003")
        return
    prof = ctx.p.profiling
    if key == "instr_profiling_freq" and prof.instr_profiling != "frequency":
        how = ("use the instr_profiling switch instead" if prof.instr_profiling == "switch"
               else "remove it: instruction profiling is unsupported here")
        ctx.err(path, value, f"instr_profiling_freq is not supported on {ctx.p.display_name}",
                how)
        return
    rng = prof.frequencies.get(key)
    if rng is None:
        ctx.err(path, value, f"{key} is not supported on {ctx.p.display_name}",
                f"remove {key}")
        return
    number = int(value)
    top = max([rng.max, *rng.item_max.values()])
    if not rng.min <= number <= top:
        ctx.err(path, value, f"{dashed} should be in range [{rng.min},{rng.max}].",
                f"use a value between {rng.min} and {rng.max}", code="EK0003")
    elif number > rng.max:
        items = ", ".join(sorted(rng.item_max))
        ctx.warn(path, value, f"only {items} sample up to {top}; every other item is capped "
                 f"at {rng.max}", f"use at most {rng.max} to sample all items at this rate")


def _host_list(ctx: _Ctx, key: str, path: str, value: str) -> None:
    allowed = ctx.p.profiling.host_sys if key == "host_sys" else ("cpu", "mem")
    if value.strip() == "":
        ctx.err(path, value, f"Config: {key} is empty.", f"list items from {', '.join(allowed)}")
        return
    for item in (v.strip() for v in value.split(",")):
        if item not in allowed:
            ctx.err(path, value, f"The value: {item} of {key} is not support. Please input in "
                    f"the range of '{'|'.join(allowed)}'.", f"use items from {', '.join(allowed)}")


def _profiling_cross(ctx: _Ctx, opts: ProfilingOptions) -> None:
    freq = opts.instr_profiling_freq
    if freq not in (None, "", "0") and ctx.p.profiling.instr_profiling == "frequency":
        clash = [k for k in INSTR_EXCLUSIVE
                 if (getattr(opts, k) or "") not in ("", "off")]
        if clash:
            ctx.err("profiling_options.instr_profiling_freq", freq,
                    "instr_profiling_freq cannot be combined with " + ", ".join(clash),
                    "remove those keys, or remove instr_profiling_freq",
                    code="[Ge opt] Profiling fails to start because instrProfilingFreq is set")
    if (ctx.run_mode == 1 and ctx.c.profiling_mode is True and opts.is_on("task_trace")
            and opts.training_trace != "on" and ctx.p.profiling.training_trace):
        ctx.err("profiling_options.training_trace", opts.training_trace,
                "in training profiling, task_trace on requires training_trace on",
                'add "training_trace": "on"')


# -- §4 dump ------------------------------------------------------------------------------


def _dump(ctx: _Ctx) -> None:
    c = ctx.c
    enabled = c.enable_dump is True or c.enable_dump_debug is True
    if c.enable_dump is True and c.enable_dump_debug is True:
        ctx.err("enable_dump", True, "ge.exec.enableDump and ge.exec.enableDumpDebug cannot be "
                "set to 1 at the same time.", "enable either the data dump or overflow "
                "detection (enable_dump_debug), not both", code="E10001")
    if enabled:
        which = "enable_dump" if c.enable_dump else "enable_dump_debug"
        if not c.dump_path:
            ctx.err("dump_path", c.dump_path, f"if use dump function, dump_path must be set "
                    f"({which} = true)", "set dump_path to an existing writable directory",
                    code="E10058")
        else:
            _dump_path(ctx, c.dump_path)
    elif c.dump_path:
        ctx.warn("dump_path", c.dump_path, "dump_path is set but neither enable_dump nor "
                 "enable_dump_debug is true; nothing is dumped")
    if c.dump_step is not None:
        _dump_step(ctx, c.dump_step)
        if ctx.run_mode == 0:
            ctx.warn("dump_step", c.dump_step, "dump_step applies to training only")
    if c.dump_mode is not None and c.dump_mode not in ("input", "output", "all"):
        ctx.err("dump_mode", c.dump_mode, "dump mode should be one of the list:[input, output, "
                "all]", "use input, output or all", code="E10001")
    if c.dump_debug_mode is not None:
        modes = ("aicore_overflow", "atomic_overflow", "all")
        allowed = ctx.p.dump.debug_modes
        if c.dump_debug_mode not in modes:
            ctx.err("dump_debug_mode", c.dump_debug_mode, "dump debug mode should be one of the "
                    "list:[aicore_overflow, atomic_overflow, all]",
                    "use " + ", ".join(allowed or modes), code="E10001")
        elif c.dump_debug_mode not in allowed:
            ctx.err("dump_debug_mode", c.dump_debug_mode,
                    f"{ctx.p.display_name} supports dump_debug_mode "
                    + (", ".join(allowed) if allowed else "no value (no overflow detection)"),
                    ("use " + " or ".join(allowed)) if allowed else "remove dump_debug_mode")
    if c.enable_dump_debug is True and ctx.run_mode == 0:
        ctx.warn("enable_dump_debug", True, "overflow detection applies to training only")
    if c.dump_data is not None and c.dump_data not in ("tensor", "stats"):
        ctx.err("dump_data", c.dump_data, "dump_data should be 'tensor' or 'stats'.",
                "use tensor or stats")


def _dump_path(ctx: _Ctx, value: str) -> None:
    full = ctx.path(value)
    if not os.path.exists(full):
        ctx.err("dump_path", value, f"the path {value} is invalid. (it does not exist)",
                "create the directory first (mkdir -p), on the host or in the container",
                code="E10001")
    elif not os.path.isdir(full):
        ctx.err("dump_path", value, f"the path {value} is not directory.",
                "point dump_path at a directory", code="E10001")
    elif not os.access(full, os.R_OK | os.W_OK | os.X_OK):
        ctx.err("dump_path", value, f"the path {value} does't have read, write permissions.",
                "grant the running user read and write permission", code="E10001")


def _dump_step(ctx: _Ctx, value: str) -> None:
    example = "Valid format: '0|5|10|50-100'."
    items = value.split("|")
    if len(items) > 100:
        ctx.err("dump_step", value, "dump_step only support dump <= 100 sets of data",
                "list at most 100 items", code="E10001")
        return
    for item in items:
        match = STEP_RE.match(item.strip())
        if not match or item != item.strip():
            ctx.err("dump_step", value, f"dump_step string style is error (item {item!r}); "
                    f"Incorrect parameter format. {example}",
                    "items are N or N-M joined by |, e.g. 0|5|10-20", code="E10001")
            return
        first, second = int(match.group(1)), match.group(2)
        if first > INT32_MAX or (second is not None and int(second) > INT32_MAX):
            ctx.err("dump_step", value, f"step {item!r} is larger than the int32 maximum",
                    "use smaller step numbers", code="E10001")
            return
        if second is not None and first >= int(second):
            ctx.err("dump_step", value, f"in range steps, the first step is >= second step "
                    f"({item!r}), correct example:'0|5|10-20'",
                    "write ranges as N-M with N < M", code="E10001")
            return


# -- §5 precision -------------------------------------------------------------------------


def _precision(ctx: _Ctx) -> None:
    c, prec = ctx.c, ctx.p.precision
    atc = c.front_end == "atc"
    if c.precision_mode is not None and c.precision_mode_v2 is not None:
        ctx.err("precision_mode_v2", c.precision_mode_v2, "Cannot configure both parameters "
                "precision_mode and precision_mode_v2 simultaneously.",
                "keep only one of precision_mode and precision_mode_v2", code="E10056")
    for option, value, every, allowed in (
        ("precision_mode", c.precision_mode, PRECISION_MODES, prec.modes),
        ("precision_mode_v2", c.precision_mode_v2, PRECISION_MODES_V2, prec.modes_v2),
    ):
        if value is None:
            continue
        ok = tuple(allowed) + (tuple(prec.atc_only_modes) if atc else ())
        if value not in every:
            close = difflib.get_close_matches(value, ok, n=1, cutoff=0.6)
            hint = (f"did you mean {close[0]!r}? " if close else "") + "use one of " + \
                ", ".join(ok)
            ctx.err(option, value, f"option {option} value '{value}' is invalid, it should be "
                    f"one of the list:{list(ok)}", hint, code="E10001")
        elif value not in ok:
            if value in prec.atc_only_modes:
                ctx.err(option, value, f"{value} is accepted only by ATC on "
                        f"{ctx.p.display_name}", "compile with ATC or choose another mode",
                        code="E10001")
            elif value in BF16_MODES:
                ctx.err(option, value, "Current soc not support dtype of BFloat16",
                        "use " + ", ".join(ok), code="E10001")
            else:
                ctx.err(option, value, f"{value} is not supported on {ctx.p.display_name}",
                        "use one of " + ", ".join(ok), code="E10001")
    if c.precision_mode == "force_fp16" and ctx.run_mode == 1:
        ctx.err("precision_mode", "force_fp16", "force_fp16 applies to online inference only "
                "(graph_run_mode 0)", "use graph_run_mode = 0, or another precision mode")
    if c.front_end == "torch" and c.precision_mode is not None and \
            c.precision_mode not in TORCH_PRECISION:
        ctx.err("precision_mode", c.precision_mode, "value of ACL_PRECISION_MODE should be in "
                "['allow_fp32_to_fp16', 'must_keep_origin_dtype']",
                "use allow_fp32_to_fp16 or must_keep_origin_dtype")
    if c.modify_mixlist is not None:
        effective = c.precision_mode_v2 or c.precision_mode or default_precision(
            ctx.p, ctx.run_mode, c.front_end)
        if effective not in MIXED_V1 + MIXED_V2:
            ctx.err("modify_mixlist", c.modify_mixlist, "modify_mixlist is assigned, please "
                    "ensure that precision_mode is assigned to 'allow_mix_precision', "
                    f"'allow_mix_precision_fp16' or 'allow_mix_precision_bf16' (effective: "
                    f"{effective})", "set a mixed precision mode or remove modify_mixlist",
                    code="E10001")
        from geplug.config.files import read_mixlist

        _, problems = read_mixlist(ctx.path(c.modify_mixlist))
        ctx.out.extend(problems)


# -- §7 operator debug --------------------------------------------------------------------


def _debug(ctx: _Ctx) -> None:
    c = ctx.c
    level = c.op_debug_level
    if level is not None:
        if level not in range(5):
            ctx.err("op_debug_level", level, f"Value {level} for parameter op_debug_level is "
                    "invalid. Reason: The value is not within the range of values. The valid "
                    "range is 0, 1, 2, 3, 4.", "use 0-4 (training: 0 or 3)", code="E10001")
        if c.front_end == "tf":
            ctx.warn("op_debug_level", level, DEPRECATED_TF["op_debug_level"],
                     "use op_debug_config")
    items: tuple[str, ...] = ()
    if c.op_debug_config is not None:
        from geplug.config.files import read_debug_config

        parsed, problems = read_debug_config(ctx.path(c.op_debug_config))
        ctx.out.extend(problems)
        items = parsed.items if parsed is not None else ()
    if "oom" in items:
        if level == 2:
            ctx.err("op_debug_config", c.op_debug_config, "op_debug_level 2 (ccec -O0 -g) "
                    "together with oom ends in an AI Core error at run time",
                    "remove oom, or use op_debug_level 1",
                    code="there is an aivec error exception, error code = 0x4")
        if "ccec_O0" in items:
            ctx.err("op_debug_config", c.op_debug_config, "ccec_O0 together with oom ends in "
                    "an AI Core error at run time", "remove oom or ccec_O0",
                    code="there is an aivec error exception, error code = 0x4")
        if ctx.env.get("NPU_COLLECT_PATH"):
            ctx.err("op_debug_config", c.op_debug_config, "oom is not allowed while "
                    "NPU_COLLECT_PATH is set", "remove oom or unset NPU_COLLECT_PATH")
    if c.debug_dir is not None:
        full = ctx.path(c.debug_dir)
        if os.path.exists(full) and not os.path.isdir(full):
            ctx.err("debug_dir", c.debug_dir, f"{c.debug_dir!r} exists and is not a directory",
                    "point debug_dir at a directory")
        if (level or 0) == 0 and c.op_debug_config is None:
            ctx.warn("debug_dir", c.debug_dir, "debug_dir has no effect while op_debug_level "
                     "is 0 and no op_debug_config is set (no kernel_meta is produced)",
                     "set op_debug_level or op_debug_config, or remove debug_dir")


# -- §8 enable_exception_dump -------------------------------------------------------------


def _exception_dump(ctx: _Ctx) -> None:
    value = ctx.c.enable_exception_dump
    if value is None:
        return
    if value not in (0, 1, 2):
        ctx.err("enable_exception_dump", value, "enable_exception_dump should be one of 0, 1 "
                "and 2.", "use 0 (off), 1 (normal, L1) or 2 (lite, L0)")
        return
    if ctx.env.get("NPU_COLLECT_PATH") and value != 1:
        ctx.warn("enable_exception_dump", value, "NPU_COLLECT_PATH is set: the normal (L1) "
                 "exception dump is used whatever this option says",
                 "unset NPU_COLLECT_PATH to use this value")
    if value == 1 and (ctx.c.enable_dump or ctx.c.enable_dump_debug):
        ctx.warn("enable_exception_dump", value, "with a data or overflow dump on, dynamic-"
                 "shape networks get only the exception dump; static-shape networks get both")


# -- §9 implementation mode ---------------------------------------------------------------


def _implmode(ctx: _Ctx) -> None:
    c, imp = ctx.c, ctx.p.implmode
    mode = c.op_select_implmode
    if mode is not None:
        if mode not in imp.select_values:
            hint = "use one of " + ", ".join(imp.select_values)
            if mode.startswith("enable_"):
                hint = f"{mode} belongs in an op_precision_mode ini; " + hint
            ctx.err("op_select_implmode", mode, "op select impl mode should be one of the list:"
                    f"[{', '.join(imp.select_values)}]", hint, code="E10001")
        if c.front_end in ("tf", "torch"):
            ctx.warn("op_select_implmode", mode, DEPRECATED_TF["op_select_implmode"],
                     "use op_precision_mode")
    types = c.optypelist_for_implmode
    if types is not None:
        if mode is None:
            ctx.err("optypelist_for_implmode", types, "when use optypelist_for_implmode, "
                    "op_select_implmode must be set.", "set op_select_implmode too",
                    code="E10001")
        elif mode.endswith("_for_all"):
            ctx.warn("optypelist_for_implmode", types, f"ignored with op_select_implmode = "
                     f"{mode} (the _for_all modes apply their own lists)",
                     "use high_precision or high_performance to restrict to these types")
        for entry in (t.strip() for t in types.split(",")):
            if entry not in imp.optypelist_allowed:
                ctx.err("optypelist_for_implmode", types, f"op type {entry!r} cannot be "
                        "listed here", "allowed: " + ", ".join(imp.optypelist_allowed))
        if c.front_end == "tf":
            ctx.warn("optypelist_for_implmode", types, DEPRECATED_TF["optypelist_for_implmode"])
    if c.op_precision_mode is not None:
        from geplug.config.files import read_precision_ini

        _, problems = read_precision_ini(ctx.path(c.op_precision_mode), imp.ini_values)
        ctx.out.extend(problems)
        if mode is not None or types is not None:
            ctx.warn("op_precision_mode", c.op_precision_mode, "op_precision_mode overrides "
                     "op_select_implmode and optypelist_for_implmode, which are ignored",
                     "remove op_select_implmode / optypelist_for_implmode")


# -- §10 soc_version ----------------------------------------------------------------------


def _soc(ctx: _Ctx) -> None:
    soc = ctx.c.soc_version
    if soc is None:
        if ctx.c.front_end == "atc":
            ctx.err("soc_version", None, "The required parameter --soc_version for ATC is "
                    "empty.", "add --soc_version=" + ctx.p.soc_versions[0], code="E10054")
        return
    if soc not in ctx.p.soc_versions:
        ctx.err("soc_version", soc, f"{soc!r} is not a SoC of {ctx.p.display_name}",
                "use one of " + ", ".join(ctx.p.soc_versions))


# -- §14 environment, §15 initialize_system ----------------------------------------------


def _environment(ctx: _Ctx) -> None:
    env = ctx.env
    if env.get("CM_CHIEF_IP") and env.get("RANK_TABLE_FILE"):
        ctx.warn("RANK_TABLE_FILE", env["RANK_TABLE_FILE"], "CM_CHIEF_IP and RANK_TABLE_FILE "
                 "cannot be configured at the same time.", "unset one of them")
    if env.get("RANK_SIZE") and env.get("CM_WORKER_SIZE"):
        ctx.err("RANK_SIZE", env["RANK_SIZE"], "RANK_SIZE and CM_WORK_SIZE cannot be "
                "configured at the same time", "unset one of them")
    for name in ("ASCEND_DEVICE_ID", "DEVICE_ID"):
        raw = env.get(name)
        if raw is None or raw == "":
            continue
        text = raw.strip()
        if not _digits(text.lstrip("-")):
            ctx.err(name, raw, f"{name} is invalid, should be int, such as 0, 1, 2.",
                    f"export {name}=0")
        elif int(text) < 0:
            ctx.err(name, raw, f"{name} should be >= 0.", f"export {name}=0")
    if env.get("RANK_TABLE_FILE"):
        from geplug.errors import GeplugError
        from geplug.runtime.rank import read_rank_info

        try:
            read_rank_info(env, ctx.p)
        except GeplugError as exc:
            field = getattr(exc, "field", "") or ""
            ctx.err("RANK_TABLE_FILE" + (f".{field}" if field else ""), env["RANK_TABLE_FILE"],
                    str(exc), "fix the rank table (options.md §15.3)",
                    code=getattr(exc, "code", ""))


def _initialize_system(ctx: _Ctx) -> None:
    if not ctx.p.runtime.initialize_system:
        ctx.err("initialize_system", ctx.p.name, f"initialize_system is not supported on "
                f"{ctx.p.display_name} (runtime.initialize_system = false)",
                "run without initialize_system, or choose a product that supports it")
