"""Export a config to what the real stack consumes: GE option map, TF1 session-config snippet,
ATC command line, torch_npu ``set_option`` (options.md §2, §5.1, §7.1, §9.1; the seed's example).

Each target carries only what it can take. An option the target has no key for, or a value the
target refuses (torch_npu takes only two precision modes and two implementation modes, ATC only
its flags and their value tables, no hif8 outside ATC), is left out: a ``#`` comment says so in
the TF, ATC and torch_npu texts, and :func:`export_report` returns a warning :class:`Problem`
for it - never an invalid setting. Defaults that differ between layers (graph_run_mode and
enable_exception_dump between TF and GE, policy §12; ATC's mandatory soc_version) are written
explicitly. :func:`read_export` reads every form back: ``read_export(export(c)) == carried``.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

import attrs

from geplug.config.defaults import (
    PRECISION_MODES,
    PRECISION_MODES_V2,
    TF_ADAPTER_FRONT_ENDS,
    default_exception_dump,
    default_soc,
    graph_run_mode,
    soc_default_problem,
)
from geplug.config.model import ProfilingOptions, SessionConfig
from geplug.config.options import OPTION_ORDER, OPTIONS
from geplug.config.problems import Problem
from geplug.config.rules.implmode import TORCH_IMPLMODES
from geplug.config.rules.precision import TORCH_PRECISION
from geplug.errors import ConfigError
from geplug.products.schema import Product

__all__ = ["TARGETS", "Export", "export", "export_report", "export_values", "read_export"]

TARGETS = ("ge", "tf", "atc", "torch", "acl_json")
TARGET_NAMES = {"ge": "GE", "tf": "the TF adapter", "atc": "ATC", "torch": "torch_npu",
                "acl_json": "acl.json"}
_NO_EQUIVALENT = {"ge": "no GE equivalent", "tf": "no TF adapter equivalent",
                  "atc": "no ATC equivalent", "torch": "no torch_npu equivalent",
                  "acl_json": "no acl.json key"}
ACL_DUMP_KEYS = {"dump_path": "dump_path", "dump_step": "dump_step", "dump_mode": "dump_mode",
                 "dump_data": "dump_data"}
"""Session option -> key of the acl.json ``dump`` block (options.md §4: ``dump_list``,
``dump_path``, ``dump_mode``, ``dump_data``, ``dump_step``, ...); ``enable_dump_debug`` is
``dump_debug: "on"``, ``enable_dump`` the block itself."""
ATC_PLACEHOLDERS = ("--model=${MODEL}", "--framework=${FRAMEWORK:-5}", "--output=${OUTPUT}")
"""What no session option says: the model file, its framework (5 ONNX, 3 TensorFlow,
0 Caffe, 1 MindSpore) and the output name, as shell variables to set before running."""
"""The phrase for an option a target has no key for (no article: "no TF adapter ...")."""
HIF8_MODES = ("cube_hif8", "mixed_hif8")
SESSION_IMPLMODES = ("high_precision", "high_performance", "high_precision_for_all",
                     "high_performance_for_all")
"""op_select_implmode values of the TF adapter and the ATC value table (§9.1, policy §12)."""
GE_IMPLMODES = (*SESSION_IMPLMODES, "enable_float_32_execution", "enable_hi_float_32_execution")
DEBUG_LEVELS = range(5)

_ELSEWHERE = {
    "torch": {
        "profiling_mode": "torch_npu.profiler.profile(experimental_config=_ExperimentalConfig())",
        "profiling_options": "torch_npu.profiler._ExperimentalConfig fields (aic_metrics, "
                             "l2_cache, ...)",
        "enable_dump": "an acl.json dump block loaded by torch_npu.npu.init_dump()/set_dump()",
        "dump_path": "acl.json dump_path", "dump_step": "acl.json dump_step",
        "dump_mode": "acl.json dump_mode", "dump_data": "acl.json dump_data",
        "enable_dump_debug": "acl.json dump_debug",
        "enable_exception_dump": "env NPU_COLLECT_PATH / ASCEND_DUMP_SCENE",
    },
    "atc": {
        "graph_run_mode": "ATC always compiles for online inference (graph_run_mode 0)",
        "enable_exception_dump": "env NPU_COLLECT_PATH / ASCEND_DUMP_SCENE",
    },
}
"""Where an option lives instead when the target has no key for it."""

_GE_PROFILING_WHY = (
    "without profiling_options GE ignores profiling_mode and falls back to env PROFILING_MODE, "
    "but the TF adapter would turn profiling on with its default profiling_options "
    "(CANN docs: profiling_mode); left out so the TF session also follows the environment")


@attrs.frozen(kw_only=True)
class Export:
    """An export: the text for the target and a warning per option left out (and why)."""

    text: str
    problems: tuple[Problem, ...] = ()
    values: dict[str, Any] = attrs.field(factory=dict)
    """The options written, by option name (what :func:`read_export` gives back)."""


def _target(to: str) -> str:
    key = "torch" if to in ("torch", "torch_npu") else to
    if key not in TARGETS:
        raise ConfigError([Problem(option="--to", value=to, severity="error",
                                   message=f"unknown export target {to!r}",
                                   hint="use ge, tf, atc, torch_npu or acl_json")])
    return key


def _has_key(name: str, key: str) -> bool:
    spec = OPTIONS[name]
    if key == "ge":
        return any(k.startswith("ge.") for k in spec.ge_keys)
    if key == "atc":
        return bool(spec.atc_flag)
    if key == "torch":
        return bool(spec.torch_key)
    if key == "acl_json":
        return name in ACL_DUMP_KEYS or name in ("enable_dump", "enable_dump_debug")
    return True


def _refusal(name: str, value: Any, key: str) -> str:
    """Why the target layer would refuse ``value`` for ``name`` ("" when it takes it)."""
    allowed: tuple[Any, ...] = ()
    if name == "precision_mode":
        allowed = TORCH_PRECISION if key == "torch" else PRECISION_MODES
    elif name == "precision_mode_v2":
        allowed = PRECISION_MODES_V2 if key == "atc" else tuple(
            m for m in PRECISION_MODES_V2 if m not in HIF8_MODES)
    elif name == "op_select_implmode":
        allowed = {"torch": TORCH_IMPLMODES, "ge": GE_IMPLMODES}.get(key, SESSION_IMPLMODES)
    elif name == "op_debug_level" and key in ("atc", "torch"):
        allowed = tuple(DEBUG_LEVELS)
    if not allowed or value in allowed:
        return ""
    return (f"{TARGET_NAMES[key]} takes only {', '.join(map(str, allowed))} here, not "
            f"{value!r}")


def materialised_defaults(config: SessionConfig, product: Product, to: str, *,
                          soc: str | None = None) -> dict[str, Any]:
    """Defaults written explicitly because the target layer's own default differs (ATC's
    mandatory soc_version: ``soc``, the SoC the product was named by, else the first)."""
    key = _target(to)
    out: dict[str, Any] = {}
    if key == "acl_json":  # ACL takes only the dump block: no layer defaults to restate
        return out
    target = SessionConfig(front_end=key)
    if key in ("ge", "tf") and config.graph_run_mode is None:
        mine, _ = graph_run_mode(config, product)
        if mine != graph_run_mode(target, product)[0]:
            out["graph_run_mode"] = mine
    if (key == "ge" and config.front_end in TF_ADAPTER_FRONT_ENDS
            and config.profiling_mode is True and config.profiling_options is None):
        # the TF adapter substitutes its default JSON (§3.1); GE alone would fall back to env
        from geplug.config.resolve import default_profiling_options

        run_mode = graph_run_mode(config, product)[0]
        out["profiling_options"] = attrs.evolve(default_profiling_options(product, run_mode),
                                                output=None)
    if key not in ("atc", "acl_json") and config.enable_exception_dump is None:
        mine_e = default_exception_dump(config.front_end)
        if mine_e != default_exception_dump(key):
            out["enable_exception_dump"] = mine_e
    if key == "atc" and config.soc_version is None and product.soc_versions:
        out["soc_version"] = default_soc(product, soc)
    return out


def export_values(config: SessionConfig, product: Product, to: str, *, soc: str | None = None
                  ) -> tuple[dict[str, Any], list[tuple[str, Any, str]]]:
    """(the options ``to`` carries, by name in reference order; the options left out as
    ``(name, value, why)``)."""
    key = _target(to)
    wanted = {**config.set_options(), **materialised_defaults(config, product, key, soc=soc)}
    values: dict[str, Any] = {}
    left_out: list[tuple[str, Any, str]] = []
    for name in OPTION_ORDER:
        if name not in wanted:
            continue
        value = wanted[name]
        if key == "atc" and name == "graph_run_mode" and value == 0:
            continue  # what ATC does anyway
        if name == "optypelist_for_implmode" and value == "":
            continue  # empty is the default and means off (the seed): nothing to write
        if (key == "tf" and name == "profiling_mode" and value is True
                and config.front_end not in TF_ADAPTER_FRONT_ENDS
                and "profiling_options" not in wanted):
            left_out.append((name, value, _GE_PROFILING_WHY))
            continue
        if not _has_key(name, key):
            where = _ELSEWHERE.get(key, {}).get(name, "")
            why = _NO_EQUIVALENT[key] + (f"; use {where}" if where and
                                         not where.startswith("ATC") else
                                         f" ({where})" if where else "")
            left_out.append((name, value, why))
        elif why := _refusal(name, value, key):
            left_out.append((name, value, f"{_NO_EQUIVALENT[key]}: {why}"))
        else:
            values[name] = value
    if key == "atc" and graph_run_mode(config, product)[0] == 1 and not any(
            n == "graph_run_mode" for n, _, _ in left_out):
        left_out.append(("graph_run_mode", 1, "ATC always compiles for online inference "
                         "(graph_run_mode 0); training defaults and options do not apply"))
    return values, left_out


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, ProfilingOptions):
        return json.dumps(value.items(), separators=(",", ":"))
    return str(value)


def _comment(name: str, value: Any, why: str) -> str:
    shown = _text(value).replace("\n", "\\n")
    if len(shown) > 60:
        shown = shown[:60] + "..."
    return f"# {name} = {shown!r}: {why}"


def export_report(config: SessionConfig, product: Product, to: str, *,
                  soc: str | None = None) -> Export:
    """``config`` for ``to`` (ge | tf | atc | torch_npu; ``torch`` also accepted), with a
    warning problem for every option the target cannot carry, and for ATC a warning when
    soc_version defaults to the product's first SoC. ``soc``: the SoC string the product was
    named by (written as ATC's soc_version when the config sets none)."""
    key = _target(to)
    values, left_out = export_values(config, product, key, soc=soc)
    problems = tuple(Problem(option=name, value=value if isinstance(value, (str, int, bool))
                             else _text(value), severity="warning",
                             message=f"not exported to {TARGET_NAMES[key]}: {why}",
                             hint="set it where the comment says, or leave it out")
                     for name, value, why in left_out)
    if key == "atc" and (warning := soc_default_problem(config, product, soc)) is not None:
        problems = (warning, *problems)
    comments = [_comment(name, value, why) for name, value, why in left_out]
    if key == "acl_json":
        text = json.dumps(_acl_json(values), indent=2) + "\n"
    elif key == "ge":
        text = json.dumps({next(k for k in OPTIONS[n].ge_keys if k.startswith("ge.")): _text(v)
                           for n, v in values.items()}, indent=2) + "\n"
    elif key == "tf":
        text = "\n".join([*comments, _tf(values)]) + "\n"
    elif key == "atc":
        args = [f"--{OPTIONS[n].atc_flag}={_text(v)}" for n, v in values.items()]
        command = " ".join(["atc", *ATC_PLACEHOLDERS, *(shlex.quote(a) for a in args)])
        text = "\n".join([*comments, "# set MODEL (the model file), OUTPUT (the .om name "
                          "without extension) and FRAMEWORK if not ONNX (3 TensorFlow, 0 Caffe, "
                          "1 MindSpore), e.g. MODEL=net.onnx OUTPUT=net", command]) + "\n"
    else:
        options = {OPTIONS[n].torch_key: _text(v) for n, v in values.items()}
        call = (f"torch_npu.npu.set_option({json.dumps(options, indent=4)})" if options else
                "# nothing to pass to torch_npu.npu.set_option: every option is left out")
        text = "\n".join([*comments, "import torch_npu", "", call]) + "\n"
    return Export(text=text, problems=problems, values=values)


def export(config: SessionConfig, product: Product, to: str, *, soc: str | None = None) -> str:
    """The text of :func:`export_report` (left-out options appear as ``#`` comments)."""
    return export_report(config, product, to, soc=soc).text


def _py_str(text: str) -> str:
    """A Python string literal, double-quoted as in the seed when that is possible."""
    literal = repr(text)
    if literal.startswith("'") and '"' not in text and "\\" not in literal:
        literal = '"' + literal[1:-1].replace("\\'", "'") + '"'
    return literal


def _acl_json(values: dict[str, Any]) -> dict[str, Any]:
    """The acl.json object: a ``dump`` block when dumping or overflow detection is on
    (``dump_list`` [] = every model, present only for a data dump)."""
    if not (values.get("enable_dump") or values.get("enable_dump_debug")):
        return {}
    block: dict[str, Any] = {"dump_list": []} if values.get("enable_dump") else {}
    for name, acl_key in ACL_DUMP_KEYS.items():
        if name in values:
            block[acl_key] = _text(values[name])
    if values.get("enable_dump_debug"):
        block["dump_debug"] = "on"
    return {"dump": block}


def _tf(values: dict[str, Any]) -> str:
    lines = [
        "import tensorflow as tf",
        "from npu_bridge.npu_init import *",
        "npu_init = npu_ops.initialize_system()",
        "npu_shutdown = npu_ops.shutdown_system()",
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
        "",
        "# as in the initialize_system example: GE (and HCCL) initialised in its own session",
        "with tf.Session(config=config) as sess:",
        "    sess.run(npu_init)",
        "    # call HCCL interfaces (get_rank_id, ...), run the training ...",
        "    sess.run(npu_shutdown)",
    ]
    return "\n".join(lines)


def read_export(text: str, to: str) -> SessionConfig:
    """Read back what :func:`export` wrote for ``to``; raises ConfigError on bad text."""
    from geplug.config import parse

    key = _target(to)
    if key == "ge":
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ConfigError([Problem(option="<ge>", value=text[:200], severity="error",
                                       message=f"not JSON: {exc}")]) from None
        return parse.ensure(parse.parse_ge_options(data), "GE option map")
    if key == "tf":
        return parse.ensure(parse.parse_tf_snippet(text), "TF snippet")
    if key == "atc":
        lines = [line for line in text.split("\n") if line.strip() and
                 not line.startswith("#")]
        return parse.ensure(parse.parse_atc_args("\n".join(lines)), "ATC command line")
    if key == "acl_json":
        return _read_acl_json(text)
    if "set_option(" not in text:
        return SessionConfig(front_end="torch")
    start, end = text.find("set_option(") + len("set_option("), text.rfind(")")
    try:
        data = json.loads(text[start:end])
    except ValueError:
        data = None
    return parse.ensure(parse.parse_torch_options(data), "torch_npu options")


def _read_acl_json(text: str) -> SessionConfig:
    """Read back what the acl_json export wrote (the ``dump`` block)."""
    from geplug.config import parse

    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError([Problem(option="<acl.json>", value=text[:200], severity="error",
                                   message=f"not JSON: {exc}")]) from None
    block = data.get("dump") if isinstance(data, dict) else None
    if not isinstance(block, dict):
        return SessionConfig(front_end="python")
    mapping: dict[str, Any] = {}
    for name, acl_key in ACL_DUMP_KEYS.items():
        if acl_key in block:
            mapping[name] = block[acl_key]
    if block.get("dump_debug") == "on":
        mapping["enable_dump_debug"] = True
    if "dump_list" in block:  # a data dump (overflow detection alone has no dump_list)
        mapping["enable_dump"] = True
    return parse.ensure(parse.parse_mapping(mapping, front_end="python"), "acl.json")
