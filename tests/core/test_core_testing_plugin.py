"""The pytest plugin: skipping tests of uninstalled plugin packages; the product fixture."""

from __future__ import annotations

from pathlib import Path

from geplug.testing.plugin import _uninstalled_distribution, installed_products

REPO = Path(__file__).resolve().parents[2]


def _project(root: Path, name: str) -> Path:
    tests = root / "pkg" / "tests"
    tests.mkdir(parents=True)
    (root / "pkg" / "pyproject.toml").write_text(f'[project]\nname = "{name}"\n')
    return tests


def test_tests_of_an_uninstalled_distribution_are_flagged(tmp_path) -> None:
    tests = _project(tmp_path, "geplug-not-installed-anywhere")
    assert _uninstalled_distribution(tests, tmp_path) == "geplug-not-installed-anywhere"


def test_tests_of_an_installed_distribution_are_kept(tmp_path) -> None:
    assert _uninstalled_distribution(_project(tmp_path, "pytest"), tmp_path) is None


def test_tests_outside_any_plugin_package_are_kept() -> None:
    assert _uninstalled_distribution(REPO / "tests" / "core", REPO) is None


def test_product_fixture_runs_once_per_installed_product(request, geplug_product) -> None:
    assert geplug_product.name in [p.name for p in installed_products()]
    assert request.node.callspec.id == geplug_product.name


def test_capabilities_doc_names_every_schema_key() -> None:
    import attrs

    from geplug.products import schema

    doc = (REPO / "docs" / "capabilities.md").read_text(encoding="utf-8")
    records = (schema.RuntimeCaps, schema.PrecisionCaps, schema.ImplModeCaps, schema.DumpCaps,
               schema.ProfilingCaps, schema.FrequencyRange, schema.DebugCaps,
               schema.ComputeModel, schema.OpSupport)
    missing = [f"{cls.__name__}.{f.name}" for cls in records for f in attrs.fields(cls)
               if f"`{f.name}`" not in doc and f.name != "op_type"]
    assert missing == []


def _doc_section(doc: str, heading: str) -> list[str]:
    """The first backticked name of each bullet under the bold ``heading`` of plugins.md."""
    import re

    block = doc.split(f"**{heading}**", 1)[1].split("\n\n**", 1)[0].split("```", 1)[0]
    return re.findall(r"^- `([^`]+)`", block, flags=re.MULTILINE)


def test_plugins_doc_lists_as_fixtures_only_real_fixtures() -> None:
    import geplug.testing.plugin as plugin

    doc = (REPO / "docs" / "plugins.md").read_text(encoding="utf-8")
    fixture_type = type(plugin.geplug_fresh_manager)
    names = _doc_section(doc, "Fixtures")
    assert "geplug_product" in names and "require_product" not in " ".join(names)
    not_fixtures = [n for n in names if n != "geplug_product"  # parametrised by the plugin
                    and not isinstance(getattr(plugin, n, None), fixture_type)]
    assert not_fixtures == []


def test_plugins_doc_gives_the_import_path_of_each_function() -> None:
    import importlib
    import re

    doc = (REPO / "docs" / "plugins.md").read_text(encoding="utf-8")
    calls = [n.split("(", 1)[0] for n in _doc_section(doc, "Functions")]
    assert "require_product" in calls
    for name in calls:
        found = re.search(rf"from (geplug\.testing\.\w+) import [\w, ]*\b{name}\b", doc)
        assert found, f"docs/plugins.md gives no import line for {name!r}"
        assert callable(getattr(importlib.import_module(found.group(1)), name))


def test_plugins_doc_lists_the_registered_markers(pytestconfig) -> None:
    doc = (REPO / "docs" / "plugins.md").read_text(encoding="utf-8")
    markers = [n.removeprefix("@pytest.mark.").split("(", 1)[0]
               for n in _doc_section(doc, "Markers")]
    registered = {line.split("(", 1)[0].split(":", 1)[0]
                  for line in pytestconfig.getini("markers")}
    assert markers and set(markers) <= registered
