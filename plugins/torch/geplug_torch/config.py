"""The configuration forms :func:`geplug_torch.backend` accepts.

- ``None``, a :class:`~geplug.config.SessionConfig`, a path to a TOML file, or a mapping of
  geplug option names - read as graph-mode (torchair) options, which reach GE: every GE
  precision mode, GE's training defaults (front end ``python``, run mode 1);
- a mapping of torch_npu ``set_option`` keys (``ACL_PRECISION_MODE``, ...), read by
  :meth:`SessionConfig.from_torch_options`;
- a torchair ``CompilerConfig`` (or :class:`CompilerConfig` here, the same shape): its
  ``dump_config`` fields as torchair's public docs give them - ``enable_dump``,
  ``dump_path``, ``dump_mode``, ``dump_step``, ``dump_layer``, ``dump_data`` - become the
  session's dump options; ``extra_options`` adds geplug option names (e.g.
  ``precision_mode``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from geplug.config.model import SessionConfig

__all__ = ["CompilerConfig", "DumpConfig", "to_session_config"]

_DUMP_FIELDS = ("enable_dump", "dump_path", "dump_mode", "dump_step", "dump_layer",
                "dump_data")


class DumpConfig:
    """torchair's ``CompilerConfig.dump_config`` (data dump in graph mode)."""

    def __init__(self) -> None:
        self.enable_dump = False
        self.dump_path: str | None = None
        self.dump_mode = "all"
        self.dump_step: str | None = None
        self.dump_layer: str | None = None
        self.dump_data = "tensor"


class CompilerConfig:
    """The torchair ``CompilerConfig`` shape geplug reads (``dump_config``), plus
    ``extra_options``: geplug option names for everything torchair sets elsewhere."""

    def __init__(self) -> None:
        self.dump_config = DumpConfig()
        self.extra_options: dict[str, Any] = {}


def _from_compiler_config(obj: Any) -> dict[str, Any]:
    options: dict[str, Any] = dict(getattr(obj, "extra_options", None) or {})
    dump = getattr(obj, "dump_config", None)
    if dump is not None and bool(getattr(dump, "enable_dump", False)):
        for name in _DUMP_FIELDS:
            value = getattr(dump, name, None)
            value = getattr(value, "value", value)  # torchair's OptionValue wrapper
            if value is not None and value != "":
                options[name] = value
        options.setdefault("dump_path", ".")
    return options


def _from_torch_options(options: dict[str, Any]) -> SessionConfig:
    """torch_npu ``set_option`` keys: every error at once (ConfigError); each warning -
    e.g. a deprecated key such as ``ACL_OP_SELECT_IMPL_MODE`` - as a ConfigWarning."""
    import warnings

    from geplug.config.parse import parse_torch_options
    from geplug.config.parse_common import ensure
    from geplug.errors import ConfigWarning

    parsed = parse_torch_options(options)
    config = ensure(parsed, "torch_npu options")
    for problem in parsed[1]:
        if problem.severity == "warning":
            warnings.warn(ConfigWarning(problem), stacklevel=4)
    return config


def to_session_config(config: Any) -> Any:
    """``config`` in a form :func:`geplug.initialize_system` reads (see the module doc)."""
    if config is None:
        return SessionConfig(front_end="python")
    if isinstance(config, Mapping):
        if config and all(str(k).startswith("ACL_") for k in config):
            return _from_torch_options(dict(config))
        return SessionConfig.from_mapping(dict(config), front_end="python")
    if hasattr(config, "dump_config") or hasattr(config, "extra_options"):
        return SessionConfig.from_mapping(_from_compiler_config(config), front_end="python")
    return config
