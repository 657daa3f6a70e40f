"""Rules of profiling_mode and profiling_options (options.md §3; R19-R25 of §11; policy §12).

Product differences (aic_metrics groups, frequency maxima, instruction-profiling style,
host_sys values, iteration trace) come from ``product.profiling``.
"""

from __future__ import annotations

import json
import os
import re

from geplug import vocab
from geplug.config.model import ProfilingOptions
from geplug.config.parse_common import choice_hint
from geplug.config.profiling_source import ENV_HINT, ENV_PATH, SESSION_PATH
from geplug.config.rules.base import Ctx
from geplug.config.text import digits, short

__all__ = ["check_profiling"]

SWITCHES = vocab.SWITCH_KEYS
LEVELS = vocab.PROFILING_LEVELS
FREQ_KEYS = vocab.FREQUENCY_KEYS
INSTR_EXCLUSIVE = ("training_trace", "task_trace", "hccl", "aicpu", "fp_point", "bp_point",
                   "aic_metrics", "aiv_metrics", "l2", "task_time", "runtime_api")
"""Keys instr_profiling_freq excludes (§3.3, R22; fp/bp included when non-empty, policy §12)."""
FORBIDDEN_PATH_CHARS = "\n\f\r\b\t\v\x7f"
STORAGE_RE = re.compile(r"^([0-9]{1,10})MB$")
CUSTOM = "Custom:"


def check_profiling(ctx: Ctx) -> None:
    """The session's profiling_options (whenever set, policy §12) and, when they are the ones
    in force, the environment's ``PROFILING_OPTIONS`` (§3.1): every key, then the rules
    between keys; problems of the environment's options use the option path
    ``PROFILING_OPTIONS``."""
    force = ctx.profiling
    ctx.extend(list(force.problems))
    opts = ctx.c.profiling_options
    if opts is not None:
        if ctx.c.profiling_mode is not True:
            instead = (": the environment's PROFILING_OPTIONS are used"
                       if force.path == ENV_PATH else "")
            ctx.warn(SESSION_PATH, _shown(opts), "profiling_options has no effect while "
                     f"profiling_mode is not true{instead}",
                     "set profiling_mode = true to collect with these options",
                     depends=("profiling_mode",))
        _options(ctx, opts, SESSION_PATH, active=force.path == SESSION_PATH)
    if force.path == ENV_PATH and force.options is not None:
        ctx.hint_suffix = ENV_HINT
        try:
            _options(ctx, force.options, ENV_PATH, active=True)
        finally:
            ctx.hint_suffix = ""


def _shown(opts: ProfilingOptions) -> str:
    """The options as the JSON text the real stack takes (for reports)."""
    return str(short(json.dumps(opts.items())))


def _options(ctx: Ctx, opts: ProfilingOptions, prefix: str, *, active: bool) -> None:
    """Every key of ``opts`` (option paths ``prefix.key``), then the rules between keys;
    ``active``: these are the options GE will use (R20 applies only then)."""
    for key, value in opts.items().items():
        _key(ctx, key, f"{prefix}.{key}", value)
    _cross(ctx, opts, prefix, active=active)


