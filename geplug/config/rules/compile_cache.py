"""Rules of aicore_num, op_compiler_cache_mode, op_compiler_cache_dir, buffer_optimize and
enable_small_channel
(CANN GE/ATC docs: ``ge.aicoreNum``, ``--op_compiler_cache_mode``, ``--op_compiler_cache_dir``,
``--buffer_optimize``, ``--enable_small_channel``).

The core count is checked against the product declaration (``compute.ai_cores``), never a
product's name: GE/FE refuses an ``aicoreNum`` outside ``[1, ai_core_cnt]`` of the SoC.
"""

from __future__ import annotations

import os

from geplug import vocab
from geplug.config.parse_common import choice_hint
from geplug.config.rules.base import Ctx

__all__ = ["check_compile_cache"]


def check_compile_cache(ctx: Ctx) -> None:
    """aicore_num in [1, the product's AI Cores]; the cache mode one of enable/disable/force;
    buffer_optimize one of l2_optimize/off_optimize; the cache dir not empty and not an
    existing file."""
    c = ctx.c
    if c.aicore_num is not None:
        most = ctx.p.compute.ai_cores
        if not 1 <= c.aicore_num <= most:
            ctx.err("aicore_num", c.aicore_num,
                    f"aicore_num must be in [1, {most}]: {ctx.p.display_name} declares "
                    f"{most} AI Cores (compute.ai_cores), so {c.aicore_num} cores cannot be used",
                    f"use an integer from 1 to {most}, or remove aicore_num to use all "
                    f"{most}", code="E10001")
    _one_of(ctx, "op_compiler_cache_mode", c.op_compiler_cache_mode, "a cache mode",
            vocab.OP_COMPILER_CACHE_MODES)
    _one_of(ctx, "buffer_optimize", c.buffer_optimize, "a buffer optimisation mode",
            vocab.BUFFER_OPTIMIZE_MODES)
    small = c.enable_small_channel
    if small is not None and small not in (0, 1):
        ctx.err("enable_small_channel", small,
                f"enable_small_channel must be 0 (off) or 1 (C04 for a first convolution of at "
                f"most 4 channels), got {small!r}", "set enable_small_channel = 0 or 1",
                code="E10001")
    cache_dir = c.op_compiler_cache_dir
    if cache_dir is not None:
        if not cache_dir.strip():
            ctx.err("op_compiler_cache_dir", cache_dir, "op_compiler_cache_dir is empty",
                    "give a directory, or remove it to keep the default "
                    f"{vocab.OP_COMPILER_CACHE_DIR_DEFAULT}")
        elif os.path.isfile(ctx.path(cache_dir)):
            ctx.err("op_compiler_cache_dir", cache_dir,
                    f"{cache_dir!r} exists and is not a directory (the cache is written to "
                    "its kernel_cache subdirectory)", "point op_compiler_cache_dir at a directory")


def _one_of(ctx: Ctx, option: str, value: str | None, what: str,
            allowed: tuple[str, ...]) -> None:
    """E10001 (with a did-you-mean) when a set ``option`` is not one of ``allowed``."""
    if value is not None and value not in allowed:
        ctx.err(option, value,
                f"{option} {value!r} is not {what}; it must be one of {', '.join(allowed)}",
                choice_hint(value, allowed), code="E10001")
