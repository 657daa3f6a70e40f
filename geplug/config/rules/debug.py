"""Rules of op_debug_level, op_debug_config and debug_dir (options.md §7; R8, R16-R18)."""

from __future__ import annotations

import os

from geplug.config.rules.base import Ctx

__all__ = ["DEPRECATED_OP_DEBUG_LEVEL", "check_debug"]

DEPRECATED_OP_DEBUG_LEVEL = (
    "[warning][tf_adapter] Option 'op_debug_level' is deprecated and will be removed in future "
    "version. Please use 'op_debug_config' instead.")
"""What the TF adapter prints once (§7.1)."""
AICORE_ERROR = "there is an aivec error exception, error code = 0x4"


def check_debug(ctx: Ctx) -> None:
    """Level range and deprecation, the .cfg file, oom combinations, debug_dir usefulness."""
    c = ctx.c
    level = c.op_debug_level
    if level is not None:
        if level not in range(5):
            ctx.err("op_debug_level", level, f"Value {level} for parameter op_debug_level is "
                    "invalid. Reason: The value is not within the range of values. The valid "
                    "range is 0, 1, 2, 3, 4.", "use 0-4 (training: 0 or 3)", code="E10001")
        if c.front_end == "tf":
            ctx.warn("op_debug_level", level, DEPRECATED_OP_DEBUG_LEVEL, "use op_debug_config")
    items: tuple[str, ...] = ()
    if c.op_debug_config is not None:
        from geplug.config.files import read_debug_config

        parsed, problems = read_debug_config(ctx.path(c.op_debug_config))
        ctx.extend(problems)
        items = parsed.items if parsed is not None else ()
    if "oom" in items:
        _oom(ctx, level, items)
    if c.debug_dir is not None:
        _debug_dir(ctx, c.debug_dir, level)


def _oom(ctx: Ctx, level: int | None, items: tuple[str, ...]) -> None:
    """R16 (level 2 or ccec_O0 with oom) and R8 (oom not while NPU_COLLECT_PATH is set)."""
    path = ctx.c.op_debug_config
    if level == 2:
        ctx.err("op_debug_config", path, "op_debug_level 2 (ccec -O0 -g) together with oom "
                "ends in an AI Core error at run time", "remove oom, or use op_debug_level 1",
                code=AICORE_ERROR)
    if "ccec_O0" in items:
        ctx.err("op_debug_config", path, "ccec_O0 together with oom ends in an AI Core error "
                "at run time", "remove oom or ccec_O0", code=AICORE_ERROR)
    if ctx.env.get("NPU_COLLECT_PATH"):
        ctx.err("op_debug_config", path, "oom is not allowed while NPU_COLLECT_PATH is set",
                "remove oom or unset NPU_COLLECT_PATH")


def _debug_dir(ctx: Ctx, value: str, level: int | None) -> None:
    """Not empty (ATC refuses ``--debug_dir=``, E10004, so no export could carry it); not a
    file; R18: useless when no kernel_meta is produced (R17: a .cfg produces it)."""
    if value == "":
        ctx.err("debug_dir", value, "Value for --debug_dir is empty. (ATC refuses an empty "
                "debug_dir, so this config cannot be exported to ATC)", "give a directory, or "
                "remove debug_dir to keep the default (the cwd, files in ./kernel_meta)",
                code="E10004")
        return
    full = ctx.path(value)
    if os.path.exists(full) and not os.path.isdir(full):
        ctx.err("debug_dir", value, f"{value!r} exists and is not a directory",
                "point debug_dir at a directory")
    if (level or 0) == 0 and ctx.c.op_debug_config is None:
        ctx.warn("debug_dir", value, "debug_dir has no effect while op_debug_level is 0 and "
                 "no op_debug_config is set (no kernel_meta is produced)",
                 "set op_debug_level or op_debug_config, or remove debug_dir",
                 depends=("op_debug_level", "op_debug_config"))
