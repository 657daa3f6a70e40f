"""geplug's vocabulary: every value set of the real stack that geplug reads, checks or writes.

Defined once, here, and imported by the readers, the configuration checker and resolver, the
writers, the CLI and the conformance suites (``tests/core/test_core_vocabulary.py`` fails when
a module spells one of these sets out again). Each set is an ordered tuple (messages list the
values in the documented order); ``value in SET`` works on it, and
:func:`geplug.products.domains` keeps ``frozenset`` views for set algebra. Sources:
``docs/reference/options.md`` and ``formats.md``.

Engines and task types, in the real stack's words:

- an **engine** is where an op's kernel comes from, decided at compile: ``AI_CORE`` (a TBE
  kernel on the AI Core) or ``AI_CPU`` (an AI CPU kernel) - what ``geplug compile`` and the
  precision decision (``OpDecision.engine``) say;
- a **task type** is how the device runs that kernel, as msprof's ``Task Type`` column
  names it: an ``AI_CORE`` op is an ``AI_CORE`` task (cube work, or every op on a product
  whose AI Core is not split), an ``AI_VECTOR_CORE`` task (vector-only work on a split-core
  product, A2/A3/950), or ``MIX_AIC``/``MIX_AIV``; an ``AI_CPU`` op is an ``AI_CPU`` task;
  collectives are ``COMMUNICATION``. ``geplug profile summary`` and ``geplug compile`` (its
  ``task type`` column) show it. So a Relu on Atlas A2 is engine ``AI_CORE``, task type
  ``AI_VECTOR_CORE`` in every command. No short form (``AIC``) is used for either; ``AIC`` /
  ``AIV`` / ``AICPU`` appear only where a file format spells them so (the overflow and
  exception dump ``acc_type``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = [
    "AIC_METRICS_GROUPS",
    "BF16_MODES",
    "COLLECTION_KEYS",
    "DEBUG_CONFIG_ITEMS",
    "DEBUG_LEVELS",
    "DUMP_DEBUG_MODES",
    "DUMP_MODES",
    "ENGINES",
    "FREQUENCY_KEYS",
    "HOST_SYS_ITEMS",
    "IMPL_INI_VALUES",
    "INSTR_PROFILING_STYLES",
    "KERNEL_META_SUFFIXES",
    "PRECISION_MODES",
    "PRECISION_MODES_V2",
    "PROFILING_KEYS",
    "PROFILING_KEY_KINDS",
    "PROFILING_LEVELS",
    "SELECT_IMPLMODES",
    "SWITCH_KEYS",
    "TASK_TYPES",
]

PRECISION_MODES = (
    "force_fp32", "cube_fp16in_fp32out", "allow_fp32_to_fp16", "force_fp16",
    "must_keep_origin_dtype", "allow_mix_precision", "allow_mix_precision_fp16",
    "allow_mix_precision_bf16", "allow_fp32_to_bf16",
)
"""Every precision_mode value of any layer (options.md §5.1)."""
PRECISION_MODES_V2 = (
    "fp16", "origin", "cube_fp16in_fp32out", "mixed_float16", "mixed_bfloat16", "cube_hif8",
    "mixed_hif8",
)
"""Every precision_mode_v2 value of any layer (options.md §5.2)."""
BF16_MODES = ("allow_mix_precision_bf16", "allow_fp32_to_bf16", "mixed_bfloat16")
"""The modes that need bf16 kernels (options.md §11 R10)."""

DUMP_MODES = ("input", "output", "all")
"""dump_mode values (options.md §4.4)."""
DUMP_DEBUG_MODES = ("aicore_overflow", "atomic_overflow", "all")
"""dump_debug_mode values (options.md §4.6)."""
OP_COMPILER_CACHE_MODES = ("enable", "disable", "force")
"""op_compiler_cache_mode values (CANN ATC docs, --op_compiler_cache_mode; GE's
``ge.op_compiler_cache_mode``: "disable", "enable" or "force", default disable)."""
BUFFER_OPTIMIZE_MODES = ("l2_optimize", "off_optimize")
"""buffer_optimize values (CANN ATC docs, --buffer_optimize; GE's ``ge.bufferOptimize``):
``l2_optimize`` (the default) places intermediate tensors in the L2 buffer, ``off_optimize``
turns that off (docs/device-model.md, "On-chip reuse")."""
BUFFER_OPTIMIZE_DEFAULT = "l2_optimize"
"""buffer_optimize's documented default on every product family."""
OP_COMPILER_CACHE_DIR_DEFAULT = "$HOME/atc_data"
"""op_compiler_cache_dir's documented default (CANN ATC docs, --op_compiler_cache_dir)."""

PROFILING_KEY_KINDS: Mapping[str, str] = MappingProxyType({
    "output": "path",
    "storage_limit": "size",
    "training_trace": "switch",
    "task_trace": "level",
    "task_time": "level",
    "ge_api": "level",
    "hccl": "switch",
    "aicpu": "switch",
    "fp_point": "op",
    "bp_point": "op",
    "aic_metrics": "metrics",
    "aiv_metrics": "metrics",
    "l2": "switch",
    "msproftx": "switch",
    "runtime_api": "switch",
    "task_memory": "switch",
    "sys_hardware_mem_freq": "frequency",
    "llc_profiling": "choice",
    "sys_io_sampling_freq": "frequency",
    "sys_interconnection_freq": "frequency",
    "dvpp_freq": "frequency",
    "instr_profiling": "switch",
    "instr_profiling_freq": "frequency",
    "host_sys": "list",
    "host_sys_usage": "list",
    "host_sys_usage_freq": "frequency",
    "power": "undocumented",
})
"""Every profiling_options key geplug accepts (options.md §3.2-3.3, policy §12) and its kind:
``switch`` (on/off; ``training_trace`` only "on"), ``level`` (:data:`PROFILING_LEVELS`),
``frequency`` (a sampling rate, product maxima in ``[profiling]``), ``metrics`` (an
:data:`AIC_METRICS_GROUPS` group or ``Custom:``), ``op`` (an op name), ``path``, ``size``
(``<n>MB``), ``choice`` (``llc_profiling``: read/write), ``list`` (comma list),
``undocumented`` (``power``: accepted by the collector, no documented values). Of the 2026
collector's extra keys only ``task_memory`` (msprof ``--task-memory``, CANN operator memory)
is accepted; the others (``sys_lp_freq``, ``task_block``, ...) are not yet."""
PROFILING_KEYS = tuple(PROFILING_KEY_KINDS)
"""The keys of :data:`PROFILING_KEY_KINDS`, in the documented order."""
PROFILING_LEVELS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "task_trace": ("on", "off", "l0", "l1", "l2"),
    "task_time": ("on", "off", "l0", "l1"),
    "ge_api": ("off", "l0", "l1"),
})
"""The values of each ``level`` key."""
SWITCH_KEYS = tuple(k for k, kind in PROFILING_KEY_KINDS.items()
                    if kind == "switch" and k != "training_trace")
