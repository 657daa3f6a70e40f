"""The conformance suite: every installed product passes; a broken declaration is caught."""

from __future__ import annotations

import attrs
import pytest

from geplug.products import build_product, read_declaration
from geplug.testing.conformance import check_product
from geplug.testing.samples import minimal_toml


def test_installed_product_conforms(product) -> None:
    assert check_product(product) == []


@pytest.mark.product_capability("runtime.initialize_system", False)
def test_product_without_initialize_system_has_no_training(product) -> None:
    assert not product.runtime.training or product.runtime.initialize_system


def test_check_product_reports_each_broken_rule(write_toml) -> None:
    product = build_product(read_declaration(write_toml(minimal_toml())))
    broken = attrs.evolve(
        product,
        precision=attrs.evolve(product.precision, default_inference="force_fp99"),
        debug=attrs.evolve(product.debug, kernel_meta={"0": (), "1": (".o",)}),
    )
    names = {f.split(":")[0] for f in check_product(broken)}
    assert {"test_precision_defaults_are_accepted_modes",
            "test_every_kernel_meta_level_is_declared"} <= names


def test_conformance_failure_message_names_the_key(write_toml) -> None:
    product = build_product(read_declaration(write_toml(minimal_toml())))
    broken = attrs.evolve(product, profiling=attrs.evolve(
        product.profiling, pmu_columns={"PipeUtilization": ("aicore_time(us)",)}))
    failures = check_product(broken)
    assert any("profiling.pmu_columns" in f and "'Memory'" in f for f in failures)


def test_conformance_option_runs_the_suite_with_plain_pytest(tmp_path) -> None:
    import re
    import subprocess
    import sys

    (tmp_path / "test_nothing.py").write_text("def test_placeholder():\n    pass\n")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--geplug-conformance=all", "-q",
         "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|skipped|failed)", result.stdout)}
    assert counts.get("passed", 0) + counts.get("skipped", 0) > 1
