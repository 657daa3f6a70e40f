"""The typed session configuration: every option of the seeds and the reference.

One frozen record, :class:`SessionConfig`, whatever form the options came in (TOML, a Python
mapping, a TF ``parameter_map``, a GE option map, ATC arguments). ``None`` means "not set by
the user"; :func:`geplug.config.resolve` fills in the effective values and says where each came
from. Values are stored as the real stack carries them (profiling options as strings, as in the
JSON the collector reads); range and product rules are checked by :func:`geplug.config.check`,
never by the constructor, so every problem is reported at once.
"""

from __future__ import annotations

from typing import Any

import attrs

from geplug import vocab

__all__ = ["PROFILING_KEYS", "ProfilingOptions", "SessionConfig"]

PROFILING_KEYS = vocab.PROFILING_KEYS
"""Keys of profiling_options geplug accepts (options.md §3.2-3.3, policy §12; their kinds in
:data:`geplug.vocab.PROFILING_KEY_KINDS`)."""


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


@attrs.frozen(kw_only=True)
class ProfilingOptions:
    """The ``profiling_options`` JSON object; every value a string, as the collector reads it."""

    output: str | None = attrs.field(default=None, converter=_opt_str)
    storage_limit: str | None = attrs.field(default=None, converter=_opt_str)
    training_trace: str | None = attrs.field(default=None, converter=_opt_str)
    task_trace: str | None = attrs.field(default=None, converter=_opt_str)
    task_time: str | None = attrs.field(default=None, converter=_opt_str)
    ge_api: str | None = attrs.field(default=None, converter=_opt_str)
    hccl: str | None = attrs.field(default=None, converter=_opt_str)
    aicpu: str | None = attrs.field(default=None, converter=_opt_str)
    fp_point: str | None = attrs.field(default=None, converter=_opt_str)
    bp_point: str | None = attrs.field(default=None, converter=_opt_str)
    aic_metrics: str | None = attrs.field(default=None, converter=_opt_str)
    aiv_metrics: str | None = attrs.field(default=None, converter=_opt_str)
    l2: str | None = attrs.field(default=None, converter=_opt_str)
    msproftx: str | None = attrs.field(default=None, converter=_opt_str)
    runtime_api: str | None = attrs.field(default=None, converter=_opt_str)
    task_memory: str | None = attrs.field(default=None, converter=_opt_str)
    sys_hardware_mem_freq: str | None = attrs.field(default=None, converter=_opt_str)
    llc_profiling: str | None = attrs.field(default=None, converter=_opt_str)
    sys_io_sampling_freq: str | None = attrs.field(default=None, converter=_opt_str)
    sys_interconnection_freq: str | None = attrs.field(default=None, converter=_opt_str)
    dvpp_freq: str | None = attrs.field(default=None, converter=_opt_str)
    instr_profiling: str | None = attrs.field(default=None, converter=_opt_str)
    instr_profiling_freq: str | None = attrs.field(default=None, converter=_opt_str)
    host_sys: str | None = attrs.field(default=None, converter=_opt_str)
    host_sys_usage: str | None = attrs.field(default=None, converter=_opt_str)
    host_sys_usage_freq: str | None = attrs.field(default=None, converter=_opt_str)
    power: str | None = attrs.field(default=None, converter=_opt_str)

    def items(self) -> dict[str, str]:
        """The keys that are set, in the reference's order."""
        return {k: v for k in PROFILING_KEYS if (v := getattr(self, k)) is not None}

    def is_on(self, key: str) -> bool:
        """Whether a switch key is on (``on``, or a level such as ``l0``/``l1``/``l2``)."""
        value = getattr(self, key)
        return value is not None and value not in ("", "off")