"""The on/off keys (``training_trace`` takes only "on" and has its own rule)."""
FREQUENCY_KEYS = tuple(k for k, kind in PROFILING_KEY_KINDS.items() if kind == "frequency")
"""The keys that take a sampling frequency."""
COLLECTION_KEYS = (
    "training_trace", "task_trace", "hccl", "aicpu", "fp_point", "bp_point", "aic_metrics",
    "aiv_metrics", "l2", "task_time", "runtime_api", "ge_api", "msproftx", "llc_profiling",
    "host_sys", "power", "task_memory",
)
"""The keys that turn a collection on (options.md §3.3): what an
``instr_profiling_exclusions`` list may name."""
AIC_METRICS_GROUPS = (
    "ArithmeticUtilization", "PipeUtilization", "Memory", "MemoryL0", "MemoryUB",
    "ResourceConflictRatio", "L2Cache", "MemoryAccess", "PipelineExecuteUtilization",
)
"""Every named aic_metrics group of options.md §13.2 (``Custom:`` events aside)."""

IMPL_INI_VALUES = (
    "high_precision", "high_performance", "enable_float_32_execution",
    "enable_hi_float_32_execution", "support_out_of_bound_index", "super_performance",
    "norm_class", "keep_fp16",
)
"""The FE whitelist of op_precision_mode ini values (options.md §9.3)."""
SELECT_IMPLMODES = (
    "high_precision", "high_performance", "high_precision_for_all", "high_performance_for_all",
    "enable_float_32_execution", "enable_hi_float_32_execution",
)
"""op_select_implmode values over all layers (options.md §9.1)."""
DEBUG_LEVELS = ("0", "1", "2", "3", "4")
"""op_debug_level values (options.md §7.1); the keys of ``[debug.kernel_meta]``."""
DEBUG_CONFIG_ITEMS = ("oom", "dump_cce", "dump_loc", "ccec_O0", "ccec_g", "check_flag")
"""The documented op_debug_config items (options.md §7.2)."""
KERNEL_META_SUFFIXES = (".o", ".json", ".cce", "_loc.json", "_compute.json")
"""Files kernel_meta can hold, in the order formats.md §5 lists them."""
INSTR_PROFILING_STYLES = ("switch", "frequency", "unsupported")
"""How a product offers instruction profiling (options.md §3.3, R22-R23)."""
HOST_SYS_ITEMS = ("cpu", "mem", "disk", "network", "osrt")
"""host_sys values (options.md §3.3)."""

ENGINES = ("AI_CORE", "AI_CPU")
"""Where an op's kernel comes from (the compile decision); see the module docstring."""
TASK_TYPES = ("AI_CORE", "AI_VECTOR_CORE", "MIX_AIC", "MIX_AIV", "AI_CPU", "COMMUNICATION")
"""msprof's Task Type of a device task (formats.md §6); see the module docstring."""
