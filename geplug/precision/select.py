"""Per-op dtype and engine selection: options.md §5.4 (the seed's precision_mode text), as data.

Each precision mode is a *chain* of steps (:mod:`geplug.precision.chains`) read left to
right; the first step the product's operator table supports wins
(``OpSupport.aicore_dtypes`` / ``aicpu_dtypes``); when no step is supported the op cannot run
and :class:`~geplug.errors.CompileError` names the node, its op type, the dtypes tried and the
product. Pure functions: no onnx, no I/O.

Choices the seed leaves open are marked *inferred* in the reasons and in
``docs/simulator.md``: an original dtype a mode says nothing about (integers, float64, or
float16 under allow_fp32_to_fp16) keeps its dtype (AI Core, else AI CPU); "AI CPU" without a
dtype means the AI CPU kernel in the op's original dtype.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from geplug.errors import CompileError
from geplug.precision.chains import AI_CPU, BF16, F16, F32, Step, chain
from geplug.precision.implmode import ImplChoice, choose_impl
from geplug.precision.mixlist import GREY, WHITE, list_state, normalize_overrides
from geplug.precision.modes import PrecisionMode, effective_mode

if TYPE_CHECKING:
    from geplug.config.resolved import ResolvedConfig
    from geplug.products.schema import OpSupport, Product

__all__ = [
    "NodeInfo", "OpDecision", "Selection", "Step", "decide", "select_dtype", "summarize",
]

@attrs.frozen
class Selection:
    """The winning step of a chain and what was tried before it."""

    engine: str
    dtype: str
    out_dtype: str
    reason: str
    tried: tuple[str, ...]
    lowered: bool = False


def _names(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


@attrs.frozen(kw_only=True)
class NodeInfo:
    """What selection needs to know about one graph node (the simulator fills it from ONNX)."""

    name: str
    onnx_op: str
    op_type: str
    original_dtype: str | None
    """The dtype the op computes in in the source graph (its first floating input, else its
    first output); ``None`` when the node has no typed tensor."""
    predecessors: tuple[str, ...] = attrs.field(converter=_names, default=())
    """Names of the nodes producing its floating inputs (grey-list rule)."""


@attrs.frozen(kw_only=True)
class OpDecision:
    """Where and how one node runs on the product, and why (``geplug compile`` prints these)."""

    node: str
    onnx_op: str
    op_type: str
    engine: str
    """``AI_CORE`` or ``AI_CPU``."""
    dtype: str
    """The dtype the op computes in on the device."""
    impl_mode: str
    reason: str
    original_dtype: str = ""
    output_dtype: str = ""
    """The dtype it writes (differs from ``dtype`` only for cube fp16-in/fp32-out)."""
    op_class: str = "vector"
    mix_list: str = ""
    """``white``/``black``/``grey`` under a mixed-precision mode, else ""."""
    lowered: bool = False
    """The op runs in a lower precision than its original dtype."""
    tried: tuple[str, ...] = ()
    impl_reason: str = ""
    """Why the op got ``impl_mode`` (a sentence)."""
    impl_basis: str = ""
    """That reason in a few words (``ImplChoice.basis``: ``default``, ``op type listed``, ...)."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready mapping (``geplug compile --format json``)."""
        data = attrs.asdict(self)
        data["tried"] = list(self.tried)
        return data


def product_float_dtypes(product: Product) -> tuple[str, ...]:
    """The floating dtypes (float16, bfloat16, float32) any AI Core op of ``product`` has."""
    present = {d for op in (*product.ops.values(), product.default_op) for d in op.aicore_dtypes}
    return tuple(d for d in (F16, BF16, F32) if d in present)


def select_dtype(
    op: OpSupport,
    mode: PrecisionMode,
    original_dtype: str,
    *,
    node: str = "",
    product: str = "",
    mix_state: str = "",
    prev_lowered: bool = False,
    product_floats: tuple[str, ...] = (F16, BF16, F32),
) -> Selection:
    """Pick engine and dtype for one op (options.md §5.4, the seed's precision_mode text).

    ``mix_state`` is the op's list (white/black/grey) and ``prev_lowered`` whether the op
    before it was lowered (the grey-list rule). Raises :class:`CompileError` when no step of
    the chain is supported.
    """
    lowered = mode.is_mixed and (
        mix_state == WHITE or (mix_state == GREY and prev_lowered)
    )
    steps, stated = chain(mode.rule, op, original_dtype, lowered=lowered, mix_state=mix_state,
                          product_floats=product_floats)
    tried: list[str] = []
    for step in steps:
        if step.supported(op):
            why = _PREFIX.sub("", step.why)
            if not stated:
                why = f"{why} (the CANN precision_mode docs state no rule for this case; inferred)"
            skipped = f" [not supported: {', '.join(tried)}]" if tried else ""
            reason = (f"{mode.label}: {op.op_type} ({op.op_class} op, original "
                      f"{original_dtype}): {why}{skipped}")
            return Selection(
                engine=step.engine,
                dtype=step.dtype,
                out_dtype=step.out_dtype or step.dtype,
                reason=reason,
                tried=(*tried, step.label()),
                lowered=_is_lower(step.dtype, original_dtype),
            )
        tried.append(step.label())
    if original_dtype not in _SEED_DTYPES:
        # options.md §5.4: the text says nothing about other dtypes; leave them unchanged.
        return Selection(
            engine=AI_CPU, dtype=original_dtype, out_dtype=original_dtype,
            reason=(f"{mode.label}: {op.op_type} ({op.op_class} op, original "
                    f"{original_dtype}): neither AI Core nor AI CPU lists {original_dtype} in "
                    "the product's table; the CANN precision_mode rules cover only float16/"
                    "bfloat16/float32, so the op is left unchanged and modelled on AI CPU "
                    "(inferred)"),
            tried=tuple(tried),
        )
    raise CompileError(
        f"node {node!r} (op type {op.op_type!r}, original dtype {original_dtype}) cannot run on "
        f"product {product!r} under {mode.label}: tried {', '.join(tried) or 'nothing'}, none "
        f"is supported (AI Core dtypes: {', '.join(op.aicore_dtypes) or 'none'}; AI CPU dtypes: "
        f"{', '.join(op.aicpu_dtypes) or 'none'}). Choose another precision mode, change the "
        "model's dtype, or use a product whose operator table supports it.",
        node=node,
        details={"op_type": op.op_type, "tried": tried, "product": product,
                 "mode": mode.label, "original_dtype": original_dtype},
    )


