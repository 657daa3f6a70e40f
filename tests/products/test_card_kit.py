"""The card vendor's kit: `geplug new-card`, `validate-card`, `describe --diff`, one truth.

The generated package installs (pip, into a scratch target) and its conformance test passes
with no edit; each of the six mistakes a vendor makes gets one clear message.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from geplug.cli.main import main
from geplug.products import build_product, read_declaration
from geplug.products.load import merge_over_base
from geplug.products.scaffold import capabilities_text
from geplug.testing.plugin import require_product

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")


def _card(tmp_path: Path, body: str, name: str = "capabilities.toml") -> Path:
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return path


CARD = """schema_version = 1
[product]
name = "acme_b9"
extends = "atlas_a2"
display_name = "Acme B9"
soc_versions = ["Ascend910B9-Acme"]
description = "Acme's B9 card"
[compute]
source = "acme datasheet (approximate)"
"""


def _validate(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["validate-card", str(path)])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_new_card_writes_a_package_that_installs_lists_and_passes_conformance(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new-card", "acme_b9", "--extends", "atlas_a2", "--dir",
                 str(tmp_path / "acme_b9")]) == 0
    root = tmp_path / "acme_b9"
    assert (root / "pyproject.toml").is_file() and (root / "README.md").is_file()
    assert (root / "tests" / "test_acme_b9_conformance.py").is_file()
    target = tmp_path / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                          "--target", str(target), str(root)], capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr
    env = {**os.environ, "PYTHONPATH": str(target), "GEPLUG_DISABLE_PLUGINS": ""}
    listed = subprocess.run([sys.executable, "-m", "geplug.cli.main", "products"],
                            capture_output=True, text=True, env=env)
    assert "acme_b9" in listed.stdout, listed.stdout + listed.stderr
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            str(root / "tests")], capture_output=True, text=True, env=env,
                           cwd=str(root))
    assert tests.returncode == 0, tests.stdout[-3000:]
    summary = tests.stdout.strip().splitlines()[-1]
    from geplug.testing import conformance

    expected = len(conformance._TESTS) + 1  # the suite once, plus the card's own test
    assert f"{expected} passed" in summary, summary


def test_generated_capabilities_list_every_base_pmu_column_block() -> None:
    base = require_product("atlas_a2")
    text = capabilities_text("acme_b9", base)
    for group, columns in base.profiling.pmu_columns.items():
        assert f"# {group} = [" in text and columns[-1] in text
    assert "# ai_cores = " in text and "[ops.MatMulV2]" in text


def test_new_card_refuses_an_existing_directory(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "x").mkdir()
    assert main(["new-card", "acme_b9", "--extends", "atlas_a2", "--dir",
                 str(tmp_path / "x")]) == 2
    assert "already exists" in capsys.readouterr().err


def test_valid_card_is_valid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = _validate(_card(tmp_path, CARD), capsys)
    assert code == 0 and "acme_b9: valid (0 error(s)" in text


def test_mistake_missing_pmu_columns_is_one_clear_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = CARD + '[profiling]\naic_metrics = ["PipeUtilization", "MemoryAccess2"]\n'
    code, text = _validate(_card(tmp_path, body), capsys)
    assert code == 1
    assert text.count("profiling.pmu_columns.MemoryAccess2") == 1
    assert "did you mean 'MemoryAccess'?" in text


def test_mistake_typo_in_a_key_suggests_the_key(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, text = _validate(_card(tmp_path, CARD + "ai_corse = 12\n"), capsys)
    assert code == 1 and text.count("compute.ai_corse") == 1
    assert "did you mean 'ai_cores'?" in text


def test_mistake_wrong_type_names_expected_and_got(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, text = _validate(_card(tmp_path, CARD + 'ai_cores = "12"\n'), capsys)
    assert code == 1 and "compute.ai_cores: expected an integer, got '12'" in text


def test_usable_memory_above_the_hbm_or_of_an_undeclared_soc_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = CARD + ('[memory]\nhbm_gib = { "Ascend910B9-Acme" = 32 }\n'
                   'usable_gib = { "Ascend910B9-Acme" = 33, "Ascend910B9-Acmee" = 30 }\n')
    code, text = _validate(_card(tmp_path, body), capsys)
    assert code == 1
    assert ("memory.usable_gib.Ascend910B9-Acme: expected more than 0 and at most the SoC's "
            "hbm_gib (32), got 33") in text
    assert "memory.usable_gib.Ascend910B9-Acmee: expected a SoC of memory.hbm_gib" in text
    assert "did you mean 'Ascend910B9-Acme'?" in text


def test_mistake_missing_base_suggests_the_installed_family(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = _validate(_card(tmp_path, CARD.replace('"atlas_a2"', '"atlas_a9"')), capsys)
    assert code == 1 and text.count("atlas_a9") == 1 and "did you mean 'atlas_a" in text
    assert "error: product.extends: expected an installed product, got 'atlas_a9'" in text


def test_mistake_case_colliding_soc_is_an_error(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, text = _validate(_card(tmp_path, CARD.replace("Ascend910B9-Acme", "ascend910b3")),
                           capsys)
    assert code == 1 and "'ascend910b3' differs only in case from 'Ascend910B3'" in text


def test_mistake_name_clash_with_an_installed_product(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = _validate(_card(tmp_path, CARD.replace('name = "acme_b9"',
                                                        'name = "atlas_a3"')), capsys)
    if "atlas_a3" not in [p.name for p in __import__("geplug").installed_products()]:
        pytest.skip("atlas_a3 is not installed here: no clash to report")
    assert code == 1 and "'atlas_a3' is already declared by" in text


def test_each_error_is_listed_once_and_all_at_once(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    body = CARD + 'ai_corse = 1\nclock_mhz = "x"\n[profiling]\naic_metrics_default = "Foo"\n'
    code, text = _validate(_card(tmp_path, body), capsys)
    errors = [line for line in text.splitlines() if line.strip().startswith("error:")]
    assert code == 1 and len(errors) == len(set(errors)) == 2 + ("Foo" in text)


def test_changing_ai_cores_alone_warns_that_peaks_are_inherited(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = _validate(_card(tmp_path, CARD + "ai_cores = 12\n"), capsys)
    assert code == 0 and "warning: compute.cube_tflops" in text
    assert "changes nothing" in text and "x0.5" in text


def test_inherited_description_warns(tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    body = CARD.replace('description = "Acme\'s B9 card"\n', "")
    code, text = _validate(_card(tmp_path, body), capsys)
    assert code == 0 and "warning: product.description: inherited from atlas_a2" in text


def test_lower_case_soc_warns_about_real_spelling(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, text = _validate(_card(tmp_path, CARD.replace("Ascend910B9-Acme", "acme-b9")), capsys)
    assert code == 0 and "'acme-b9' is not spelled like the real stack" in text


@pytest.mark.geplug_requires_products("example_card")
def test_describe_diff_shows_only_overridden_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["describe", "example_card", "--diff"]) == 0
    out = capsys.readouterr().out
    assert "compute.ai_cores\n      atlas_a2: 24\n      example_card: 12" in out
    assert "ops.Gelu.aicore_dtypes" in out and "precision." not in out


def test_describe_diff_of_a_family_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["describe", "atlas_a2", "--diff"]) == 2
    assert "extends no product" in capsys.readouterr().err


# -- one truth: a card missing a piece is refused at load, for each capability family ------

PIECES = {
    "profiling (PMU columns)": ('[profiling]\naic_metrics = ["PipeUtilization", "L2Cache", '
                                '"MemoryAccess", "Memory", "X"]\n', "profiling.pmu_columns.X"),
    "profiling (default group)": ('[profiling]\naic_metrics_default = "Nope"\n',
                                  "profiling.aic_metrics_default"),
    "precision (default)": ('[precision]\ndefault_inference = "force_fp64"\n',
                            "precision.default_inference"),
    "implmode (default)": ('[implmode]\ndefault_mode = "super_fast"\n', "implmode.default_mode"),
    "debug (kernel_meta level)": ('[debug.kernel_meta]\n"0" = [".o"]\n', "debug.kernel_meta.0"),
    "dump (debug mode)": ('[dump]\ndebug_modes = ["al"]\n', "dump.debug_modes[0]"),
    "ops (runs nowhere)": ('[ops.Gelu]\naicore_dtypes = []\naicpu_dtypes = []\n', "ops.Gelu"),
}


@pytest.mark.parametrize("family", sorted(PIECES))
def test_card_missing_a_piece_is_refused_at_load(family: str, tmp_path: Path) -> None:
    from geplug.errors import CapabilityError

    addition, key = PIECES[family]
    base = require_product("atlas_a2")
    card = read_declaration(_card(tmp_path, CARD + addition))
    base_decl = read_declaration(base.source_path)
    import attrs

    merged = attrs.evolve(card, raw=merge_over_base(card, base_decl), extends="")
    with pytest.raises(CapabilityError) as info:
        build_product(merged)
    assert key in [k for k, _ in info.value.errors], info.value.errors


HOOKS = """from importlib.resources import files
from geplug import hookimpl
from geplug.products import declare
GEPLUG_PLUGIN_API = 1
@hookimpl
def geplug_capabilities():
    return [declare(files("acme_card") / "capabilities.toml")]
