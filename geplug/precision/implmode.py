"""Implementation-mode choice per node (options.md §9): node list > op-type list > default.

The configuration resolver turns op_select_implmode, optypelist_for_implmode and the
op_precision_mode ini (``[ByNodeName]`` beats ``[ByOpType]``) plus the product's built-in
lists into ``ResolvedConfig.impl_by_node`` / ``impl_by_op_type`` / ``impl_default``; this
module applies them to one op, restricted to the modes the op implements
(``OpSupport.impl_modes``, the product's ``all_ops_impl_mode.ini``): an op with one mode
always runs it, an op with none has no implementation mode.

The modes are told apart by the op's dtype (seed 004: "上述实现模式根据算子的dtype进行区分"): an
op's modes are those it has in the dtype it computes in (``OpSupport.modes_for``), so a
product may declare, say, both modes for float16 and one for float32.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from geplug.config.resolved import ResolvedConfig
    from geplug.products.schema import OpSupport

__all__ = ["ImplChoice", "choose_impl", "choose_impl_mode"]


@attrs.frozen
class ImplChoice:
    """The implementation mode of one op, why (a sentence), and the why in a few words.

    ``basis`` is the compact form ``geplug compile`` prints beside the mode: ``only mode``,
    ``node listed`` ([ByNodeName]), ``op type listed`` (op_select_implmode's built-in list,
    optypelist_for_implmode or [ByOpType]), ``default`` or ``fallback: <wanted> n/a``, each
    followed by `` in <dtype>`` when the op's modes are narrowed for that dtype; "" when the op
    has no implementation mode."""

    mode: str
    reason: str
    basis: str = ""


def choose_impl(node: str, op: OpSupport, config: ResolvedConfig, dtype: str = "") -> ImplChoice:
    """The :class:`ImplChoice` for ``node`` of type ``op.op_type`` computing in ``dtype`` ("" =
    not known: every mode of the op); its mode is "" when the op has none."""
    modes = op.modes_for(dtype)
    narrowed = bool(dtype) and dtype in op.impl_modes_by_dtype
    where = f" in {dtype}" if narrowed else ""
    if not modes:
        return ImplChoice("", f"the op has no implementation modes{where}")
    if len(modes) == 1:
        return ImplChoice(
            modes[0],
            f"the op implements only {modes[0]}{where}, so it always runs it"
            + (" (implementation modes are told apart by the op's dtype)" if narrowed else ""),
            f"only mode{where}")
    if node in config.impl_by_node:
        wanted, source = config.impl_by_node[node], f"node {node!r} is listed ([ByNodeName])"
        basis = "node listed"
    elif op.op_type in config.impl_by_op_type:
        wanted, source = config.impl_by_op_type[op.op_type], f"op type {op.op_type} is listed"
        basis = "op type listed"
    else:
        wanted, source, basis = config.impl_default, "the default mode", "default"
    if wanted in modes:
        return ImplChoice(wanted, f"{wanted}: {source}", basis)
    fallback = "high_performance" if "high_performance" in modes else modes[0]
    return ImplChoice(fallback, (
        f"{source} asks for {wanted}, which {op.op_type} does not implement{where} "
        f"({', '.join(modes)}): {fallback}"
    ), f"fallback: {wanted} n/a{where}")


def choose_impl_mode(
    node: str, op: OpSupport, config: ResolvedConfig, dtype: str = ""
) -> tuple[str, str]:
    """``(mode, reason)`` of :func:`choose_impl` (mode "" when the op has none)."""
    choice = choose_impl(node, op, config, dtype)
    return choice.mode, choice.reason
