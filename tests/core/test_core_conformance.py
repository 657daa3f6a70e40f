"""The conformance suite: every installed product passes; a broken declaration is caught."""

from __future__ import annotations

import attrs
import pytest

from geplug.products import build_product, read_declaration
from geplug.testing.conformance import check_product
from geplug.testing.samples import minimal_toml


def test_installed_product_conforms(geplug_product) -> None:
    assert check_product(geplug_product) == []


@pytest.mark.geplug_product_capability("runtime.initialize_system", False)
def test_product_without_initialize_system_has_no_training(geplug_product) -> None:
    assert not geplug_product.runtime.training or geplug_product.runtime.initialize_system


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
        [sys.executable, "-m", "pytest", "-p", "geplug.testing", "--geplug-conformance=all", "-q",
         "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|skipped|failed)", result.stdout)}
    assert counts.get("passed", 0) + counts.get("skipped", 0) > 1


def test_check_product_runs_without_pytest() -> None:
    import subprocess
    import sys

    script = (
        "import sys\n"
        "sys.modules['pytest'] = None\n"
        "from geplug.testing.conformance import check_product\n"
        "from geplug.products import build_product, read_declaration\n"
        "from geplug.testing.samples import minimal_toml\n"
        "import pathlib, tempfile\n"
        "path = pathlib.Path(tempfile.mkdtemp()) / 'capabilities.toml'\n"
        "path.write_text(minimal_toml(), encoding='utf-8')\n"
        "failures = check_product(build_product(read_declaration(path)))\n"
        "print(sorted({f.split(':')[0] for f in failures}))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    # the minimal sample lacks most required ops: the checks ran and found that
    assert "test_required_op_types_are_listed" in result.stdout


def test_conformance_option_with_unknown_product_is_one_usage_error(tmp_path) -> None:
    import subprocess
    import sys

    (tmp_path / "test_nothing.py").write_text("def test_placeholder():\n    pass\n")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "geplug.testing", "--geplug-conformance=nosuch",
         "-q",
         "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 4, output  # pytest's usage-error exit status
    assert "'nosuch'" in output and "--geplug-conformance" in output
    assert "Traceback" not in output and "error" in output.lower()


def test_module_naming_an_unknown_product_is_one_collection_error(tmp_path) -> None:
    import subprocess
    import sys

    (tmp_path / "test_card.py").write_text(
        "from geplug.testing.conformance import *  # noqa: F403\n"
        "GEPLUG_CONFORMANCE = 'nosuch'\n")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    output = result.stdout + result.stderr
    assert "GEPLUG_CONFORMANCE = 'nosuch'" in output, output
    assert "1 error" in output and "Traceback" not in output


def test_conformance_catches_a_pmu_na_pattern_matching_no_column(write_toml) -> None:
    product = build_product(read_declaration(write_toml(minimal_toml())))
    broken = attrs.evolve(product, profiling=attrs.evolve(
        product.profiling, pmu_na_metrics=("vec_ratoi",)))
    failures = check_product(broken)
    assert any("profiling.pmu_na_metrics" in f and "'vec_ratoi'" in f for f in failures)


def test_conformance_catches_a_non_positive_host_link(write_toml) -> None:
    product = build_product(read_declaration(write_toml(minimal_toml())))
    broken = attrs.evolve(product, compute=attrs.evolve(product.compute, host_link_gbps=0.0))
    assert any("compute.host_link_gbps" in f for f in check_product(broken))
