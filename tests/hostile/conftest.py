"""Fixtures of the hostile-input tests: the CLI run in-process, its output captured.

An exception other than geplug's own escapes :func:`geplug.cli.main.main` and fails the test:
that is the "no traceback" assertion of every test here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from geplug.plugin import reset_manager


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Iterator[Callable[..., tuple[int, str, str]]]:
    """``cli(*argv) -> (exit status, stdout, stderr)`` with a fresh plugin manager."""
    from geplug.cli.main import main

    def run(*argv: str) -> tuple[int, str, str]:
        reset_manager()
        capsys.readouterr()
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    yield run
    reset_manager()


@pytest.fixture
def fake_plugins_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hide the environment's real plugins: the manager sees only ``fake-*`` distributions."""
    from importlib import metadata

    from geplug.plugin import manager as manager_module

    real = manager_module._entry_points

    def fake_only() -> list[metadata.EntryPoint]:
        return [ep for ep in real() if ep.dist is not None
                and ep.dist.metadata["Name"].startswith("fake-")]

    monkeypatch.setattr(manager_module, "_entry_points", fake_only)


@pytest.fixture
def card(fake_distribution: Callable[..., object], fake_plugins_only: None) -> str:
    """The name of a test product installed as a fake distribution (no product package
    needed: these tests run in every tox env)."""
    from geplug.testing.samples import card_files, minimal_toml

    fake_distribution("fake-hostile", entry_points={"hostilecard": "hostilecard.hooks"},
                      files=card_files("hostilecard", minimal_toml("hostilecard",
                                                                   ("HostileSoC1",))))
    return "hostilecard"