def _key(ctx: Ctx, key: str, path: str, value: str) -> None:
    prof = ctx.p.profiling
    if key == "output":
        _output_path(ctx, path, value)
    elif key == "storage_limit":
        _storage_limit(ctx, path, value)
    elif key == "training_trace":
        _training_trace(ctx, path, value)
    elif key in LEVELS:
        if value not in LEVELS[key]:
            allowed = ", ".join(LEVELS[key])
            ctx.err(path, value, f"The switch {key} should be set in range [{allowed}].",
                    choice_hint(value, LEVELS[key], listed=True))
    elif key in SWITCHES:
        if value not in ("on", "off"):
            ctx.err(path, value, f"The switch {key} should be set to on or off.",
                    choice_hint(value, ("on", "off"), listed=True))
        elif key == "hccl" and value == "on":
            ctx.warn(path, value, "hccl is deprecated and will be removed",
                     "use task_time to collect communication data")
        elif key == "instr_profiling" and value == "on" and prof.instr_profiling != "switch":
            how = ("use instr_profiling_freq instead" if prof.instr_profiling == "frequency"
                   else "remove it: instruction profiling is unsupported here")
            ctx.err(path, value, "the instr_profiling switch is not supported on "
                    f"{ctx.p.display_name}", how)
    elif key in ("aic_metrics", "aiv_metrics"):
        _aic_metrics(ctx, path, value)
    elif key == "llc_profiling":
        if value not in ("read", "write"):
            ctx.err(path, value, "llc_profiling should be in range [read, write].",
                    choice_hint(value, ("read", "write"), listed=True))
    elif key in FREQ_KEYS:
        _frequency(ctx, key, path, value)
    elif key in ("host_sys", "host_sys_usage"):
        _host_list(ctx, key, path, value)


def _training_trace(ctx: Ctx, path: str, value: str) -> None:
    """R19 (only "on"), R21 (not in online inference)."""
    if value != "" and value != "on":
        ctx.err(path, value, 'training_trace may only be "on"; GE rejects every other '
                "non-empty value", "omit training_trace to disable it", code="E10001")
    elif value == "on" and ctx.run_mode == 0:
        ctx.err(path, value, "training_trace is not supported in online inference "
                "(graph_run_mode 0)", "remove training_trace (online inference supports "
                "task_trace and aicpu)")
    elif value == "on" and not ctx.p.profiling.training_trace:
        ctx.err(path, value, f"{ctx.p.display_name} has no iteration trace (no training)",
                "remove training_trace")


def _output_path(ctx: Ctx, path: str, value: str) -> None:
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


def _storage_limit(ctx: Ctx, path: str, value: str) -> None:
    text = "storage-limit should be in range [200,4294967295], end with MB"
    match = STORAGE_RE.fullmatch(value)
    if not match:
        why = ("length is less than 3" if len(value) < 3 else "not end with MB"
               if not value.endswith("MB") else "invalid numbers")
        ctx.err(path, value, f"{text} (storage_limit:{value}, {why})",
                'write digits then "MB", e.g. "200MB"', code="EK0003")
    elif not 200 <= int(match.group(1)) <= 4294967295:
        ctx.err(path, value, f"{text} (storage_limit:{value}, valid range is 200~4294967295)",
                "use a value between 200MB and 4294967295MB", code="EK0003")


def _aic_metrics(ctx: Ctx, path: str, value: str) -> None:
    """R24: a group of the product's list, or ``Custom:`` registers."""
    prof = ctx.p.profiling
    if value.startswith(CUSTOM):
        _custom_metrics(ctx, path, value)
    elif value != "" and value not in (*prof.aic_metrics, *prof.aic_metrics_aliases):
        import difflib

        from geplug.products.domains import AIC_METRICS_GROUPS

        listing = "|".join([*prof.aic_metrics, "Custom:xx,xx"])
        lowered = {g.lower(): g for g in (*prof.aic_metrics, *prof.aic_metrics_aliases)}
        close = difflib.get_close_matches(value.lower(), list(lowered), n=1, cutoff=0.6)
        if value in AIC_METRICS_GROUPS:  # a real group this product's PMU does not have
            hint = (f"{value} is not available on {ctx.p.display_name}; choose a group of the "
                    "list, or Custom: registers")
        elif close:
            hint = f"did you mean {lowered[close[0]]!r}?"
        else:
            hint = "choose a group of the list, or Custom:<event>,<event>"
        ctx.err(path, value, f"aic-metrics[{value}] is invalid, please set metrics in range "
                f"[{listing}].", hint, code="EK0003")


