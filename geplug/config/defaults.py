"""Front-end and product defaults shared by the checker and the resolver (options.md §12)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from geplug import vocab
from geplug.config.resolved import Source

if TYPE_CHECKING:
    from geplug.config.model import SessionConfig
    from geplug.config.problems import Problem
    from geplug.products.schema import Product

__all__ = [
    "PRECISION_MODES",
    "PRECISION_MODES_V2",
    "TF_ADAPTER_FRONT_ENDS",
    "default_exception_dump",
    "default_precision",
    "default_soc",
    "graph_run_mode",
    "soc_default_problem",
]

PRECISION_MODES = vocab.PRECISION_MODES
"""Every precision_mode value of any layer (options.md §5.1; :mod:`geplug.vocab`)."""
PRECISION_MODES_V2 = vocab.PRECISION_MODES_V2
"""Every precision_mode_v2 value of any layer (options.md §5.2; :mod:`geplug.vocab`)."""

TF_ADAPTER_FRONT_ENDS = ("tf", "python")
"""Front ends whose options pass through the TF adapter (its defaults apply, options.md §12;
with profiling_mode on and no options it substitutes its default JSON, §3.1)."""

_RUN_MODE_DEFAULT = {"tf": 1, "python": 1, "torch": 1, "ge": 0, "atc": 0}
_EXCEPTION_DEFAULT = {"tf": 2, "python": 2, "torch": 0, "ge": 0, "atc": 0}


def graph_run_mode(config: SessionConfig, product: Product) -> tuple[int, str]:
    """The effective graph_run_mode and its source.

    The user's value; else by front end (TF 1, GE 0, ATC 0 - policy §12); a product without
    training (``runtime.training`` false) defaults to 0.
    """
    if config.graph_run_mode is not None:
        return config.graph_run_mode, Source.USER
    value = _RUN_MODE_DEFAULT.get(config.front_end, 1)
    if value == 1 and not product.runtime.training:
        return 0, Source.PRODUCT_DEFAULT
    return value, Source.front_end(config.front_end)


def default_exception_dump(front_end: str) -> int:
    """enable_exception_dump default: TF-session API 2, GE-level API (and ATC) 0 (§8, §12)."""
    return _EXCEPTION_DEFAULT.get(front_end, 2)


def default_precision(product: Product, run_mode: int, front_end: str = "tf") -> str:
    """The product's precision_mode (v1) default for the run mode (options.md §5.3);
    torch_npu has its own per-product default (``precision.torch_default``)."""
    if front_end == "torch" and product.precision.torch_default:
        return product.precision.torch_default
    if run_mode == 1 and product.precision.default_training:
        return product.precision.default_training
    return product.precision.default_inference


def default_soc(product: Product, soc: str | None = None) -> str | None:
    """The soc_version used when the config sets none: ``soc`` (the SoC string the product was
    named by, e.g. ``--product Ascend910B3``) when it is one of the product's, else the
    product's first SoC."""
    if soc is not None and soc in product.soc_versions:
        return soc
    return product.soc_versions[0] if product.soc_versions else None


def soc_default_problem(config: SessionConfig, product: Product,
                        soc: str | None = None) -> Problem | None:
    """The warning that soc_version silently defaults to the product's first SoC (None when
    it is set, when the product was named by a SoC string, or when the product has one SoC)."""
    from geplug.config.problems import Problem

    if config.soc_version is not None or len(product.soc_versions) < 2:
        return None
    if soc is not None and soc in product.soc_versions:
        return None
    first = product.soc_versions[0]
    return Problem(option="soc_version", value=None, severity="warning",
                   message=f"soc_version not set: using {first}, the first SoC of "
                           f"{product.display_name}",
                   hint="set soc_version to your card's (npu-smi info)")
