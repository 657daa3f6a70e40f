"""Progress (rich) only on a terminal and without --quiet; never in pipes or CI logs."""

from __future__ import annotations

import io

import pytest

from geplug.cli import progress as prog


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_wanted_only_on_a_terminal_without_quiet() -> None:
    assert prog.wanted(False, _Tty())
    assert not prog.wanted(True, _Tty())
    assert not prog.wanted(False, io.StringIO())


def test_disabled_progress_writes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with prog.progress(3, "steps", quiet=True) as bar:
        for _ in range(3):
            bar.advance(1024)
        bar.phase("export")
    assert capsys.readouterr().err == ""


def test_enabled_progress_shows_steps_and_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = _Tty()
    monkeypatch.setattr(prog.sys, "stderr", stream)
    monkeypatch.setattr(prog, "DELAY_S", 0.0)
    bar = prog.Progress(2, "running m.onnx", enabled=True)
    bar.advance(3 * 1024 * 1024)
    bar._bar.refresh()
    text = stream.getvalue()
    bar.close()
    assert "running m.onnx" in text and "1/2" in text and "3.0 MB written" in text


def test_directory_bytes_sums_files(tmp_path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_bytes(b"x" * 10)
    (tmp_path / "g").write_bytes(b"y" * 5)
    assert prog.directory_bytes(str(tmp_path)) == 15 and prog.directory_bytes(None) == 0
