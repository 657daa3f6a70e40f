"""docs/dump.md runs as written: its Python blocks in order in an empty directory, then each
``$ command`` block prints what the page shows (time directories and timestamps aside)."""

from __future__ import annotations

import os
import re
import shlex
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("geplug_simulator")

from geplug.cli.main import main

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")

DOC = Path(__file__).resolve().parents[2] / "docs" / "dump.md"
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def doc_blocks(lang: str) -> list[str]:
    """The code blocks of docs/dump.md fenced with ``lang`` ("" = no language)."""
    return [body for tag, body in _BLOCK.findall(DOC.read_text(encoding="utf-8"))
            if tag == lang]


def _normalise(text: str, cwd: str) -> str:
    text = re.sub(r"/\S*/worked/", "ROOT/", text.replace(cwd + os.sep, "ROOT/"))
    text = re.sub(r"\b\d{16}\b", "TS", text)
    return re.sub(r"\b\d{14}\b", "TIME", text)


@pytest.fixture(scope="module")
def worked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An empty directory where every Python block of the page has run, in order."""
    cwd = os.getcwd()
    here = str(tmp_path_factory.mktemp("worked"))
    os.chdir(here)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the worked example overflows on purpose
            for code in doc_blocks("python"):
                exec(compile(code, str(DOC), "exec"), {"__name__": "__doc_example__"})
        yield here
    finally:
        os.chdir(cwd)


def test_python_blocks_run_in_an_empty_directory_and_dump(worked: str) -> None:
    assert len(doc_blocks("python")) >= 3
    for path in ("dump", "fp16", "fp32", "overflow/overflow_summary.txt"):
        assert os.path.exists(os.path.join(worked, path)), path


def test_shell_blocks_print_what_the_page_shows(worked: str, monkeypatch: Any,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(worked)
    shown = [b for b in doc_blocks("") if b.startswith("$ ")]
    assert len(shown) >= 3
    for block in shown:
        command, _, expected = block.partition("\n")
        argv = shlex.split(command[2:])
        if argv[0] == "cat":
            got = Path(argv[1]).read_text(encoding="utf-8")
        else:
            assert argv[0] == "geplug"
            main(argv[1:])
            got = capsys.readouterr().out
        assert _normalise(got, worked).rstrip() == _normalise(expected, worked).rstrip(), command
