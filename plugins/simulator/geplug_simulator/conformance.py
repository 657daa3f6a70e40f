"""Running onnx's own backend node tests (``onnx.backend.test``) on a backend and counting.

Used by the ``conformance`` test of the simulator and by ``benchmarks/bench_conformance.py``,
which compare :class:`~geplug_simulator.backend.SimBackend` with onnxruntime's backend in the
same run (docs/conformance.md records the numbers).
"""

from __future__ import annotations

import io
import time
import unittest
import warnings
from typing import Any

import attrs

__all__ = ["NodeTestResult", "run_node_tests"]


@attrs.frozen
class NodeTestResult:
    """Counts of one backend's node-test run (``skipped``: CUDA variants and the like)."""

    run: int
    passed: int
    failed: int
    errors: int
    skipped: int
    not_passing: frozenset[str]
    """Names of the tests that failed or errored."""
    seconds: float


def run_node_tests(backend: Any, pattern: str | None = None) -> NodeTestResult:
    """Run ``OnnxBackendNodeModelTest`` (only tests matching ``pattern`` when given)."""
    import onnx.backend.test

    started = time.perf_counter()
    with warnings.catch_warnings():  # onnx's test data generators warn on purpose
        warnings.simplefilter("ignore")
        bt = onnx.backend.test.BackendTest(backend, __name__)
        if pattern:
            bt.include(pattern)
        case = bt.test_cases["OnnxBackendNodeModelTest"]
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(case)
        try:
            result = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(suite)
        finally:
            close = getattr(backend, "close", None)
            if callable(close):  # the simulator backend caches systems; leave none open
                close()
    failed = {t.id().rsplit(".", 1)[-1] for t, _ in result.failures}
    errors = {t.id().rsplit(".", 1)[-1] for t, _ in result.errors}
    skipped = len(result.skipped)
    # count from the suite: Python 3.12 stopped counting skipped tests in testsRun
    total = suite.countTestCases()
    return NodeTestResult(
        run=total, passed=total - len(failed) - len(errors) - skipped,
        failed=len(failed), errors=len(errors), skipped=skipped,
        not_passing=frozenset(failed | errors), seconds=time.perf_counter() - started,
    )
