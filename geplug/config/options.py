"""The option table: each option's type and its name in every front end (options.md §2-10)."""

from __future__ import annotations

import attrs

__all__ = [
    "ATC_IGNORED_FLAGS",
    "FRONT_ENDS",
    "GE_KEY_TO_OPTION",
    "GE_LEVELS",
    "OPTIONS",
    "OPTION_ORDER",
    "TF_ALIASES",
    "TORCH_CARRIED_KEYS",
    "TORCH_KEY_TO_OPTION",
    "OptionSpec",
]

FRONT_ENDS = ("tf", "ge", "atc", "torch", "python")
"""Where a configuration came from; defaults differ between them (options.md §12)."""
GE_LEVELS = ("global", "session", "graph")
"""GE option levels: ``GEInitialize`` (global / init), ``ge::Session``, per graph (§2.2)."""
_ALL = GE_LEVELS
_GLOBAL = ("global",)
_GS = ("global", "session")


@attrs.frozen(kw_only=True)
class OptionSpec:
    """One session option: its value kind and its spelling in each layer.

    ``kind`` is ``bool``, ``int``, ``str`` or ``profiling`` (the JSON object of §3.2).
    ``tf_accessor`` is the AttrValue field the TF adapter reads (options.md §2.1).
    ``ge_keys``: GE option keys, the ``ge.*`` key first (the TF adapter also sets the plain name).
    ``atc_flag``/``torch_key``: "" when that layer has no equivalent.
    ``ge_levels``: the GE levels that accept the option (options.md §2.2 and the per-option
    "GE docs" notes); GE only warns about another level, geplug rejects it (policy §12).
    """

    name: str
    kind: str
    tf_accessor: str
    ge_keys: tuple[str, ...] = ()
    atc_flag: str = ""
    torch_key: str = ""
    section: str = ""
    ge_levels: tuple[str, ...] = GE_LEVELS


def _o(name: str, kind: str, acc: str, ge: tuple[str, ...], atc: str = "", torch: str = "",
       section: str = "", levels: tuple[str, ...] = _ALL) -> OptionSpec:
    return OptionSpec(name=name, kind=kind, tf_accessor=acc, ge_keys=ge, atc_flag=atc,
                      torch_key=torch, section=section, ge_levels=levels)


