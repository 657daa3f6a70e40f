"""What every fuzz property asserts, and the strategies several surfaces share.

:func:`run_cli` runs ``geplug`` in-process: an exception other than geplug's own escapes it
and fails the property (the "no traceback" assertion); the exit status must be 0, 1 or 2;
a failure must name the input (``names``); :func:`unchanged` checks that the files a user
wrote are byte-for-byte the same afterwards.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

EXAMPLES = max(1, int(os.environ.get("GEPLUG_FUZZ_EXAMPLES", "3") or "3"))
"""Examples per property (``GEPLUG_FUZZ_EXAMPLES``; see conftest.py)."""
SLOW_EXAMPLES = max(1, EXAMPLES // 10)
"""For properties that reload every plugin per input (~0.5 s each)."""

COUNTS: Counter[str] = Counter()
"""Inputs run per surface (reported at the end of the session)."""


def count(surface: str) -> None:
    """Count one generated input of ``surface``."""
    COUNTS[surface] += 1


def run_cli(argv: Sequence[str], *, names: Sequence[str] = ()) -> tuple[int, str]:
    """Run ``geplug argv`` in-process; returns (exit status, stdout + stderr).

    Asserts the status is 0, 1 or 2 and, when it is not 0, that the output names one of
    ``names`` (the file or option given).
    """
    from geplug.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(list(argv))
    text = out.getvalue() + err.getvalue()
    assert code in (0, 1, 2), (code, text[-2000:])
    assert "Traceback" not in text, text[-2000:]
    if code and names:
        assert any(n in text for n in names), (names, text[-2000:])
    return code, text


@contextlib.contextmanager
def unchanged(*paths: str | os.PathLike[str]) -> Iterator[None]:
    """Assert that every file under ``paths`` has the same bytes after the block."""
    def snapshot() -> dict[str, bytes]:
        files: dict[str, bytes] = {}
        for root in paths:
            root = os.fspath(root)
            if os.path.isfile(root):
                files[root] = Path(root).read_bytes()
                continue
            for directory, _, names in os.walk(root):
                for name in names:
                    path = os.path.join(directory, name)
                    if os.path.isfile(path) and not os.path.islink(path):
                        files[path] = Path(path).read_bytes()
        return files

    before = snapshot()
    yield
    after = snapshot()
    changed = [p for p, data in before.items() if after.get(p) != data]
    assert not changed, f"files the user wrote were changed or removed: {changed}"


def profile_argv(command: str, prof: str, plot: str) -> list[str]:
    """The ``geplug profile`` argv of ``command`` (summary, json, plot) for the directory
    ``prof``; plot writes ``plot`` (summary instead where matplotlib is not installed)."""
    if command == "plot":
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            command = "summary"
    return {"summary": ["profile", "summary", prof],
            "json": ["profile", "summary", prof, "--format", "json"],
            "plot": ["profile", "plot", prof, "--out", plot]}[command]


def scratch() -> tempfile.TemporaryDirectory[str]:
    """A fresh directory per example (hypothesis reruns a test body many times)."""
    return tempfile.TemporaryDirectory(prefix="geplug-fuzz-")


# -- strategies -------------------------------------------------------------------------------

NASTY_TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", " ", "\x00", "\n", "\x1b[31m", "-1", "--8", "1e309", "inf", "nan",
                     "NaN", "-Infinity", "4000000000", "9" * 5000, "../../etc/passwd",
                     "on", "off", "l0", "l1", "true", "True", "0", "1", "0|3-5", "3-1",
                     "0-", "|", "all", "aic_metrics", "PipeUtilization", "200MB",
                     "\u202e", "é", "\udcff" if False else "\ufeff"]),
)
"""Text a user (or an attacker) might put anywhere."""

SCALARS = st.one_of(
    NASTY_TEXT, st.booleans(), st.none(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
)


def nested(leaves: st.SearchStrategy[Any] = SCALARS, *, depth: int = 40
           ) -> st.SearchStrategy[Any]:
    """Values nested up to ``depth`` levels (arrays and tables), often deeper than the
    readers' limit."""
    return st.recursive(leaves, lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(NASTY_TEXT, children, max_size=4)), max_leaves=depth)


def deep(depth: int) -> Any:
    """One value nested exactly ``depth`` arrays deep."""
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def mutate(data: bytes, draw: Any) -> bytes:
    """``data`` with one of: bit flips, truncation, extension, a slice repeated or deleted."""
    kind = draw(st.sampled_from(["flip", "truncate", "extend", "repeat", "delete", "same"]))
    raw = bytearray(data)
    if kind == "flip" and raw:
        for _ in range(draw(st.integers(1, 8))):
            i = draw(st.integers(0, len(raw) - 1))
            raw[i] ^= 1 << draw(st.integers(0, 7))
    elif kind == "truncate":
        raw = raw[:draw(st.integers(0, max(0, len(raw) - 1)))]
    elif kind == "extend":
        raw += draw(st.binary(min_size=1, max_size=64))
    elif kind in ("repeat", "delete") and raw:
        i = draw(st.integers(0, len(raw) - 1))
        j = draw(st.integers(i, min(len(raw), i + 64)))
        raw = raw[:j] + raw[i:j] + raw[j:] if kind == "repeat" else raw[:i] + raw[j:]
    return bytes(raw)
