"""Rules of the data dump, overflow detection and exception dump (options.md §4, §8; R1-R8).

The dump_debug_mode values a product accepts are ``product.dump.debug_modes``.
"""

from __future__ import annotations

import os
import re

from geplug import vocab
from geplug.config.parse_common import choice_hint
from geplug.config.rules.base import INT32_MAX, Ctx

__all__ = ["check_dump", "check_exception_dump"]

STEP_RE = re.compile(r"^([0-9]+)(?:-([0-9]+))?$")
DUMP_MODES = vocab.DUMP_MODES
DEBUG_MODES = vocab.DUMP_DEBUG_MODES


def check_dump(ctx: Ctx) -> None:
    """R1-R5 and dump_data; every value that is set is checked (policy §12)."""
    c = ctx.c
    if c.enable_dump is True and c.enable_dump_debug is True:
        ctx.err("enable_dump", True, "ge.exec.enableDump and ge.exec.enableDumpDebug cannot be "
                "set to 1 at the same time.", "enable either the data dump or overflow "
                "detection (enable_dump_debug), not both", code="E10001")
    if c.enable_dump is True or c.enable_dump_debug is True:
        which = "enable_dump" if c.enable_dump else "enable_dump_debug"
        if not c.dump_path:
            ctx.err("dump_path", c.dump_path, f"if use dump function, dump_path must be set "
                    f"({which} = true)", "set dump_path to an existing writable directory",
                    code="E10058")
        else:
            _dump_path(ctx, c.dump_path)
    elif c.dump_path:
        ctx.warn("dump_path", c.dump_path, "dump_path is set but neither enable_dump nor "
                 "enable_dump_debug is true; nothing is dumped",
                 depends=("enable_dump", "enable_dump_debug"))
    if c.dump_step is not None:
        _dump_step(ctx, c.dump_step)
        if ctx.run_mode == 0:
            ctx.warn("dump_step", c.dump_step, "dump_step applies to training only")
    if c.dump_mode is not None and c.dump_mode not in DUMP_MODES:
        ctx.err("dump_mode", c.dump_mode, "dump mode should be one of the list:[input, output, "
                "all]", choice_hint(c.dump_mode, DUMP_MODES, listed=True), code="E10001")
    if c.dump_debug_mode is not None:
        _dump_debug_mode(ctx, c.dump_debug_mode)
    if c.enable_dump_debug is True and ctx.run_mode == 0:
        ctx.warn("enable_dump_debug", True, "overflow detection applies to training only")
    if c.dump_data is not None and c.dump_data not in ("tensor", "stats"):
        ctx.err("dump_data", c.dump_data, "dump_data should be 'tensor' or 'stats'.",
                choice_hint(c.dump_data, ("tensor", "stats"), listed=True))


def _dump_debug_mode(ctx: Ctx, value: str) -> None:
    """R5: the three values, then the product's ``dump.debug_modes``."""
    allowed = ctx.p.dump.debug_modes
    if value not in DEBUG_MODES:
        ctx.err("dump_debug_mode", value, "dump debug mode should be one of the list:"
                "[aicore_overflow, atomic_overflow, all]",
                choice_hint(value, allowed or DEBUG_MODES,
                            listed=set(allowed or DEBUG_MODES) == set(DEBUG_MODES)),
                code="E10001")
    elif value not in allowed:
        ctx.err("dump_debug_mode", value, f"{ctx.p.display_name} supports dump_debug_mode "
                + (", ".join(allowed) if allowed else "no value (no overflow detection)"),
                ("use " + " or ".join(allowed)) if allowed else "remove dump_debug_mode")


def _dump_path(ctx: Ctx, value: str) -> None:
    """R2: an existing directory the running user can read and write."""
    full = ctx.path(value)
    if not os.path.exists(full):
        ctx.err("dump_path", value, f"the path {value} is invalid (it does not exist)",
                "create the directory first (mkdir -p), on the host or in the container",
                code="E10001")
    elif not os.path.isdir(full):
        ctx.err("dump_path", value, f"the path {value} is not directory.",
                "point dump_path at a directory", code="E10001")
    elif not os.access(full, os.R_OK | os.W_OK | os.X_OK):
        ctx.err("dump_path", value, f"the path {value} does't have read, write permissions.",
                "grant the running user read and write permission", code="E10001")


def _dump_step(ctx: Ctx, value: str) -> None:
    """R3 with GE's grammar: ``N`` or ``N-M`` (N < M) joined by ``|``, ≤ 100 items, int32.

    Every bad item is reported (one problem each), not only the first.
    """
    items = value.split("|")
    if len(items) > 100:
        ctx.err("dump_step", value, "dump_step only support dump <= 100 sets of data",
                "list at most 100 items", code="E10001")
        return
    for item in items:
        match = STEP_RE.fullmatch(item)
        if not match:
            ctx.err("dump_step", value, f"dump_step string style is error (item {item!r}): "
                    "Incorrect parameter format. Valid format: '0|5|10|50-100'",
                    "items are N or N-M joined by |, e.g. 0|5|10-20", code="E10001")
            continue
        first = int(match.group(1))
        second = None if match.group(2) is None else int(match.group(2))
        if first > INT32_MAX or (second is not None and second > INT32_MAX):
            ctx.err("dump_step", value, f"step {item!r} is larger than the int32 maximum",
                    "use smaller step numbers", code="E10001")
        elif second is not None and first >= second:
            ctx.err("dump_step", value, f"in range steps, the first step is >= second step "
                    f"({item!r}), correct example:'0|5|10-20'",
                    "write ranges as N-M with N < M", code="E10001")


def check_exception_dump(ctx: Ctx) -> None:
    """R6 (values), R8 (NPU_COLLECT_PATH forces mode 1), R7 (with a data/overflow dump)."""
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