_SPECS = (
    _o("profiling_mode", "bool", "b", ("ge.exec.profilingMode", "profiling_mode"),
       section="§3.1", levels=_GLOBAL),
    _o("profiling_options", "profiling", "s", ("ge.exec.profilingOptions", "profiling_options"),
       section="§3.2", levels=_GLOBAL),
    _o("enable_dump", "bool", "b", ("ge.exec.enableDump", "enable_dump"),
       section="§4.1", levels=_GS),
    _o("dump_path", "str", "s", ("ge.exec.dumpPath", "dump_path"), section="§4.2", levels=_GS),
    _o("dump_step", "str", "s", ("ge.exec.dumpStep", "dump_step"), section="§4.3", levels=_GS),
    _o("dump_mode", "str", "s", ("ge.exec.dumpMode", "dump_mode"), section="§4.4", levels=_GS),
    _o("enable_dump_debug", "bool", "b", ("ge.exec.enableDumpDebug", "enable_dump_debug"),
       section="§4.5", levels=_GS),
    _o("dump_debug_mode", "str", "s", ("ge.exec.dumpDebugMode", "dump_debug_mode"),
       section="§4.6", levels=_GS),
    _o("dump_data", "str", "s", ("ge.exec.dumpData", "dump_data"), section="§4.7", levels=_GS),
    _o("dump_layer", "str", "s", ("ge.exec.dumpLayer", "dump_layer"), section="§4.7", levels=_GS),
    _o("precision_mode", "str", "s", ("ge.exec.precision_mode", "precision_mode"),
       atc="precision_mode", torch="ACL_PRECISION_MODE", section="§5.1"),
    _o("precision_mode_v2", "str", "s", ("ge.exec.precision_mode_v2", "precision_mode_v2"),
       atc="precision_mode_v2", section="§5.2"),
    _o("modify_mixlist", "str", "s", ("ge.exec.modify_mixlist", "modify_mixlist"),
       atc="modify_mixlist", section="§5.5"),
    _o("graph_run_mode", "int", "i", ("ge.graphRunMode", "graph_run_mode"),
       section="§6", levels=_GS),
    _o("op_debug_level", "int", "i", ("ge.opDebugLevel", "op_debug_level"),
       atc="op_debug_level", torch="ACL_OP_DEBUG_LEVEL", section="§7.1"),
    _o("op_debug_config", "str", "s", ("ge.exec.opDebugConfig", "op_debug_config"),
       atc="op_debug_config", torch="ACL_OP_DEBUG_OPTION", section="§7.2", levels=_GLOBAL),
    _o("debug_dir", "str", "s", ("ge.debugDir", "debug_dir"), atc="debug_dir",
       torch="ACL_DEBUG_DIR", section="§7.3"),
    _o("enable_exception_dump", "int", "i",
       ("ge.exec.enable_exception_dump", "enable_exception_dump"), section="§8", levels=_GLOBAL),
    _o("op_select_implmode", "str", "s", ("ge.opSelectImplmode", "op_select_implmode"),
       atc="op_select_implmode", torch="ACL_OP_SELECT_IMPL_MODE", section="§9.1", levels=_GS),
    _o("optypelist_for_implmode", "str", "s",
       ("ge.optypelistForImplmode", "optypelist_for_implmode"),
       atc="optypelist_for_implmode", torch="ACL_OPTYPELIST_FOR_IMPLMODE",
       section="§9.2", levels=_GS),
    _o("op_precision_mode", "str", "s", ("ge.exec.op_precision_mode", "op_precision_mode"),
       atc="op_precision_mode", section="§9.3", levels=_GS),
    _o("soc_version", "str", "s", ("ge.socVersion", "soc_version"), atc="soc_version",
       section="§10"),
    _o("aicore_num", "int", "s", ("ge.aicoreNum", "aicore_num"), torch="ACL_AICORE_NUM",
       section="CANN ATC/GE docs"),
    _o("op_compiler_cache_mode", "str", "s",
       ("ge.op_compiler_cache_mode", "op_compiler_cache_mode"), atc="op_compiler_cache_mode",
       torch="ACL_OP_COMPILER_CACHE_MODE", section="CANN ATC/GE docs"),
    _o("op_compiler_cache_dir", "str", "s",
       ("ge.op_compiler_cache_dir", "op_compiler_cache_dir"), atc="op_compiler_cache_dir",
       torch="ACL_OP_COMPILER_CACHE_DIR", section="CANN ATC/GE docs"),
    _o("buffer_optimize", "str", "s", ("ge.bufferOptimize", "buffer_optimize"),
       atc="buffer_optimize", section="CANN ATC/GE docs"),
    _o("enable_small_channel", "int", "i",
       ("ge.enableSmallChannel", "ge.exec.enable_small_channel", "enable_small_channel"),
       atc="enable_small_channel", section="§6 (R29); CANN ATC docs"),
    _o("use_off_line", "bool", "b", (), section="§15.1"),
)

OPTIONS: dict[str, OptionSpec] = {s.name: s for s in _SPECS}
"""Option name (as in the seeds / TOML) -> spec."""

OPTION_ORDER: tuple[str, ...] = tuple(s.name for s in _SPECS)

GE_KEY_TO_OPTION: dict[str, str] = {k: s.name for s in _SPECS for k in s.ge_keys}
"""Every GE key (``ge.exec.dumpStep``) and plain key (``dump_step``) -> option name."""

TF_ALIASES: dict[str, str] = {"soc_config": "soc_version"}
"""TF ``parameter_map`` names that differ from the option name (options.md §10)."""

TORCH_KEY_TO_OPTION: dict[str, str] = {s.torch_key: s.name for s in _SPECS if s.torch_key}

TORCH_CARRIED_KEYS: frozenset[str] = frozenset()
"""torch_npu ``set_option`` keys that exist but are not session options geplug models: read
with a warning, never an error. Empty since ACL_AICORE_NUM and the compile-cache keys became
options (aicore_num, op_compiler_cache_mode, op_compiler_cache_dir)."""

ATC_IGNORED_FLAGS = frozenset({
    "model", "weight", "framework", "output", "input_shape", "input_format", "out_nodes",
    "log", "mode", "singleop", "insert_op_conf", "output_type", "input_fp16_nodes",
    "dynamic_batch_size", "dynamic_image_size", "dynamic_dims", "host_env_os", "host_env_cpu",
    "keep_dtype", "customize_dtypes", "allow_hf32", "fusion_switch_file",
    "compression_optimize_conf", "input_shape_range",
    "is_input_adjust_hw_layout",
    "is_output_adjust_hw_layout", "status_check", "dump_mode", "json", "om",
})
"""ATC flags that are not session options: accepted by the ATC reader and left aside."""