def _custom_metrics(ctx: Ctx, path: str, value: str) -> None:
    prefix = "aic-metrics Custom"
    if len(value) > 70:
        ctx.err(path, value, "The Custom metric parameter length exceeds max length value of 70.",
                "list at most 8 events")
        return
    events = [e.strip() for e in value[len(CUSTOM):].lower().split(",")]
    if len(events) > 8:
        ctx.err(path, value, f"Custom PMU events size({len(events)}) is bigger than 8",
                "list at most 8 events")
    seen: set[int] = set()
    for event in events:
        hexa = event.startswith("0x")
        try:
            if not (hexa or digits(event)):
                raise ValueError(event)
            number = int(event, 16) if hexa else int(event, 10)
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


def _frequency(ctx: Ctx, key: str, path: str, value: str) -> None:
    """Ranges and per-product maxima (``profiling.frequencies``); R23, R25."""
    if value == "":
        return
    dashed = key.replace("_", "-")
    if not digits(value):
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
        ctx.err(path, value, f"{key} is not supported on {ctx.p.display_name}", f"remove {key}")
        return
    number = int(value)
    top = max([rng.max, *rng.item_max.values()])
    if not rng.min <= number <= top:
        items = ", ".join(sorted(rng.item_max))
        more = f" ({items} up to {top}, every other item up to {rng.max})" if top > rng.max \
            else ""
        ctx.err(path, value, f"{dashed} should be in range [{rng.min},{top}].{more}",
                f"use a value between {rng.min} and {top}"
                + (" (0 collects nothing; leave the key out to turn sampling off)"
                   if number == 0 else ""), code="EK0003")
    elif number > rng.max:
        items = ", ".join(sorted(rng.item_max))
        ctx.warn(path, value, f"only {items} sample up to {top}; every other item is capped "
                 f"at {rng.max}", f"use at most {rng.max} to sample all items at this rate")


HOST_TOOLS = {"disk": "the open-source tool iotop", "osrt": "the open-source tools perf and ltrace"}
"""Third-party tools host_sys items need (the seed: 采集Host侧disk性能数据需要安装第三方开源工具
iotop，采集osrt性能数据需要安装第三方开源工具perf和ltrace)."""


def _host_list(ctx: Ctx, key: str, path: str, value: str) -> None:
    allowed = ctx.p.profiling.host_sys if key == "host_sys" else ("cpu", "mem")
    if value.strip() == "":
        ctx.err(path, value, f"Config: {key} is empty.", f"list items from {', '.join(allowed)}")
        return
    for item in (v.strip() for v in value.split(",")):
        if item not in allowed:
            ctx.err(path, value, f"The value: {item} of {key} is not support. Please input in "
                    f"the range of '{'|'.join(allowed)}'.",
                    choice_hint(item, allowed, listed=True))
        elif item in HOST_TOOLS:
            ctx.warn(path, value, f"host_sys {item} needs {HOST_TOOLS[item]} installed on the "
                     "host; without it nothing is collected for it",
                     f"install {HOST_TOOLS[item]} (geplug writes host/collection_notice.txt "
                     "when it cannot collect)")


def _cross(ctx: Ctx, opts: ProfilingOptions, prefix: str, *, active: bool) -> None:
    """R22 (instr_profiling_freq exclusions) and R20 (task_trace needs training_trace)."""
    freq = opts.instr_profiling_freq
    if freq not in (None, "", "0") and ctx.p.profiling.instr_profiling == "frequency":
        clash = [k for k in INSTR_EXCLUSIVE if (getattr(opts, k) or "") not in ("", "off")]
        if clash:
            ctx.err(f"{prefix}.instr_profiling_freq", freq,
                    "instr_profiling_freq cannot be combined with " + ", ".join(clash),
                    "remove those keys, or remove instr_profiling_freq",
                    code="[Ge opt] Profiling fails to start because instrProfilingFreq is set")
    if (active and ctx.run_mode == 1 and ctx.profiling.on and opts.is_on("task_trace")
            and opts.training_trace != "on" and ctx.p.profiling.training_trace):
        ctx.err(f"{prefix}.training_trace", opts.training_trace,
                "in training profiling, task_trace on requires training_trace on",
                'add "training_trace": "on"')
