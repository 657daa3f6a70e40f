"""The fuzz suite's budget, its input counter and its shared fixtures.

Budget: ``GEPLUG_FUZZ_EXAMPLES`` examples per property (default 3, so the ordinary test
envs stay fast; the ``fuzz`` tox env sets a few hundred; set 10000 for a long run). The
number of generated inputs actually run is printed at the end of the session
("geplug fuzz: N inputs") and, with ``GEPLUG_FUZZ_REPORT=FILE``, written to FILE as JSON.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fuzz_support import COUNTS, EXAMPLES
from hypothesis import HealthCheck, settings

settings.register_profile(
    "geplug-fuzz", max_examples=EXAMPLES, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                           HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture],
)
settings.load_profile("geplug-fuzz")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    total = sum(COUNTS.values())
    if not total:
        return
    terminalreporter.write_line(f"geplug fuzz: {total} inputs ({EXAMPLES} examples per "
                                f"property) " + ", ".join(f"{k} {v}" for k, v in
                                                          sorted(COUNTS.items())))
    report = os.environ.get("GEPLUG_FUZZ_REPORT")
    if report:
        Path(report).write_text(json.dumps({"total": total, "per_surface": COUNTS,
                                            "examples": EXAMPLES}, indent=1),
                                encoding="utf-8")


@pytest.fixture(scope="session")
def fuzz_card(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A product installed as a fake distribution for the whole session: the CLI surfaces are
    fuzzed in every tox env, product packages or not. Yields its name."""
    from geplug.plugin import reset_manager
    from geplug.testing.fakedist import write_distribution
    from geplug.testing.samples import card_files, minimal_toml

    root = tmp_path_factory.mktemp("fuzzdist")
    write_distribution(root, "fake-fuzzcard", entry_points={"fuzzcard": "fuzzcard.hooks"},
                       files=card_files("fuzzcard", minimal_toml("fuzzcard", ("FuzzSoC1",))))
    sys.path.insert(0, str(root))
    import importlib

    importlib.invalidate_caches()
    reset_manager()
    yield "fuzzcard"
    sys.path.remove(str(root))
    for name in [m for m in sys.modules if m == "fuzzcard" or m.startswith("fuzzcard.")]:
        del sys.modules[name]
    importlib.invalidate_caches()
    reset_manager()


@pytest.fixture(scope="session")
def sample_product(tmp_path_factory: pytest.TempPathFactory) -> object:
    """The sample product of ``geplug.testing.samples`` (no product package needed), accepting
    every rank-table version so each version's reader is reachable."""
    import attrs

    from geplug.products import build_product, read_declaration
    from geplug.testing.samples import minimal_toml

    path = tmp_path_factory.mktemp("fuzzproduct") / "capabilities.toml"
    path.write_text(minimal_toml("fuzz_sample"), encoding="utf-8")
    product = build_product(read_declaration(path))
    return attrs.evolve(product, runtime=attrs.evolve(
        product.runtime, rank_table_versions=("1.0", "1.2", "2.0", "legacy")))
