"""Messages cite documentation a pip-installed user has, never the repository's reference
sheets (``shared/``: ``options.md``, ``formats.md``, ``hardware.md``) or their ``§`` sections.

Every string literal of the installed packages that is not a docstring is a candidate message
(errors, warnings, hints, reasons, help texts); docstrings and comments may cite the sheets,
they are for developers. ``geplug describe`` and the CANN docs are what a user can look up.
The same holds for the text of every installed product declaration (``description``, the
``source`` of each figure) that ``geplug describe`` shows and ``geplug new-card`` copies into a
vendor's file: it names the public source itself (vendor page, paper, document and URL).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest

from geplug.cli.main import build_parser
from geplug.products.scaffold import capabilities_text
from geplug.testing.installed import installed_products

ROOT = Path(__file__).resolve().parents[2]
SHEET = re.compile(r"\bshared/|(options|formats|hardware)\.md|§")


def _package_dirs() -> list[Path]:
    dirs = [ROOT / "geplug"]
    dirs += sorted(p for p in (ROOT / "plugins").glob("*/geplug_*") if p.is_dir())
    dirs += sorted(p for p in (ROOT / "plugins").glob("*/tox_geplug") if p.is_dir())
    dirs += sorted(p for p in (ROOT / "examples").glob("*/geplug_*") if p.is_dir())
    return dirs


def _docstrings(tree: ast.AST) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            for stmt in node.body:  # the docstring and attribute docstrings after assignments
                if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                        and isinstance(stmt.value.value, str)):
                    found.add(id(stmt.value))
    return found


def _section_fields(tree: ast.AST) -> set[int]:
    """``section="§9.1"`` keyword values: option metadata, not a message."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.keyword) and node.arg == "section"}


def _citations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree) | _section_fields(tree)
    return [f"{path.relative_to(ROOT)}:{node.lineno}: {node.value[:80]!r}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in skip and SHEET.search(node.value)]


def test_no_message_of_an_installed_package_cites_a_reference_sheet() -> None:
    found = [hit for d in _package_dirs() for path in sorted(d.rglob("*.py"))
             if not path.name.endswith("_pb2.py") for hit in _citations(path)]
    assert found == [], "\n".join(found)


def test_the_scan_sees_messages_and_skips_docstrings(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""Facts: options.md §8."""\n'
                      'def f():\n    """formats.md §4."""\n'
                      '    raise ValueError(f"bad {1} (options.md §4.2)")\n', encoding="utf-8")
    hits = [h.split(": ", 1)[1] for h in _citations_at(module, tmp_path)]
    assert hits == ["' (options.md §4.2)'"]


def _citations_at(path: Path, root: Path) -> list[str]:
    global ROOT
    saved, ROOT = ROOT, root
    try:
        return _citations(path)
    finally:
        ROOT = saved


def _subparsers() -> list[tuple[str, object]]:
    import argparse

    found: list[tuple[str, object]] = [("geplug", build_parser())]

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    found.append((f"{path} {name}", child))
                    walk(child, f"{path} {name}")

    walk(build_parser(), "geplug")
    return found


@pytest.mark.parametrize(("name", "parser"), _subparsers(), ids=[n for n, _ in _subparsers()])
def test_no_help_text_cites_a_reference_sheet(name: str, parser: object) -> None:
    text = parser.format_help()  # type: ignore[attr-defined]
    assert not SHEET.search(text), f"{name} --help cites a reference sheet"


def _texts(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every string reachable from a product record, with its dotted path."""
    if isinstance(value, str):
        yield path, value
    elif attrs.has(type(value)):
        for field in attrs.fields(type(value)):
            yield from _texts(getattr(value, field.name), f"{path}.{field.name}")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _texts(item, f"{path}.{key}")
    elif isinstance(value, (tuple, list, frozenset, set)):
        for index, item in enumerate(value):
            yield from _texts(item, f"{path}[{index}]")


_PRODUCTS = installed_products()


@pytest.mark.parametrize("product", _PRODUCTS, ids=[p.name for p in _PRODUCTS])
def test_no_source_or_description_of_a_product_declaration_cites_a_repository_file(
        product: Any) -> None:
    texts = [(path, text) for path, text in _texts(product, product.name)
             if path.rsplit(".", 1)[-1] in ("source", "description")]
    assert any(path.endswith(".compute.source") for path, _ in texts)  # the walk reaches them
    found = [f"{path} = {text!r}" for path, text in texts
             if SHEET.search(text)]
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("product", _PRODUCTS, ids=[p.name for p in _PRODUCTS])
def test_new_card_template_cites_no_repository_file(product: Any) -> None:
    text = capabilities_text("acme_b9", product)
    found = [line for line in text.splitlines() if SHEET.search(line)]
    assert found == [], "\n".join(found)


def test_the_declaration_scan_sees_a_sheet_in_a_figure_source() -> None:
    @attrs.frozen
    class Compute:
        source: str

    @attrs.frozen
    class Card:
        description: str
        compute: Compute

    card = Card("a card", Compute("shared/reference/hardware.md (Atlas A2)"))
    hits = [path for path, text in _texts(card, "card") if SHEET.search(text)]
    assert hits == ["card.compute.source"]
