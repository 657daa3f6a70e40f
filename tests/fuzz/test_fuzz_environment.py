"""Fuzz: the environment variables geplug reads - PROFILING_MODE / PROFILING_OPTIONS,
ASCEND_WORK_PATH, NPU_COLLECT_PATH, ASCEND_DUMP_SCENE, RANK_ID / RANK_SIZE /
ASCEND_DEVICE_ID / DEVICE_ID, GEPLUG_DISABLE_PLUGINS, GEPLUG_SLOW_PLUGIN_SECONDS - through
``check`` and ``resolve`` and the CLI."""

from __future__ import annotations

import os

from fuzz_support import NASTY_TEXT, SLOW_EXAMPLES, count, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from geplug.config import SessionConfig, check, resolve

_ENV_VALUE = st.one_of(NASTY_TEXT, st.sampled_from([
    "true", "false", '{"output": "/tmp/p", "task_trace": "on"}', '{"task_trace": NaN}',
    '{"a": ' * 3000 + "1" + "}" * 3000, "--0", "4000000000", "/tmp/geplug-fuzz-env"]))
_NAMES = ["PROFILING_MODE", "PROFILING_OPTIONS", "ASCEND_WORK_PATH", "NPU_COLLECT_PATH",
          "ASCEND_DUMP_SCENE", "RANK_ID", "RANK_SIZE", "ASCEND_DEVICE_ID", "DEVICE_ID"]


def _clean(env: dict[str, str]) -> dict[str, str]:
    return {k: v.replace("\x00", "") for k, v in env.items()}  # a NUL cannot be in environ


@given(env=st.dictionaries(st.sampled_from(_NAMES), _ENV_VALUE, max_size=5),
       profiling=st.booleans())
def test_any_environment_is_checked_and_resolved(sample_product: object,
                                                 env: dict[str, str], profiling: bool) -> None:
    count("environment")
    env = _clean(env)
    config = SessionConfig.from_mapping({"profiling_mode": profiling})
    problems = check(config, sample_product, env=env)  # type: ignore[arg-type]
    for problem in problems:
        assert "\n" not in problem.render()
    if not any(p.severity == "error" for p in problems):
        resolve(config, sample_product, env=env)  # type: ignore[arg-type]


@given(env=st.dictionaries(st.sampled_from(
    [*_NAMES, "GEPLUG_DISABLE_PLUGINS", "GEPLUG_SLOW_PLUGIN_SECONDS"]), _ENV_VALUE, max_size=4),
    command=st.sampled_from(["check", "resolve", "plugins", "products"]))
@settings(max_examples=SLOW_EXAMPLES)
def test_the_cli_answers_under_any_environment(fuzz_card: str, env: dict[str, str],
                                               command: str) -> None:
    from geplug.plugin import reset_manager

    count("environment CLI")
    env = _clean(env)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    reset_manager()  # GEPLUG_DISABLE_PLUGINS is read at load
    try:
        argv = [command] + (["--product", fuzz_card, os.devnull]
                            if command in ("check", "resolve") else [])
        run_cli(argv, names=(*env, "fuzzcard", "plugin", "product", "error"))
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        reset_manager()
