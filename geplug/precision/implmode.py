"""Implementation-mode choice per node (options.md §9): node list > op-type list > default.

The configuration resolver turns op_select_implmode, optypelist_for_implmode and the
op_precision_mode ini (``[ByNodeName]`` beats ``[ByOpType]``) plus the product's built-in
lists into ``ResolvedConfig.impl_by_node`` / ``impl_by_op_type`` / ``impl_default``; this
module applies them to one op, restricted to the modes the op implements
(``OpSupport.impl_modes``, the product's ``all_ops_impl_mode.ini``): an op with one mode
always runs it, an op with none has no implementation mode.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from geplug.config.resolved import ResolvedConfig
    from geplug.products.schema import OpSupport

__all__ = ["choose_impl_mode"]


def choose_impl_mode(node: str, op: OpSupport, config: ResolvedConfig) -> tuple[str, str]:
    """``(mode, reason)`` for ``node`` of type ``op.op_type``; mode is "" when the op has none."""
    modes = tuple(op.impl_modes)
    if not modes:
        return "", "the op has no implementation modes"
    if len(modes) == 1:
        return modes[0], f"the op implements only {modes[0]}, so it always runs it"
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
        f"{source} asks for {wanted}, which {op.op_type} does not implement "
        f"({', '.join(modes)}): {fallback}"
    )
