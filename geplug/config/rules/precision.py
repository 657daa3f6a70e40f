"""Rules of precision_mode, precision_mode_v2 and modify_mixlist (options.md §5; R9-R13).

The values a product accepts are ``product.precision.modes`` / ``modes_v2`` (sessions) and
``atc_only_modes`` (ATC only).
"""

from __future__ import annotations

import difflib

from geplug import vocab
from geplug.config.defaults import PRECISION_MODES, PRECISION_MODES_V2, default_precision
from geplug.config.parse_common import choice_hint
from geplug.config.rules.base import Ctx

__all__ = ["BF16_MODES", "MIXED_MODES", "TORCH_PRECISION", "check_precision"]

MIXED_MODES = ("allow_mix_precision", "allow_mix_precision_fp16", "allow_mix_precision_bf16",
               "mixed_float16", "mixed_bfloat16", "mixed_hif8")
"""Modes modify_mixlist may be used with (§5.5, R13)."""
BF16_MODES = vocab.BF16_MODES
TORCH_PRECISION = ("allow_fp32_to_fp16", "must_keep_origin_dtype")
"""The only ACL_PRECISION_MODE values torch_npu takes (§5.1)."""


def check_precision(ctx: Ctx) -> None:
    """R9 (not both), value sets per product and front end, R10-R12, torch_npu's two values."""
    c = ctx.c
    if c.precision_mode is not None and c.precision_mode_v2 is not None:
        ctx.err("precision_mode_v2", c.precision_mode_v2, "Cannot configure both parameters "
                "precision_mode and precision_mode_v2 simultaneously.",
                "keep only one of precision_mode and precision_mode_v2", code="E10056")
    torch_refuses = (c.front_end == "torch" and c.precision_mode is not None
                     and c.precision_mode not in TORCH_PRECISION)
    if not torch_refuses:  # else the torch_npu error below is the one report of this value
        _value(ctx, "precision_mode", c.precision_mode, PRECISION_MODES, ctx.p.precision.modes)
    _value(ctx, "precision_mode_v2", c.precision_mode_v2, PRECISION_MODES_V2,
           ctx.p.precision.modes_v2)
    if c.precision_mode == "force_fp16" and ctx.run_mode == 1:
        ctx.err("precision_mode", "force_fp16", "force_fp16 applies to online inference only "
                "(graph_run_mode 0)", "use graph_run_mode = 0, or another precision mode")
    if torch_refuses:
        ctx.err("precision_mode", c.precision_mode, "value of ACL_PRECISION_MODE should be in "
                f"{list(TORCH_PRECISION)} but got {c.precision_mode}",
                choice_hint(c.precision_mode, TORCH_PRECISION, listed=True))
    if c.modify_mixlist is not None:
        _mixlist(ctx, c.modify_mixlist)


def _value(ctx: Ctx, option: str, value: str | None, every: tuple[str, ...],
           allowed: tuple[str, ...]) -> None:
    if value is None:
        return
    prec = ctx.p.precision
    ok = tuple(allowed) + (tuple(prec.atc_only_modes) if ctx.c.front_end == "atc" else ())
    if value not in every:
        close = difflib.get_close_matches(value, ok, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}?" if close else "use a value of the list"
        ctx.err(option, value, f"option {option} value '{value}' is invalid, it should be one "
                f"of the list:{list(ok)}", hint, code="E10001")
    elif value not in ok:
        if value in prec.atc_only_modes:
            ctx.err(option, value, f"{value} is accepted only by ATC on {ctx.p.display_name} "
                    "(\"not supported in the current version\" for sessions)",
                    "compile with ATC or choose another mode", code="E10001")
        elif value in BF16_MODES:
            ctx.err(option, value, "Current soc not support dtype of BFloat16",
                    "use " + ", ".join(ok), code="E10001")
        else:
            ctx.err(option, value, f"{value} is not supported on {ctx.p.display_name}",
                    "use one of " + ", ".join(ok), code="E10001")


def _mixlist(ctx: Ctx, path: str) -> None:
    """R13: only with a mixed-precision mode (the effective one, defaults included)."""
    from geplug.config.files import read_mixlist

    c = ctx.c
    effective = c.precision_mode_v2 or c.precision_mode or default_precision(
        ctx.p, ctx.run_mode, c.front_end)
    if effective not in MIXED_MODES:
        ctx.err("modify_mixlist", path, "modify_mixlist is assigned, please ensure that "
                "precision_mode is assigned to 'allow_mix_precision', 'allow_mix_precision_fp16'"
                f" or 'allow_mix_precision_bf16' (effective: {effective})",
                "set a mixed precision mode or remove modify_mixlist", code="E10001")
    _, problems = read_mixlist(ctx.path(path))
    ctx.extend(problems)
