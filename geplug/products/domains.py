"""The value domains of the options a declaration talks about (not product knowledge).

Each set is every value the real stack knows for one option, over all products; a product
declares the subset it supports. The conformance suite checks declarations against these,
and ``geplug describe`` uses them to say what a product does *not* have even when no other
product is installed. Sources: ``docs/reference/options.md`` and ``formats.md``.
"""

from __future__ import annotations

from geplug import vocab

__all__ = [
    "AIC_METRICS_GROUPS",
    "BF16_MODES",
    "DEBUG_CONFIG_ITEMS",
    "DEBUG_LEVELS",
    "DUMP_DEBUG_MODES",
    "FREQUENCY_OPTIONS",
    "HOST_SYS_ITEMS",
    "IMPL_INI_VALUES",
    "INSTR_PROFILING_STYLES",
    "KERNEL_META_SUFFIXES",
    "PRECISION_MODES",
    "PRECISION_MODES_V2",
    "PROFILING_SWITCHES",
    "REQUIRED_OP_TYPES",
    "SELECT_IMPLMODES",
]

PRECISION_MODES = frozenset(vocab.PRECISION_MODES)
"""precision_mode values (options.md §5.1; defined in :mod:`geplug.vocab`)."""
PRECISION_MODES_V2 = frozenset(vocab.PRECISION_MODES_V2)
"""precision_mode_v2 values (options.md §5.2; defined in :mod:`geplug.vocab`)."""
BF16_MODES = frozenset(vocab.BF16_MODES)
"""The modes that need bf16 kernels (options.md §11 R10)."""
IMPL_INI_VALUES = frozenset(vocab.IMPL_INI_VALUES)
"""The FE whitelist of op_precision_mode ini values (options.md §9.3)."""
SELECT_IMPLMODES = frozenset(vocab.SELECT_IMPLMODES)
"""op_select_implmode values over all layers (options.md §9.1)."""
DUMP_DEBUG_MODES = frozenset(vocab.DUMP_DEBUG_MODES)
"""dump_debug_mode values (options.md §4.6)."""
DEBUG_LEVELS = vocab.DEBUG_LEVELS
"""op_debug_level values (options.md §7.1); the keys of ``[debug.kernel_meta]``."""
KERNEL_META_SUFFIXES = vocab.KERNEL_META_SUFFIXES
"""Files kernel_meta can hold, in the order formats.md §5 lists them."""
DEBUG_CONFIG_ITEMS = frozenset(vocab.DEBUG_CONFIG_ITEMS)
"""op_debug_config items (options.md §7.2)."""
AIC_METRICS_GROUPS = vocab.AIC_METRICS_GROUPS
"""Every named aic_metrics group of options.md §13.2 (``Custom:`` events aside)."""
INSTR_PROFILING_STYLES = vocab.INSTR_PROFILING_STYLES
"""How a product offers instruction profiling (options.md §3.3, R22-R23): the
``instr_profiling`` on/off switch, ``instr_profiling_freq`` (with its exclusions), or not."""
PROFILING_SWITCHES = frozenset(vocab.COLLECTION_KEYS)
"""profiling_options keys that turn a collection on (options.md §3.3); what an
``instr_profiling_exclusions`` list may name."""
FREQUENCY_OPTIONS = frozenset(vocab.FREQUENCY_KEYS)
"""profiling_options keys that take a sampling frequency (options.md §3.2-3.3)."""
HOST_SYS_ITEMS = frozenset(vocab.HOST_SYS_ITEMS)
"""host_sys values (options.md §3.3)."""
REQUIRED_OP_TYPES = (
    "MatMulV2", "BatchMatMulV2", "Conv2D", "Add", "Sub", "Mul", "Div", "Relu", "Gelu",
    "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "SoftmaxV2", "LayerNorm", "Pooling", "LRN",
    "ROIAlign", "ReduceSum", "ReduceMean", "Cast", "Transpose", "Reshape", "Concat", "Gather",
)
"""Op types every family's table lists (issue 2); any other op uses ``[ops.default]``."""
