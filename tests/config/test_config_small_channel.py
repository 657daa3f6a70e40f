"""enable_small_channel (ATC ``--enable_small_channel``, GE ``ge.enableSmallChannel``, TF
``parameter_map["enable_small_channel"]``): every reader, the 0/1 check, resolution per front
end (the TF adapter forces 1 in online inference, R29; ATC and GE default to 0; a value the
user set is kept) and export round trips."""

from __future__ import annotations

from typing import Any

import pytest

from geplug.config import SessionConfig, check, resolve
from geplug.config.export import export_report, read_export
from geplug.config.resolved import Source


@pytest.mark.parametrize("read", [
    lambda: SessionConfig.from_toml("enable_small_channel = 1\n", text=True),
    lambda: SessionConfig.from_ge_options({"ge.enableSmallChannel": "1"}),
    lambda: SessionConfig.from_atc_args(["--enable_small_channel=1"]),
    lambda: SessionConfig.from_tf_parameter_map({"enable_small_channel": 1}),
], ids=["toml", "ge", "atc", "tf"])
def test_every_reader_takes_enable_small_channel(read: Any) -> None:
    assert read().enable_small_channel == 1


def test_a_value_other_than_0_or_1_is_an_error(geplug_product: Any) -> None:
    (problem,) = [p for p in check(SessionConfig(enable_small_channel=2), geplug_product,
                                   env={}) if p.option == "enable_small_channel"]
    assert problem.severity == "error" and "0 (off) or 1" in problem.message


@pytest.mark.parametrize(("front_end", "run_mode", "expected", "source"), [
    ("tf", 0, True, Source.RUN_MODE_DEFAULT),     # R29: the TF adapter forces it
    ("tf", 1, False, Source.BUILTIN_DEFAULT),
    ("ge", 0, False, Source.BUILTIN_DEFAULT),     # GE's and ATC's own default is 0
    ("atc", 0, False, Source.BUILTIN_DEFAULT),
    ("torch", 0, False, Source.BUILTIN_DEFAULT),
])
def test_resolution_follows_the_front_end(a2: Any, front_end: str, run_mode: int,
                                          expected: bool, source: str) -> None:
    r = resolve(SessionConfig(front_end=front_end, graph_run_mode=run_mode), a2, env={})
    assert r.enable_small_channel is expected
    assert r.source("enable_small_channel") == source


@pytest.mark.parametrize(("front_end", "value"), [("tf", 0), ("atc", 1), ("ge", 1)])
def test_a_value_the_user_set_is_kept(a2: Any, front_end: str, value: int) -> None:
    r = resolve(SessionConfig(front_end=front_end, graph_run_mode=0,
                              enable_small_channel=value), a2, env={})
    assert r.enable_small_channel is bool(value)
    assert r.source("enable_small_channel") == Source.USER


@pytest.mark.parametrize("to", ["ge", "tf", "atc"])
def test_export_round_trip_carries_enable_small_channel(geplug_product: Any, to: str) -> None:
    config = SessionConfig(front_end="atc" if to == "atc" else "tf", enable_small_channel=1)
    report = export_report(config, geplug_product, to)
    assert read_export(report.text, to).enable_small_channel == 1