"""


def test_an_incomplete_card_is_refused_by_every_command_alike(
        geplug_fake_distribution, geplug_fresh_manager, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """check, compile, run and the conformance suite all see one truth: no such product,
    because the plugin was skipped at load naming the missing PMU block."""
    from geplug.plugin import PluginManager, reset_manager

    body = CARD + '[profiling]\naic_metrics = ["PipeUtilization", "Extra"]\n'
    geplug_fake_distribution("acme-card", entry_points={"acme_card": "acme_card.hooks"},
                      files={"acme_card/__init__.py": "", "acme_card/hooks.py": HOOKS,
                             "acme_card/capabilities.toml": body})
    manager = PluginManager().load()
    reset_manager(manager)
    with pytest.warns(UserWarning, match="profiling.pmu_columns.Extra"):
        registry = manager.products()
    assert "acme_b9" not in registry
    config = _card(tmp_path, 'precision_mode = "allow_fp32_to_fp16"\n', "c.toml")
    for argv in (["check", str(config), "--product", "acme_b9"],
                 ["describe", "acme_b9"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "skipped" in err and "acme_b9" in err


def test_describe_cites_documentation_a_pip_user_has(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["describe", "atlas_a2"]) == 0
    out = capsys.readouterr().out
    assert "options.md" not in out and "formats.md" not in out
    assert "CANN docs: profiling_options" in out


def test_a_value_outside_a_fields_choices_gets_did_you_mean(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _card(tmp_path, CARD + '[ops.Relu]\nop_class = "vectr"\n')
    code, text = _validate(path, capsys)
    assert code == 1 and "ops.Relu.op_class" in text and "did you mean 'vector'" in text, text
