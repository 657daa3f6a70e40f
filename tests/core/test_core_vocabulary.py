"""One vocabulary: every value set is spelled out once, in ``geplug/vocab.py``.

A tuple, list or set literal of three or more strings anywhere else in ``geplug/`` that holds
exactly the values of a vocabulary set is a second definition (it would drift: the
``sys_lp_freq`` and ``dump_debug_mode`` drifts of issue 9 were such copies).
"""

from __future__ import annotations

import ast
from pathlib import Path

import geplug
from geplug import vocab

ROOT = Path(geplug.__file__).parent

SETS: dict[str, frozenset[str]] = {
    name: frozenset(value.keys() if hasattr(value, "keys") else value)
    for name in vocab.__all__
    if isinstance(value := getattr(vocab, name), (tuple, frozenset)) or hasattr(value, "keys")
}


def _string_literals(tree: ast.AST) -> list[tuple[int, frozenset[str]]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 3:
            values = [e.value for e in node.elts if isinstance(e, ast.Constant)]
            if len(values) == len(node.elts) and all(isinstance(v, str) for v in values):
                found.append((node.lineno, frozenset(values)))
        elif isinstance(node, ast.Dict) and len(node.keys) >= 3:
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            if len(keys) == len(node.keys) and all(isinstance(k, str) for k in keys):
                found.append((node.lineno, frozenset(keys)))
    return found


def _copies() -> list[str]:
    """Second spellings; a literal on a line saying ``# vocab: not ...`` (the same values
    with another meaning) is left out."""
    copies = []
    for path in sorted(ROOT.rglob("*.py")):
        if path == ROOT / "vocab.py":
            continue
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for line, values in _string_literals(ast.parse(text)):
            if "# vocab: not" in lines[line - 1]:
                continue
            for name, known in SETS.items():
                if values == known:
                    copies.append(f"{path.relative_to(ROOT)}:{line} spells out vocab.{name}")
    return copies


def test_no_module_spells_out_a_vocabulary_set_again() -> None:
    assert _copies() == []


def test_the_checker_and_the_declaration_domains_share_the_precision_modes() -> None:
    from geplug.config import defaults
    from geplug.products import domains

    assert defaults.PRECISION_MODES is vocab.PRECISION_MODES
    assert domains.PRECISION_MODES == frozenset(vocab.PRECISION_MODES)


def test_the_reader_and_the_checker_share_the_profiling_keys() -> None:
    from geplug.config import model
    from geplug.config.rules import profiling

    assert model.PROFILING_KEYS is vocab.PROFILING_KEYS
    assert profiling.LEVELS is vocab.PROFILING_LEVELS
    assert profiling.FREQ_KEYS is vocab.FREQUENCY_KEYS


def test_every_frequency_key_is_an_accepted_profiling_key() -> None:
    from geplug.products import domains

    assert domains.FREQUENCY_OPTIONS <= frozenset(vocab.PROFILING_KEYS)


def test_the_dump_checker_uses_the_vocabulary_dump_modes() -> None:
    from geplug.config.rules import dump

    assert dump.DUMP_MODES is vocab.DUMP_MODES and dump.DEBUG_MODES is vocab.DUMP_DEBUG_MODES
