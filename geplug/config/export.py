"""Export a config to what the real stack consumes: GE option map, TF1 session-config snippet,
ATC command line, torch_npu ``set_option`` (options.md §2, the seed's example for TF).

Exporters write the options the user set, plus the front-end dependent defaults that would
otherwise change meaning in the target layer (graph_run_mode and enable_exception_dump differ
between TF and GE, policy §12; ATC needs soc_version). :func:`read_export` reads every form
back, so ``read_export(export(c)) == c`` on the options the target can express.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from geplug.config.defaults import default_exception_dump, graph_run_mode
from geplug.config.model import ProfilingOptions, SessionConfig
from geplug.config.options import OPTION_ORDER, OPTIONS
from geplug.products.schema import Product

__all__ = ["TARGETS", "export", "expressible", "materialised_defaults", "read_export"]

TARGETS = ("ge", "tf", "atc", "torch")
_TARGET_FRONT_END = {"ge": "ge", "tf": "tf", "atc": "atc", "torch": "torch"}
_NO_TORCH = {
    "profiling_mode": "torch_npu.profiler.profile(experimental_config=_ExperimentalConfig(...))",
    "profiling_options": "torch_npu.profiler._ExperimentalConfig fields (aic_metrics, l2_cache, "
                         "...)",
    "enable_dump": "an acl.json dump block loaded by torch_npu.npu.init_dump()/set_dump()",
    "dump_path": "acl.json dump_path",
    "dump_step": "acl.json dump_step",
    "dump_mode": "acl.json dump_mode",
    "enable_dump_debug": "acl.json dump_debug",
    "enable_exception_dump": "env NPU_COLLECT_PATH / ASCEND_DUMP_SCENE",
}


def _target(to: str) -> str:
    key = "torch" if to in ("torch", "torch_npu") else to
    if key not in TARGETS:
        from geplug.config.problems import Problem
        from geplug.errors import ConfigError

        raise ConfigError([Problem(option="--to", value=to, severity="error",
                                   message=f"unknown export target {to!r}",
                                   hint="use ge, tf, atc or torch_npu")])
    return key


def expressible(to: str) -> tuple[str, ...]:
    """The options the target can carry (the others are listed as comments or dropped)."""
    key = _target(to)
    if key in ("ge", "tf"):
        return OPTION_ORDER
    if key == "atc":
        return tuple(n for n in OPTION_ORDER if OPTIONS[n].atc_flag)
    return tuple(n for n in OPTION_ORDER if OPTIONS[n].torch_key)


def materialised_defaults(config: SessionConfig, product: Product, to: str) -> dict[str, Any]:
    """Defaults written explicitly because the target layer's own default differs."""
    key = _target(to)
    out: dict[str, Any] = {}
    if key in ("ge", "tf"):
        target = SessionConfig(front_end=_TARGET_FRONT_END[key])
        if config.graph_run_mode is None:
            mine, _ = graph_run_mode(config, product)
            theirs, _ = graph_run_mode(target, product)
            if mine != theirs:
                out["graph_run_mode"] = mine
        if config.enable_exception_dump is None:
            mine_e = default_exception_dump(config.front_end)
            if mine_e != default_exception_dump(target.front_end):
                out["enable_exception_dump"] = mine_e
    if key == "atc" and config.soc_version is None and product.soc_versions:
        out["soc_version"] = product.soc_versions[0]
    return out


def _values(config: SessionConfig, product: Product, to: str) -> dict[str, Any]:
    names = expressible(to)
    values = {n: getattr(config, n) for n in names if getattr(config, n) is not None}
    values.update(materialised_defaults(config, product, to))
    return {n: values[n] for n in OPTION_ORDER if n in values}


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, ProfilingOptions):
        return json.dumps(value.items(), separators=(",", ":"))
    return str(value)


def export(config: SessionConfig, product: Product, to: str) -> str:
    """``config`` as text for ``to`` in ge | tf | atc | torch_npu (``torch`` also accepted)."""
    key = _target(to)
    values = _values(config, product, key)
    left_out = [n for n in config.set_options() if n not in values]
    if key == "ge":
        return json.dumps({OPTIONS[n].ge_keys[0]: _text(v) for n, v in values.items()},
                          indent=2) + "\n"
    if key == "tf":
        return _tf(values)
    if key == "atc":
        lines = [f"# {n}: no ATC flag (set it in the session, not in ATC)" for n in left_out]
        args = ["atc"] + [f"--{OPTIONS[n].atc_flag}={_text(v)}" for n, v in values.items()]
        lines.append(" ".join(shlex.quote(a) for a in args))
        return "\n".join(lines) + "\n"
    lines = [f"# {n}: no torch_npu set_option key; use {_NO_TORCH.get(n, 'nothing')}"
             for n in left_out]
    options = {OPTIONS[n].torch_key: _text(v) for n, v in values.items()}
    lines += ["import torch_npu", "",
              f"torch_npu.npu.set_option({json.dumps(options, indent=4)})"]
    return "\n".join(lines) + "\n"


def _py_str(text: str) -> str:
    """A Python string literal, double-quoted as in the seed when that is possible."""
    literal = repr(text)
    if literal.startswith("'") and '"' not in text and "\\" not in literal:
        literal = '"' + literal[1:-1].replace("\\'", "'") + '"'
    return literal


def _tf(values: dict[str, Any]) -> str:
    lines = [
        "import tensorflow as tf",
        "from npu_bridge.npu_init import *",
        "",
        "config = tf.ConfigProto()",
        "custom_op = config.graph_options.rewrite_options.custom_optimizers.add()",
        'custom_op.name = "NpuOptimizer"',
    ]
    for name, value in values.items():
        spec = OPTIONS[name]
        tf_name = "soc_config" if name == "soc_version" else name
        target = f'custom_op.parameter_map["{tf_name}"].{spec.tf_accessor}'
        if spec.tf_accessor == "b":
            rhs = "True" if value else "False"
        elif spec.tf_accessor == "i":
            rhs = str(value)
        else:
            rhs = f"tf.compat.as_bytes({_py_str(_text(value))})"
        lines.append(f"{target} = {rhs}")
    lines += [
        "config.graph_options.rewrite_options.remapping = RewriterConfig.OFF",
        "config.graph_options.rewrite_options.memory_optimization = RewriterConfig.OFF",
    ]
    return "\n".join(lines) + "\n"


def read_export(text: str, to: str) -> SessionConfig:
    """Read back what :func:`export` wrote for ``to``; raises ConfigError on bad text."""
    from geplug.config import parse

    key = _target(to)
    if key == "ge":
        try:
            data = json.loads(text)
        except ValueError as exc:
            from geplug.config.problems import Problem
            from geplug.errors import ConfigError

            raise ConfigError([Problem(option="<ge>", value=text[:200], severity="error",
                                       message=f"not JSON: {exc}")]) from None
        return parse.ensure(parse.parse_ge_options(data), "GE option map")
    if key == "tf":
        return parse.ensure(parse.parse_tf_snippet(text), "TF snippet")
    if key == "atc":
        lines = text.split("\n")
        while lines and (not lines[0].strip() or lines[0].startswith("#")):
            lines.pop(0)
        return parse.ensure(parse.parse_atc_args("\n".join(lines)), "ATC command line")
    start, end = text.find("set_option(") + len("set_option("), text.rfind(")")
    try:
        data = json.loads(text[start:end])
    except ValueError:
        data = None
    return parse.ensure(parse.parse_torch_options(data), "torch_npu options")
