"""Write a complete, installable card plugin package (``geplug new-card NAME --extends FAMILY``).

The package installs and passes its conformance test as written: its ``capabilities.toml``
states only the card's identity and lists every overridable key of the base, commented out
with the base's value (PMU column blocks included), so a vendor edits values instead of
searching another plugin's files for key names. Files are written into a new directory; an
existing one is refused, never overwritten.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from geplug.errors import UsageError
from geplug.products.schema import FrequencyRange, Product

__all__ = ["card_files", "write_card"]

NAME_RE = re.compile(r"[a-z][a-z0-9_]*")
SECTIONS = ("runtime", "precision", "implmode", "dump", "profiling", "debug", "compute")
_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _key(key: str) -> str:
    return key if _BARE.fullmatch(key) else json.dumps(key)


def toml_value(value: Any) -> str:
    """``value`` as a TOML value (strings, numbers, booleans, lists, inline tables)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return json.dumps(value, ensure_ascii=False)
    if value is None:
        return '""'
    if isinstance(value, Mapping):
        inner = ", ".join(f"{_key(str(k))} = {toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def _commented_record(header: str, record: Any, skip: tuple[str, ...] = ()) -> list[str]:
    """``[header]`` then every field of ``record`` as ``# key = value`` (tables below)."""
    lines = ["", f"[{header}]"]
    tables: list[tuple[str, Any]] = []
    for field in attrs.fields(type(record)):
        if field.name in skip:
            continue
        value = getattr(record, field.name)
        if isinstance(value, Mapping) and value and (
                isinstance(next(iter(value.values())), (FrequencyRange, Mapping, tuple))):
            tables.append((field.name, value))
            continue
        lines.append(f"# {field.name} = {toml_value(_plain(value))}")
    for name, table in tables:
        lines += ["", f"[{header}.{name}]"]
        for key, value in table.items():
            if isinstance(value, FrequencyRange):
                lines += ["", f"[{header}.{name}.{_key(key)}]"]
                lines += [f"# {f.name} = {toml_value(_plain(getattr(value, f.name)))}"
                          for f in attrs.fields(FrequencyRange)
                          if getattr(value, f.name) is not None]
            else:
                lines.append(f"# {_key(key)} = {toml_value(_plain(value))}")
    return lines


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def _distribution_name(product: Product) -> str:
    """``geplug-atlas-a2`` from ``"geplug-atlas-a2 0.1.0"`` ("" when unknown)."""
    return product.distribution.split(" ", 1)[0] if product.distribution else ""


def capabilities_text(name: str, base: Product) -> str:
    """The card's ``capabilities.toml``: identity stated, every other key commented."""
    soc = f"{base.soc_versions[0]}-{_camel(name)}"
    lines = [
        f"# The {name} card: a variant of {base.name} ({base.display_name}).",
        f"# `extends` inherits every section of {base.name}; uncomment and edit only what",
        "# differs. Tables merge key by key; any other value (a list, a string, a number)",
        "# replaces the base's. Each commented line shows the base's value. Every figure",
        "# must name its source (a comment citing a public document).",
        "# Check the file before installing: `geplug validate-card capabilities.toml`.",
        "schema_version = 1",
        "",
        "[product]",
        f'name = "{name}"',
        f'extends = "{base.name}"',
        "# name, display_name and soc_versions are never inherited: a card says who it is.",
        f'display_name = "{name} card (variant of {base.display_name})"',
        "# SoC strings are case-sensitive in the real stack and unique across products.",
        f"soc_versions = [{json.dumps(soc)}]",
        f'description = "The {name} card; replace with what it is and how it differs."',
    ]
    for section in SECTIONS:
        record = getattr(base, section)
        lines += _commented_record(section, record)
        if section == "compute":
            lines += [
                "# Peaks are whole-chip figures: with fewer AI Cores, restate cube_tflops and",
                "# vector_tflops too, or the change alone changes nothing in simulated time.",
                f'source = "figures inherited from {base.name}; replace with this card\'s '
                'public figures (approximate)"',
            ]
    lines += ["", "# Operators: one table per Ascend op type; override single keys."]
    for op_type, op in sorted(base.ops.items()):
        lines += _commented_record(f"ops.{op_type}", op, skip=("op_type",))
    lines += _commented_record("ops.default", base.default_op, skip=("op_type",))
    return "\n".join(lines) + "\n"


def card_files(name: str, base: Product) -> dict[str, str]:
    """Relative path -> text of every file of the card package."""
    if not NAME_RE.fullmatch(name):
        raise UsageError(f"card name {name!r}: expected lower-case letters, digits and '_' "
                         "starting with a letter (e.g. acme_b9)", argument="NAME")
    package = f"geplug_{name}"
    dist = f"geplug-{name.replace('_', '-')}"
    base_dist = _distribution_name(base)
    deps = ['"geplug>=0.1.0"'] + ([f'"{base_dist}"'] if base_dist else [])
    test_name = f"test_{name}_conformance.py"
    return {
        "pyproject.toml": f'''[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "{dist}"
version = "0.1.0"
description = "geplug product plugin: the {name} card, a variant of {base.name}."
readme = "README.md"
requires-python = ">=3.10"
# The card extends {base.name}, so the package that declares it is a dependency.
dependencies = [{", ".join(deps)}]

[project.optional-dependencies]
test = ["pytest>=7.4"]

# Entry point group "geplug": name = the plugin name, value = the hooks module.
[project.entry-points.geplug]
{name} = "{package}.hooks"

[tool.setuptools.packages.find]
include = ["{package}*"]

[tool.setuptools.package-data]
{package} = ["capabilities.toml", "py.typed"]

[tool.pytest.ini_options]
# geplug's pytest plugin is opt-in: the conformance suite needs it.
addopts = "-p geplug.testing"
''',
        f"{package}/__init__.py": f'"""The {name} card for geplug (a variant of {base.name})."""\n',
        f"{package}/py.typed": "",
        f"{package}/hooks.py": f'''"""Declares the {name} card from ``capabilities.toml`` (data)."""

from __future__ import annotations

from importlib.resources import files

from geplug import hookimpl
from geplug.products import Declaration, declare

GEPLUG_PLUGIN_API = 1
"""The geplug plugin API this module was written for; geplug refuses other versions."""


@hookimpl
def geplug_capabilities() -> list[Declaration]:
    """The card's declaration (it extends {base.name} and overrides what differs)."""
    return [declare(files("{package}") / "capabilities.toml")]
''',
        f"{package}/capabilities.toml": capabilities_text(name, base),
        f"tests/{test_name}": f'''"""Conformance of the {name} card (plain `pytest`)."""

from __future__ import annotations

from geplug.testing.conformance import *  # noqa: F403 - collects the test_* functions
from geplug.testing.plugin import require_product

GEPLUG_CONFORMANCE = "{name}"
"""The product the imported conformance tests run on."""


def test_{name}_extends_{base.name}() -> None:
    card = require_product("{name}")
    assert card.extends == "{base.name}"
''',
        "README.md": f'''# {dist}

A geplug product plugin declaring the **{name}** card, a variant of `{base.name}`
({base.display_name}). The product is data: `{package}/capabilities.toml`.

```bash
geplug validate-card {package}/capabilities.toml   # check it before installing
pip install -e .                                 # install the plugin
geplug products                                  # lists {name}
geplug describe {name} --diff                    # what the card overrides
pytest tests                                     # the conformance suite, once per product
```

Edit `capabilities.toml`: every key of `{base.name}` is listed there, commented out with
its value; uncomment what differs and cite the source of each figure.
''',
    }


def write_card(name: str, base: Product, directory: str | Path) -> list[Path]:
    """Write the card package into ``directory`` (which must not exist); the files written.

    Written into a temporary sibling first and renamed, so the package is complete or absent.
    """
    import shutil
    import tempfile

    target = Path(directory)
    if target.exists():
        raise UsageError(f"{str(target)!r} already exists; choose another --dir or remove it",
                         argument="--dir")
    files = card_files(name, base)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        for rel, text in files.items():
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        staging.chmod(0o755)
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return [target / rel for rel in files]