_SEED_DTYPES = frozenset({F32, F16, BF16, "hifloat8"})
_PREFIX = re.compile(r"^(?:(?:matrix|vector) op)?(?:, )?(?:original \w+)?: ")
_RANK = {"float64": 4, "float32": 3, "bfloat16": 2, "float16": 2, "hifloat8": 1}


def _is_lower(dtype: str, original: str) -> bool:
    if dtype == original or dtype not in _RANK or original not in _RANK:
        return False
    return _RANK[dtype] < _RANK[original] or (original == BF16 and dtype == F16)


def decide(
    nodes: Sequence[NodeInfo],
    product: Product,
    config: ResolvedConfig,
    *,
    mixlist_overrides: Mapping[str, Any] | None = None,
) -> list[OpDecision]:
    """Decisions for every node, in the given (execution) order.

    The precision mode comes from ``config`` (:func:`effective_mode`); the mixed-precision
    lists from the product's ``precision_reduce`` flags edited by
    ``config.mixlist_overrides`` (or ``mixlist_overrides``); the implementation mode from
    :func:`~geplug.precision.implmode.choose_impl_mode` for the dtype each op computes in.
    """
    mode = effective_mode(config, product)
    raw = mixlist_overrides if mixlist_overrides is not None else config.mixlist_overrides
    overrides: dict[str, Any] = normalize_overrides(raw)  # resolved: never re-read the file
    lowered_by_node: dict[str, bool] = {}
    decisions: list[OpDecision] = []
    floats = product_float_dtypes(product)
    # selection is pure in (op type, original dtype, grey-list input): decide each distinct
    # case once, so a 10,000-node model costs a few selections (issue 10, compile speed)
    by_type: dict[str, tuple[OpSupport, str]] = {}
    selections: dict[tuple[str, str, bool], Selection] = {}
    impls: dict[tuple[str, str], ImplChoice] = {}
    by_node = config.impl_by_node
    for info in nodes:
        known = by_type.get(info.op_type)
        if known is None:
            op = product.op(info.op_type)
            known = by_type[info.op_type] = (
                op, list_state(info.op_type, op.precision_reduce, overrides))
        op, state = known
        preds = [p for p in info.predecessors if p in lowered_by_node]
        prev_lowered = bool(preds) and all(lowered_by_node[p] for p in preds)
        if info.original_dtype is None:
            impl = choose_impl(info.name, op, config)
            decisions.append(OpDecision(
                node=info.name, onnx_op=info.onnx_op, op_type=info.op_type, engine=AI_CPU,
                dtype="", impl_mode=impl.mode, reason=f"{mode.label}: no numeric tensor (strings, "
                "sequences, optionals): nothing to select, modelled on AI CPU (inferred)",
                op_class=op.op_class, impl_reason=impl.reason, impl_basis=impl.basis,
            ))
            lowered_by_node[info.name] = False
            continue
        key = (info.op_type, info.original_dtype, prev_lowered)
        sel = selections.get(key)
        if sel is None:
            sel = selections[key] = select_dtype(
                op, mode, info.original_dtype, node=info.name, product=product.name,
                mix_state=state, prev_lowered=prev_lowered, product_floats=floats,
            )
        lowered_by_node[info.name] = sel.lowered
        # the modes are told apart by the dtype the op computes in (seed 004); a node listed
        # by name ([ByNodeName]) is decided on its own
        if info.name in by_node:
            impl = choose_impl(info.name, op, config, sel.dtype)
        else:
            ikey = (info.op_type, sel.dtype)
            cached = impls.get(ikey)
            if cached is None:
                cached = impls[ikey] = choose_impl(info.name, op, config, sel.dtype)
            impl = cached
        decisions.append(OpDecision(
            node=info.name, onnx_op=info.onnx_op, op_type=info.op_type, engine=sel.engine,
            dtype=sel.dtype, impl_mode=impl.mode, reason=sel.reason,
            original_dtype=info.original_dtype, output_dtype=sel.out_dtype,
            op_class=op.op_class, mix_list=state if mode.is_mixed else "",
            lowered=sel.lowered, tried=sel.tried,
            impl_reason=impl.reason, impl_basis=impl.basis,
        ))
    return decisions


def summarize(decisions: Iterable[OpDecision]) -> dict[str, int]:
    """Counts of ops per ``engine dtype`` (``geplug demo`` prints these)."""
    counts: dict[str, int] = {}
    for d in decisions:
        key = f"{d.engine} {d.dtype or '-'}"
        counts[key] = counts.get(key, 0) + 1
    return counts
