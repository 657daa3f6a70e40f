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

if TYPE_CHECKING:
    from geplug.config.resolved import ResolvedConfig
    from geplug.products.schema import OpSupport

__all__ = ["choose_impl_mode"]


def choose_impl_mode(
    node: str, op: OpSupport, config: ResolvedConfig, dtype: str = ""
) -> tuple[str, str]:
    """``(mode, reason)`` for ``node`` of type ``op.op_type`` computing in ``dtype`` ("" =
    not known: every mode of the op); mode is "" when the op has none."""
    modes = op.modes_for(dtype)
    narrowed = bool(dtype) and dtype in op.impl_modes_by_dtype
    where = f" in {dtype}" if narrowed else ""
    if not modes:
        return "", f"the op has no implementation modes{where}"
    if len(modes) == 1:
        return modes[0], (f"the op implements only {modes[0]}{where}, so it always runs it"
                          + (" (implementation modes are told apart by the op's dtype)"
                             if narrowed else ""))
    if node in config.impl_by_node:
        wanted, source = config.impl_by_node[node], f"node {node!r} is listed ([ByNodeName])"
    elif op.op_type in config.impl_by_op_type:
        wanted, source = config.impl_by_op_type[op.op_type], f"op type {op.op_type} is listed"
    else:
        wanted, source = config.impl_default, "the default mode"
    if wanted in modes:
        return wanted, f"{wanted}: {source}"
    fallback = "high_performance" if "high_performance" in modes else modes[0]
    return fallback, (
        f"{source} asks for {wanted}, which {op.op_type} does not implement{where} "
        f"({', '.join(modes)}): {fallback}"
    )
