"""buffer_optimize (ATC ``--buffer_optimize``, GE ``ge.bufferOptimize``): every reader, the
value check, resolution to ATC's default and export round trips (CANN ATC/GE docs)."""

from __future__ import annotations

from typing import Any

import pytest

from geplug.config import SessionConfig, check, resolve
from geplug.config.export import export_report, read_export
from geplug.config.resolved import Source


def _errors(config: SessionConfig, product: Any) -> list[Any]:
    return [p for p in check(config, product, env={}) if p.severity == "error"
            and p.option == "buffer_optimize"]


@pytest.mark.parametrize("read", [
    lambda: SessionConfig.from_toml('buffer_optimize = "off_optimize"\n', text=True),
    lambda: SessionConfig.from_ge_options({"ge.bufferOptimize": "off_optimize"}),
    lambda: SessionConfig.from_atc_args(["--buffer_optimize=off_optimize"]),
    lambda: SessionConfig.from_tf_parameter_map({"buffer_optimize": b"off_optimize"}),
], ids=["toml", "ge", "atc", "tf"])
def test_every_reader_takes_buffer_optimize(read: Any) -> None:
    assert read().buffer_optimize == "off_optimize"


def test_unknown_buffer_optimize_is_an_error_with_a_did_you_mean(geplug_product: Any) -> None:
    (problem,) = _errors(SessionConfig(buffer_optimize="l2_optimise"), geplug_product)
    assert "l2_optimize, off_optimize" in problem.message
    assert "did you mean 'l2_optimize'?" in problem.hint


def test_both_buffer_optimize_values_pass_the_check(geplug_product: Any) -> None:
    for value in ("l2_optimize", "off_optimize"):
        assert _errors(SessionConfig(buffer_optimize=value), geplug_product) == []


def test_resolve_defaults_buffer_optimize_to_atcs_l2_optimize(geplug_product: Any) -> None:
    r = resolve(SessionConfig(), geplug_product, env={})
    assert r.config.buffer_optimize == "l2_optimize"
    assert r.sources["buffer_optimize"] == Source.BUILTIN_DEFAULT
    kept = resolve(SessionConfig(buffer_optimize="off_optimize"), geplug_product, env={})
    assert (kept.config.buffer_optimize, kept.sources["buffer_optimize"]) == (
        "off_optimize", Source.USER)


@pytest.mark.parametrize("to", ["ge", "tf", "atc"])
def test_export_round_trip_carries_buffer_optimize(geplug_product: Any, to: str) -> None:
    config = SessionConfig(front_end="atc" if to == "atc" else "tf",
                           buffer_optimize="off_optimize")
    report = export_report(config, geplug_product, to)
    assert read_export(report.text, to).buffer_optimize == "off_optimize"
