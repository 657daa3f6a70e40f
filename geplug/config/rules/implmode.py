"""Rules of op_select_implmode, optypelist_for_implmode and op_precision_mode (options.md §9;
R14, R15). Values per product: ``product.implmode``.
"""

from __future__ import annotations

from collections.abc import Mapping

from geplug.config.parse_common import choice_hint
from geplug.config.rules.base import Ctx

__all__ = ["DEPRECATED_IMPLMODE", "TORCH_IMPLMODES", "check_implmode"]

DEPRECATED_IMPLMODE = {
    "tf": "[warning][tf_adapter] Option 'op_select_implmode' is deprecated and will be removed "
          "in future version. Please use 'op_precision_mode' instead.",
    "torch": "ACL_OP_SELECT_IMPL_MODE will be deprecated in a future version. The accuracy or "
             "performance may not be optimal when configuring this option. We do not recommend "
             "setting it.",
    "atc": "--op_select_implmode has stopped evolving and will be deprecated in a later "
           "version; --op_precision_mode is recommended.",
}
"""The deprecation each front end gives for op_select_implmode (§9.1, seed 004)."""
DEPRECATED_OPTYPELIST = ("Option 'optypelist_for_implmode' is deprecated; use an "
                         "op_precision_mode ini instead.")
TORCH_IMPLMODES = ("high_performance", "high_precision")
"""The only ACL_OP_SELECT_IMPL_MODE values torch_npu takes (§9.1)."""


def check_implmode(ctx: Ctx) -> None:
    """Values per product and front end, deprecations, R14, the ``_for_all`` case, the ini
    (syntax and values) and R15 (op_precision_mode wins: warning)."""
    c, imp = ctx.c, ctx.p.implmode
    mode = c.op_select_implmode
    if mode is not None:
        allowed = TORCH_IMPLMODES if c.front_end == "torch" else imp.select_values
        if mode not in allowed:
            hint = choice_hint(mode, allowed, listed=True)
            if mode.startswith("enable_"):
                hint = f"{mode} belongs in an op_precision_mode ini; " + hint
            message = (f"value of ACL_OP_SELECT_IMPL_MODE should be in {list(allowed)} but got "
                       f"{mode}" if c.front_end == "torch" else
                       f"op select impl mode should be one of the list:[{', '.join(allowed)}]")
            ctx.err("op_select_implmode", mode, message, hint, code="E10001")
        if c.front_end in DEPRECATED_IMPLMODE:
            ctx.warn("op_select_implmode", mode, DEPRECATED_IMPLMODE[c.front_end],
                     "use op_precision_mode")
    if c.optypelist_for_implmode is not None and c.optypelist_for_implmode.strip():
        _optypelist(ctx, c.optypelist_for_implmode, mode)  # empty means off (the seed)
    if c.op_precision_mode is not None:
        from geplug.config.files import read_precision_ini

        ini, problems = read_precision_ini(ctx.path(c.op_precision_mode), imp.ini_values)
        ctx.extend(problems)
        if ini is not None:
            _unimplemented_modes(ctx, c.op_precision_mode, ini.by_op_type)
        if mode is not None or c.optypelist_for_implmode is not None:
            ctx.warn("op_precision_mode", c.op_precision_mode, "op_precision_mode overrides "
                     "op_select_implmode and optypelist_for_implmode, which are ignored",
                     "remove op_select_implmode / optypelist_for_implmode")


def _unimplemented_modes(ctx: Ctx, path: str, by_op_type: Mapping[str, str]) -> None:
    """An ini line giving an op type a mode the op does not implement changes nothing: the
    op runs its own implementation (the seed: "如果算子只实现了一种则按照算子实现的方式运行")."""
    for op_type, wanted in by_op_type.items():
        op = ctx.p.ops.get(op_type)
        modes = op.impl_modes if op is not None else ()
        if modes and wanted not in modes:
            ctx.warn("op_precision_mode", path, f"{op_type} = {wanted} in {path}: {op_type} "
                     f"implements only {', '.join(modes)} on {ctx.p.display_name}, so it runs "
                     f"{modes[0] if len(modes) == 1 else 'its default'}; the line changes nothing",
                     f"use one of {', '.join(modes)} for {op_type}, or drop the line")
        elif op is not None and modes:
            _narrowed_by_dtype(ctx, path, op_type, wanted, op.impl_modes_by_dtype)


def _narrowed_by_dtype(ctx: Ctx, path: str, op_type: str, wanted: str,
                       by_dtype: Mapping[str, tuple[str, ...]]) -> None:
    """The modes are told apart by the op's dtype (seed 004: "上述实现模式根据算子的dtype进行区分"):
    a line asking for a mode some dtypes of the op lack applies to the others only."""
    lacking = [d for d, m in by_dtype.items() if wanted not in m]
    if lacking:
        runs = sorted({m for d in lacking for m in by_dtype[d]})
        ctx.warn("op_precision_mode", path, f"{op_type} = {wanted} in {path} does not reach "
                 f"{', '.join(lacking)} {op_type} ops: in those dtypes {op_type} implements "
                 f"only {', '.join(runs)} on {ctx.p.display_name} (implementation modes are "
                 "told apart by the op's dtype)",
                 "nothing to change if that is intended; `geplug compile` shows each op's mode")


def _optypelist(ctx: Ctx, types: str, mode: str | None) -> None:
    allowed = ctx.p.implmode.optypelist_allowed
    if mode is None:
        ctx.err("optypelist_for_implmode", types, "when use optypelist_for_implmode, "
                "op_select_implmode must be set.", "set op_select_implmode too", code="E10001")
    elif mode.endswith("_for_all"):
        ctx.warn("optypelist_for_implmode", types, f"ignored with op_select_implmode = {mode} "
                 "(the _for_all modes apply their own lists)",
                 "use high_precision or high_performance to restrict to these types")
    for entry in (t.strip() for t in types.split(",")):
        if entry not in allowed:
            ctx.err("optypelist_for_implmode", types, f"op type {entry!r} cannot be listed "
                    "here", "allowed: " + ", ".join(allowed))
    if ctx.c.front_end in ("tf", "torch"):
        ctx.warn("optypelist_for_implmode", types, DEPRECATED_OPTYPELIST)
