"""Precision-mode names: the v1/v2 vocabulary and the selection rule each one follows."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from geplug import vocab

if TYPE_CHECKING:
    from geplug.config.resolved import ResolvedConfig
    from geplug.products.schema import Product

__all__ = [
    "FLOAT_DTYPES",
    "MIX_RULES",
    "RULES",
    "V1_MODES",
    "V2_MODES",
    "PrecisionMode",
    "effective_mode",
    "mode_from_name",
]

FLOAT_DTYPES = ("float32", "float16", "bfloat16")
"""The dtypes the selection table of options.md §5.4 speaks about."""

_V1_ALIASES = {
    "cube_fp16in_fp32out": "force_fp32",
    "allow_mix_precision": "allow_mix_precision_fp16",
}
V1_MODES = {mode: _V1_ALIASES.get(mode, mode) for mode in vocab.PRECISION_MODES}
"""precision_mode value -> selection rule (options.md §5.1: the documented aliases share one;
every other mode is its own rule). The values are :data:`geplug.vocab.PRECISION_MODES`."""

_V2_RULES = {
    "fp16": "fp16_v2",
    "origin": "must_keep_origin_dtype",
    "cube_fp16in_fp32out": "force_fp32",
    "mixed_float16": "allow_mix_precision_fp16",
    "mixed_bfloat16": "allow_mix_precision_bf16",
}
V2_MODES = {mode: _V2_RULES.get(mode, mode) for mode in vocab.PRECISION_MODES_V2}
"""precision_mode_v2 value -> selection rule (options.md §5.2 equivalences; v2 ``fp16`` has
its own rule: no "supports all three dtypes" condition, §5.4)."""

RULES = frozenset(V1_MODES.values()) | frozenset(V2_MODES.values())
MIX_RULES = {
    "allow_mix_precision_fp16": "float16",
    "allow_mix_precision_bf16": "bfloat16",
    "mixed_hif8": "hifloat8",
}
"""Mixed-precision rules -> the dtype their built-in policy lowers white-list ops to."""


@attrs.frozen
class PrecisionMode:
    """An effective precision mode: the option that set it, its value and its rule."""

    option: str
    """``precision_mode`` or ``precision_mode_v2``."""
    value: str
    rule: str

    @property
    def label(self) -> str:
        """``precision_mode=value`` as the user wrote it."""
        return f"{self.option}={self.value}"

    @property
    def is_mixed(self) -> bool:
        """Whether the mode follows the white/black/grey lists (options.md §5.5)."""
        return self.rule in MIX_RULES


def mode_from_name(value: str, *, v2: bool = False) -> PrecisionMode:
    """The :class:`PrecisionMode` of a precision_mode (or, with ``v2``, precision_mode_v2) value.

    Raises :class:`ValueError` naming the valid values for an unknown one (configuration
    checking normally rejects it earlier, with the product's list).
    """
    table = V2_MODES if v2 else V1_MODES
    option = "precision_mode_v2" if v2 else "precision_mode"
    if value not in table:
        raise ValueError(
            f"{option} value {value!r} is not a precision mode; valid values: "
            + ", ".join(sorted(table))
        )
    return PrecisionMode(option=option, value=value, rule=table[value])


def effective_mode(config: ResolvedConfig, product: Product | None = None) -> PrecisionMode:
    """The precision mode in force for ``config``.

    After :func:`geplug.config.resolve` exactly one of ``precision_mode`` and
    ``precision_mode_v2`` is set. For a hand-built configuration with neither, the product's
    default for the run mode applies (options.md §5.3), else ``must_keep_origin_dtype``.
    """
    cfg = config.config
    if cfg.precision_mode_v2:
        return mode_from_name(cfg.precision_mode_v2, v2=True)
    if cfg.precision_mode:
        return mode_from_name(cfg.precision_mode)
    if product is not None:
        caps = product.precision
        default = caps.default_inference if config.run_mode == "inference" else (
            caps.default_training or caps.default_inference
        )
        if default:
            return mode_from_name(default)
    return mode_from_name("must_keep_origin_dtype")
