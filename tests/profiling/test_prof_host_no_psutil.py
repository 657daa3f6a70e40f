"""Without psutil, host sampling warns (and says so in the notice) instead of staying silent."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from geplug.profiling.host_sampler import HostSampler, HostSamplingWarning


def test_missing_psutil_is_warned_about_not_faked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psutil", None)  # makes `import psutil` raise ImportError
    sampler = HostSampler(("cpu", "mem"), (), 10, log=None)  # type: ignore[arg-type]
    with pytest.warns(HostSamplingWarning, match="psutil is not installed"):
        sampler.start()
    assert sampler.items == [] and sampler.samples == 0
    assert any("psutil" in n for n in sampler.notices)


def test_notice_says_host_sampling_was_not_requested(tmp_path) -> None:  # type: ignore[no-untyped-def]
    sampler = HostSampler((), (), 50, log=None)  # type: ignore[arg-type]
    text = Path(sampler.write_notice(str(tmp_path))).read_text(encoding="utf-8")
    assert "not requested" in text and "collected at" not in text
