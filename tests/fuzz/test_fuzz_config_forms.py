"""Fuzz: every other configuration form - GE option map JSON, ATC argv, TF parameter_map,
torch_npu options, profiling_options JSON, dump_step strings - through its reader and
``check``/``resolve`` against a product."""

from __future__ import annotations

import json
import os

from fuzz_support import NASTY_TEXT, SCALARS, count, deep, mutate, nested, run_cli, scratch
from hypothesis import given
from hypothesis import strategies as st

from geplug.config import check, resolve
from geplug.config.model import PROFILING_KEYS, SessionConfig
from geplug.config.parse import (
    parse_atc_args,
    parse_ge_options,
    parse_mapping,
    parse_profiling_options,
    parse_tf_parameter_map,
    parse_tf_snippet,
    parse_torch_options,
)
from geplug.config.problems import Problem

_GE_KEYS = ["ge.exec.precision_mode", "ge.exec.enableDump", "ge.exec.dumpPath",
            "ge.exec.dumpStep", "ge.exec.profilingMode", "ge.exec.profilingOptions",
            "ge.opDebugLevel", "ge.socVersion", "ge.graphRunMode", "ge.bogus", "precision_mode"]
_ATC_FLAGS = ["--precision_mode", "--op_debug_level", "--soc_version", "--op_select_implmode",
              "--modify_mixlist", "--model", "--framework", "--bogus", "-x", "--", "atc"]
_TORCH_KEYS = ["ACL_PRECISION_MODE", "ACL_OP_DEBUG_LEVEL", "ACL_OP_SELECT_IMPL_MODE",
               "ACL_DEBUG_DIR", "ACL_BOGUS", "precision_mode"]
_TF_KEYS = ["precision_mode", "enable_dump", "dump_step", "profiling_options",
            "op_debug_level", "use_off_line", "graph_run_mode", "bogus"]


def _answered(parsed: tuple[SessionConfig, list[Problem]], product: object) -> None:
    """The result of a reader is usable: problems render on one line; a config without
    errors is checked and resolved without an exception."""
    config, problems = parsed
    for problem in problems:
        line = problem.render()
        assert "\n" not in line and "\r" not in line and len(line) < 20_000
        json.dumps(problem.to_json())
    if not any(p.severity == "error" for p in problems):
        found = check(config, product, env={})  # type: ignore[arg-type]
        for problem in found:
            assert "\n" not in problem.render()
        if not any(p.severity == "error" for p in found):
            resolve(config, product, env={})  # type: ignore[arg-type]


@given(options=st.one_of(
    st.dictionaries(st.sampled_from(_GE_KEYS), st.one_of(SCALARS, nested()), max_size=6),
    nested(), st.just(deep(2000))))
def test_ge_option_maps(sample_product: object, options: object) -> None:
    count("GE option map")
    _answered(parse_ge_options(options), sample_product)


@given(text=st.one_of(
    st.binary(max_size=200),
    st.builds(lambda d: json.dumps(d, allow_nan=True).encode(),
              st.dictionaries(st.sampled_from(_GE_KEYS), SCALARS, max_size=6))),
    data=st.data())
def test_ge_option_map_files_through_the_cli(fuzz_card: str, text: bytes,
                                             data: st.DataObject) -> None:
    count("GE option map file")
    text = mutate(text, data.draw)
    with scratch() as tmp:
        path = os.path.join(tmp, "ge_options.json")
        with open(path, "wb") as fh:
            fh.write(text)
        run_cli(["check", "--product", fuzz_card, "--ge-options", path],
                names=("ge_options.json", "ge.", "error"))


@given(args=st.one_of(
    st.lists(st.builds(lambda f, v, sep: f"{f}{sep}{v}", st.sampled_from(_ATC_FLAGS),
                       NASTY_TEXT, st.sampled_from(["=", " ", "", "=="])), max_size=6)
    .map(" ".join),
    st.text(max_size=80),
    st.lists(NASTY_TEXT, max_size=6)))
def test_atc_argv(sample_product: object, args: object) -> None:
    count("ATC argv")
    _answered(parse_atc_args(args), sample_product)


@given(line=st.lists(st.builds(lambda f, v: f"{f}={v}", st.sampled_from(_ATC_FLAGS),
                               NASTY_TEXT), min_size=1, max_size=4).map(" ".join))
def test_atc_argv_through_the_cli(fuzz_card: str, line: str) -> None:
    count("ATC argv CLI")
    if "\x00" in line:
        return  # a NUL cannot reach a real argv
    run_cli(["check", "--product", fuzz_card, f"--atc={line}"], names=("--", "atc", "error"))


@st.composite
def _attr_value(draw: st.DrawFn) -> object:
    """A TF AttrValue-like object (``.s``, ``.b``, ``.i``) or a plain value."""
    from types import SimpleNamespace

    kind = draw(st.sampled_from(["s", "b", "i", "plain", "bytes"]))
    value = draw(SCALARS)
    if kind == "plain":
        return value
    if kind == "bytes":
        return draw(st.binary(max_size=30))
    return SimpleNamespace(**{kind: value})


@given(mapping=st.one_of(st.dictionaries(st.sampled_from(_TF_KEYS), _attr_value(), max_size=6),
                         nested()))
def test_tf_parameter_maps(sample_product: object, mapping: object) -> None:
    count("TF parameter_map")
    _answered(parse_tf_parameter_map(mapping), sample_product)


@given(text=st.one_of(st.text(max_size=200), st.builds(
    lambda k, v: f'custom_op.parameter_map["{k}"].s = tf.compat.as_bytes("{v}")',
    st.sampled_from(_TF_KEYS), NASTY_TEXT)))
def test_tf_snippets(sample_product: object, text: str) -> None:
    count("TF snippet")
    _answered(parse_tf_snippet(text), sample_product)


@given(options=st.one_of(st.dictionaries(st.sampled_from(_TORCH_KEYS), SCALARS, max_size=5),
                         nested()))
def test_torch_npu_options(sample_product: object, options: object) -> None:
    count("torch_npu options")
    _answered(parse_torch_options(options), sample_product)


@given(value=st.one_of(
    st.builds(lambda d: json.dumps(d, allow_nan=True),
              st.dictionaries(st.sampled_from([*sorted(PROFILING_KEYS), "bogus"]),
                              st.one_of(SCALARS, nested()), max_size=6)),
    st.text(max_size=300), st.binary(max_size=100), nested(),
    st.dictionaries(st.sampled_from(sorted(PROFILING_KEYS)), SCALARS, max_size=6),
    st.just('{"a": ' * 5000 + "1" + "}" * 5000)))
def test_profiling_options(sample_product: object, value: object) -> None:
    count("profiling_options")
    _options, problems = parse_profiling_options(value)
    for problem in problems:
        assert "\n" not in problem.render()
    _answered(parse_mapping({"profiling_mode": True, "profiling_options": value}),
              sample_product)


@given(step=st.one_of(NASTY_TEXT, st.lists(st.one_of(
    st.integers(-5, 10**12).map(str),
    st.builds(lambda a, b: f"{a}-{b}", st.integers(-5, 10**12), st.integers(-5, 10**12))),
    max_size=120).map("|".join)),
    mode=st.sampled_from(["input", "output", "all", "x"]))
def test_dump_step_strings(sample_product: object, step: str, mode: str) -> None:
    count("dump_step")
    _answered(parse_mapping({"enable_dump": True, "dump_path": "/tmp/geplug-fuzz-dump",
                             "dump_step": step, "dump_mode": mode}), sample_product)
