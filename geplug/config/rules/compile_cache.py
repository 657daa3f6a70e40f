"""Rules of aicore_num, op_compiler_cache_mode, op_compiler_cache_dir and buffer_optimize
(CANN GE/ATC docs: ``ge.aicoreNum``, ``--op_compiler_cache_mode``, ``--op_compiler_cache_dir``,
``--buffer_optimize``).

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
    mode = c.op_compiler_cache_mode
    if mode is not None and mode not in vocab.OP_COMPILER_CACHE_MODES:
        ctx.err("op_compiler_cache_mode", mode,
                f"op_compiler_cache_mode {mode!r} is not a cache mode; it must be one of "
                f"{', '.join(vocab.OP_COMPILER_CACHE_MODES)}",
                choice_hint(mode, vocab.OP_COMPILER_CACHE_MODES), code="E10001")
    buffer = c.buffer_optimize
    if buffer is not None and buffer not in vocab.BUFFER_OPTIMIZE_MODES:
        ctx.err("buffer_optimize", buffer,
                f"buffer_optimize {buffer!r} is not a buffer optimisation mode; it must be one "
                f"of {', '.join(vocab.BUFFER_OPTIMIZE_MODES)}",
                choice_hint(buffer, vocab.BUFFER_OPTIMIZE_MODES), code="E10001")
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