@attrs.frozen(kw_only=True)
class SessionConfig:
    """Every GE init/session/compile option geplug models (options.md §3-10).

    ``front_end`` records where the options came from (``tf``, ``ge``, ``atc``, ``torch``,
    ``python``):
    the real layers disagree on some defaults (options.md §12) and resolution follows the
    front end the user named.
    """

    front_end: str = attrs.field(
        default="tf", validator=attrs.validators.in_(("tf", "ge", "atc", "torch", "python"))
    )
    # profiling (options.md §3)
    profiling_mode: bool | None = None
    profiling_options: ProfilingOptions | None = None
    # dump (§4)
    enable_dump: bool | None = None
    dump_path: str | None = None
    dump_step: str | None = None
    dump_mode: str | None = None
    enable_dump_debug: bool | None = None
    dump_debug_mode: str | None = None
    dump_data: str | None = None
    dump_layer: str | None = None
    # precision (§5) and run mode (§6)
    precision_mode: str | None = None
    precision_mode_v2: str | None = None
    modify_mixlist: str | None = None
    graph_run_mode: int | None = None
    # operator debug (§7) and exception dump (§8)
    op_debug_level: int | None = None
    op_debug_config: str | None = None
    debug_dir: str | None = None
    enable_exception_dump: int | None = None
    # implementation mode (§9)
    op_select_implmode: str | None = None
    optypelist_for_implmode: str | None = None
    op_precision_mode: str | None = None
    # target (§10)
    soc_version: str | None = None
    # AI Cores to use and the operator compile cache (§16)
    aicore_num: int | None = None
    op_compiler_cache_mode: str | None = None
    op_compiler_cache_dir: str | None = None
    # on-chip (L2) buffer reuse: ATC --buffer_optimize, GE ge.bufferOptimize
    buffer_optimize: str | None = None
    # C04 layout of a first convolution of at most 4 channels: ATC --enable_small_channel,
    # GE ge.enableSmallChannel, TF parameter_map enable_small_channel (options.md §6, R29)
    enable_small_channel: int | None = None
    # the seed's example session sets it (options.md §15.1); carried, never checked
    use_off_line: bool | None = None

    # -- named constructors (raw input enters only here; geplug.config.parse does the work) --

    @classmethod
    def from_mapping(cls, data: Any, *, front_end: str = "tf", source: str = "") -> SessionConfig:
        """Read a mapping of option names (the TOML/seed names) to values.

        ``profiling_options`` may be a mapping or the JSON string the real stack takes.
        Raises :class:`~geplug.errors.ConfigError` with every parsing problem (unknown keys
        with a did-you-mean, wrong types, huge strings, a bad profiling JSON).
        """
        from geplug.config import parse

        return parse.ensure(parse.parse_mapping(data, front_end=front_end), source)

    @classmethod
    def from_toml(cls, path_or_text: Any, *, text: bool = False) -> SessionConfig:
        """Read a TOML file (or, with ``text=True``, TOML text) whose keys are option names."""
        from geplug.config import parse

        if text:
            return parse.ensure(parse.parse_toml_text(str(path_or_text)), "TOML text")
        return parse.ensure(parse.parse_toml_file(path_or_text), str(path_or_text))

    @classmethod
    def from_tf_parameter_map(cls, parameter_map: Any) -> SessionConfig:
        """Read a TF1 ``custom_op.parameter_map``-style mapping (options.md §2.1).

        Each value is what its accessor carries: a bool for ``.b`` options, ``str``/``bytes``
        for ``.s``, an int for ``.i`` - or any object with the ``b``/``s``/``i`` attribute
        (an ``AttrValue``).
        """
        from geplug.config import parse

        return parse.ensure(parse.parse_tf_parameter_map(parameter_map), "TF parameter_map")

    @classmethod
    def from_ge_options(cls, options: Any, *, level: str | None = None) -> SessionConfig:
        """Read a GE option map (``ge.exec.*`` keys or plain names, every value a string).

        ``level`` (``global``, ``session``, ``graph``): the GE level the map is passed at; an
        option GE accepts only at another level is an error (options.md §2.2, policy §12).
        """
        from geplug.config import parse

        return parse.ensure(parse.parse_ge_options(options, level=level), "GE option map")

    @classmethod
    def from_atc_args(cls, args: Any) -> SessionConfig:
        """Read ATC arguments (``["--precision_mode=force_fp16", ...]`` or one command line)."""
        from geplug.config import parse

        return parse.ensure(parse.parse_atc_args(args), "ATC arguments")

    @classmethod
    def from_torch_options(cls, options: Any) -> SessionConfig:
        """Read a ``torch_npu.npu.set_option`` dict (``ACL_PRECISION_MODE``, ...)."""
        from geplug.config import parse

        return parse.ensure(parse.parse_torch_options(options), "torch_npu options")

    def set_options(self) -> dict[str, Any]:
        """The options the user set (``front_end`` excluded), by name."""
        return {
            f.name: v
            for f in attrs.fields(SessionConfig)
            if f.name != "front_end" and (v := getattr(self, f.name)) is not None
        }
