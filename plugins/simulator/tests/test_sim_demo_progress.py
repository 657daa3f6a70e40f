"""``geplug demo`` shows progress (rich) on a terminal; quiet in pipes and with ``--quiet``."""

from __future__ import annotations

import io
from typing import Any

import pytest
from sim_helpers import any_product

from geplug.cli import progress as prog
from geplug.cli.main import main


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_demo_reports_each_model_run_to_its_progress_callback() -> None:
    from geplug_simulator.demo import run_demo

    from geplug.cli.sim_cmds import open_system

    seen: list[str] = []
    assert run_demo(open_system, product=any_product().name,
                    modes=("force_fp32", "must_keep_origin_dtype"), stream=io.StringIO(),
                    on_case=seen.append) == 0
    assert seen == ["MLP under force_fp32", "CNN under force_fp32",
                    "MLP under must_keep_origin_dtype", "CNN under must_keep_origin_dtype"]


def _fake_demo(open_system: Any, *, product: str, stream: Any, on_case: Any = None,
               **_: Any) -> int:
    for label in ("MLP under force_fp32", "CNN under force_fp32"):
        on_case(label)
    print("demo done", file=stream)
    return 0


def _demo_stderr(monkeypatch: pytest.MonkeyPatch, stream: io.StringIO, *args: str) -> str:
    import geplug_simulator.demo as demo

    monkeypatch.setattr(demo, "run_demo", _fake_demo)
    monkeypatch.setattr(prog.sys, "stderr", stream)
    monkeypatch.setattr(prog, "DELAY_S", 0.0)
    assert main(["demo", "--product", any_product().name, *args]) == 0
    return stream.getvalue()


def test_demo_shows_progress_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _demo_stderr(monkeypatch, _Tty())
    assert f"demo on {any_product().name}" in text


def test_demo_quiet_shows_no_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _demo_stderr(monkeypatch, _Tty(), "--quiet") == ""


def test_demo_shows_no_progress_when_stderr_is_not_a_terminal(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert _demo_stderr(monkeypatch, io.StringIO()) == ""
