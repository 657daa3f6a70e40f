"""Fuzz: session configurations as TOML files through ``geplug check`` / ``resolve`` /
``export`` (generated documents, mutated valid ones, nesting past the limit)."""

from __future__ import annotations

import os

from fuzz_support import NASTY_TEXT, count, mutate, run_cli, scratch, unchanged
from hypothesis import given
from hypothesis import strategies as st

from geplug.config.options import OPTION_ORDER

_VALID = (b'precision_mode = "allow_fp32_to_fp16"\nenable_dump = true\ndump_path = "/tmp/d"\n'
          b'dump_step = "0|3-5"\nop_debug_level = 1\nprofiling_mode = true\n'
          b'[profiling_options]\noutput = "/tmp/p"\ntask_trace = "on"\n'
          b'storage_limit = "500MB"\naic_metrics = "PipeUtilization"\n')

_TOML_VALUES = st.one_of(
    NASTY_TEXT.map(lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"')
                   .encode("unicode_escape").decode("ascii").replace("\\\\", "\\") + '"'),
    st.sampled_from(["true", "false", "inf", "nan", "-inf", "+inf", "1e309", "0x10",
                     "4000000000", "-1", "1979-05-27", "07:32:00", "[]", "[[[[1]]]]", "{}",
                     "{a = {b = {c = 1}}}", '"""multi\nline"""', "'literal'", "[1, 'a']"]),
    st.integers(-(2**64), 2**64).map(str),
)


@st.composite
def toml_documents(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["generated", "mutated", "deep"]))
    if kind == "mutated":
        return mutate(_VALID, draw)
    if kind == "deep":
        depth = draw(st.integers(20, 3000))
        if draw(st.booleans()):
            return ("[" + ".".join(["a"] * depth) + "]\nx = 1\n").encode()
        return ("x = " + "[" * depth + "]" * depth + "\n").encode()
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        key = draw(st.one_of(st.sampled_from(OPTION_ORDER), st.sampled_from(
            ["profiling_options.task_trace", "profiling_options.storage_limit",
             '"a\\nb"', "front_end", "x.y.z"])))
        lines.append(f"{key} = {draw(_TOML_VALUES)}")
    if draw(st.booleans()):
        lines.append("[profiling_options]")
        for _ in range(draw(st.integers(0, 4))):
            key = draw(st.sampled_from(["output", "storage_limit", "task_time", "aic_metrics",
                                        "training_trace", "fp_point", "bogus"]))
            lines.append(f"{key} = {draw(_TOML_VALUES)}")
    return "\n".join(lines).encode("utf-8", "surrogatepass")


@given(data=toml_documents(), command=st.sampled_from(["check", "resolve", "export"]))
def test_any_toml_configuration_gets_an_answer(fuzz_card: str, data: bytes,
                                               command: str) -> None:
    count("config TOML")
    with scratch() as tmp:
        path = os.path.join(tmp, "session.toml")
        with open(path, "wb") as fh:
            fh.write(data)
        argv = [command, "--product", fuzz_card, path]
        if command == "export":
            argv[1:1] = ["--to", "ge"]
        with unchanged(tmp):
            run_cli(argv, names=("session.toml", "fuzzcard", "error"))
