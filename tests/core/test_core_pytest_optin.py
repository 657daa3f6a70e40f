"""geplug's pytest plugin is opt-in and prefixed: another project's test run is unaffected."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from geplug.testing.installed import installed_products

pytest_plugins = ["pytester"]

OWN_PRODUCT_FIXTURE = """
import pytest

@pytest.fixture
def product():
    return "my own product"

def test_uses_its_own_product_fixture(product):
    assert product == "my own product"

@pytest.mark.requires_products("not-a-geplug-product")
def test_its_own_marker_means_nothing_to_geplug():
    pass
"""


def _pytest(project: Path, *args: str, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, str(project)],
        cwd=project, capture_output=True, text=True, timeout=120,
        env={**os.environ, **(env or {})},
    )
    return f"exit={result.returncode}\n{result.stdout}{result.stderr}"


def _scratch(tmp_path: Path) -> Path:
    project = tmp_path / "scratch"
    (project / "tests").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[project]\nname = "scratch-not-installed"\n'
        '[tool.pytest.ini_options]\nmarkers = ["requires_products: my own marker"]\n')
    (project / "tests" / "test_scratch.py").write_text(OWN_PRODUCT_FIXTURE)
    return project


def test_a_project_with_its_own_product_fixture_is_unaffected(tmp_path: Path) -> None:
    output = _pytest(_scratch(tmp_path))
    assert "exit=0" in output and "2 passed" in output, output
    assert "geplug" not in output


def test_the_plugin_is_not_loaded_unless_turned_on(tmp_path: Path) -> None:
    output = _pytest(_scratch(tmp_path), "--geplug-products=all")
    assert "exit=4" in output and "unrecognized arguments: --geplug-products" in output, output


def test_turned_on_the_plugin_leaves_unprefixed_names_alone(tmp_path: Path) -> None:
    output = _pytest(_scratch(tmp_path), "-p", "geplug.testing")
    assert "exit=0" in output and "2 passed" in output, output


def test_the_collection_filter_applies_only_where_turned_on(pytester: pytest.Pytester) -> None:
    pkg = pytester.mkdir("pkg")
    (pkg / "pyproject.toml").write_text('[project]\nname = "geplug-never-installed-xyz"\n')
    (pkg / "test_in_pkg.py").write_text("def test_runs():\n    pass\n")
    pytester.runpytest().assert_outcomes(passed=1)
    result = pytester.runpytest("-p", "geplug.testing")
    result.assert_outcomes()
    result.stdout.fnmatch_lines(["*not collected, distribution 'geplug-never-installed-xyz'*"])


PREFIXED = """
import pytest

def test_each(geplug_product):
    print("PRODUCT", geplug_product.name)
"""


def test_prefixed_product_fixture_covers_every_installed_product(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(PREFIXED)
    names = [p.name for p in installed_products()]
    result = pytester.runpytest("-p", "geplug.testing", "-s")
    if names:
        result.assert_outcomes(passed=len(names))
    else:
        result.assert_outcomes(skipped=1)


def test_geplug_products_option_selects_products(pytester: pytest.Pytester) -> None:
    names = [p.name for p in installed_products()]
    if not names:
        pytest.skip("no product installed")
    pytester.makepyfile(PREFIXED)
    result = pytester.runpytest("-p", "geplug.testing", "-s", f"--geplug-products={names[-1]}")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"*PRODUCT {names[-1]}*"])


@pytest.mark.geplug_requires_products("atlas_infer", "atlas_200i_a2")
def test_environment_selects_one_product_of_a_two_product_package(tmp_path: Path) -> None:
    (tmp_path / "test_one.py").write_text(
        PREFIXED + "\n\n@pytest.mark.geplug_requires_products('atlas_200i_a2')\n"
        "def test_other():\n    raise AssertionError('atlas_200i_a2 is not selected')\n"
        "\n\ndef test_require():\n"
        "    from geplug.testing.plugin import require_product\n"
        "    require_product('atlas_200i_a2')\n    raise AssertionError('not selected')\n")
    output = _pytest(tmp_path, "-p", "geplug.testing", "-s", "-rs",
                     env={"GEPLUG_PRODUCTS": "atlas_infer"})
    assert "exit=0" in output and "1 passed, 2 skipped" in output, output
    assert "PRODUCT atlas_infer" in output and "PRODUCT atlas_200i_a2" not in output
    assert "not selected" in output


def test_unknown_selected_product_is_one_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(PREFIXED)
    result = pytester.runpytest("-p", "geplug.testing", "--geplug-products=nosuch_xyz")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--geplug-products=nosuch_xyz*'nosuch_xyz'*"])


def test_unprefixed_marker_aliases_work_only_when_turned_on(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest

        @pytest.mark.requires_products("no_such_product_xyz")
        def test_needs_it():
            pass
    """)
    pytester.runpytest("-p", "geplug.testing").assert_outcomes(passed=1)
    pytester.makeini("[pytest]\ngeplug_marker_aliases = true\n")
    pytester.runpytest("-p", "geplug.testing").assert_outcomes(skipped=1)
