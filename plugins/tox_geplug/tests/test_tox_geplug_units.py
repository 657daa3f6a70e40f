"""tox-geplug pieces: environments from `geplug_products`, source hashes, wheel metadata."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from tox_geplug.sources import distribution_name, requires, tree_hash
from tox_geplug_scratch import PRODUCTS, clean_env, make_project


def _tox(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tox", "--workdir", str(project / ".tox"),
                           *args], cwd=project, env=clean_env(),
                          capture_output=True, text=True, timeout=300)


def test_tox_l_lists_one_environment_per_declared_product(tmp_path: Path) -> None:
    done = _tox(make_project(tmp_path / "p"), "-l")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == list(PRODUCTS)


def test_product_environments_inherit_testenv(tmp_path: Path) -> None:
    done = _tox(make_project(tmp_path / "p"), "config", "-e", "atlas_a2", "-k", "deps")
    assert done.returncode == 0 and "[testenv:atlas_a2]" in done.stdout
    assert "pytest" in done.stdout and "onnx" in done.stdout


def test_declared_env_list_is_kept_and_products_added(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    ini = project / "tox.ini"
    ini.write_text(ini.read_text().replace("[tox]\n", "[tox]\nenv_list = lint\n"))
    done = _tox(project, "-l")
    assert done.stdout.split() == ["lint", *PRODUCTS]


def test_a_local_directory_without_a_project_is_a_clear_error(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    ini = project / "tox.ini"
    ini.write_text(ini.read_text().replace("./plugins/atlas_350", "./plugins/nothing"))
    done = _tox(project, "-e", "atlas_350", "--notest")
    assert done.returncode != 0
    assert "geplug_packages: './plugins/nothing' is not a project directory" in (
        done.stdout + done.stderr)


def test_tree_hash_changes_with_content_and_ignores_build_leftovers(tmp_path: Path) -> None:
    root = tmp_path / "src"
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    (root / "pkg" / "a.py").write_text("x = 1\n")
    first = tree_hash(root)
    (root / "build" / "lib").mkdir(parents=True)
    (root / "build" / "lib" / "a.py").write_text("stale\n")
    (root / "demo.egg-info").mkdir()
    (root / "pkg" / "__pycache__").mkdir()
    (root / "pkg" / "__pycache__" / "a.pyc").write_bytes(b"\0")
    assert tree_hash(root) == first
    (root / "pkg" / "a.py").write_text("x = 2\n")
    assert tree_hash(root) != first
    assert distribution_name(root) == "demo"


def test_requires_reads_requires_dist_without_extras(tmp_path: Path) -> None:
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("demo-1.0.dist-info/METADATA",
                         "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"
                         "Requires-Dist: geplug>=0.1.0\nRequires-Dist: geplug-atlas-a2\n"
                         "Requires-Dist: pytest>=7; extra == \"test\"\n")
    assert requires(wheel) == ["geplug", "geplug-atlas-a2"]
