"""onnx backend node tests: the simulator (must_keep_origin_dtype on atlas_a2) vs onnxruntime.

Run: ``python benchmarks/bench_conformance.py [--pattern REGEX]``. Prints passed / failed /
errors / skipped for both backends, measured in the same run (about half a minute per
backend on two cores), and exits 0. docs/conformance.md records the numbers.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
import unittest
import warnings
from typing import Any

os.environ.setdefault("ORT_LOGGING_LEVEL", "3")


def run_backend(backend: Any, pattern: str | None) -> dict[str, Any]:
    """Run the onnx node tests on ``backend``; returns the counts and failing names."""
    import onnx.backend.test

    bt = onnx.backend.test.BackendTest(backend, __name__)
    if pattern:
        bt.include(pattern)
    case = bt.test_cases["OnnxBackendNodeModelTest"]
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(case)
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(suite)
    failed = {t.id().rsplit(".", 1)[-1] for t, _ in result.failures}
    errors = {t.id().rsplit(".", 1)[-1] for t, _ in result.errors}
    skipped = len(result.skipped)
    return {
        "run": result.testsRun, "passed": result.testsRun - len(failed) - len(errors) - skipped,
        "failed": len(failed), "errors": len(errors), "skipped": skipped,
        "not_passing": failed | errors, "seconds": time.perf_counter() - started,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pattern", default=None, help="only tests matching this regex")
    parser.add_argument("--list", action="store_true", help="list tests only one side passes")
    args = parser.parse_args()
    import onnx
    import onnxruntime
    import onnxruntime.backend as ort_backend
    from geplug_simulator.backend import SimBackend

    sim = run_backend(SimBackend, args.pattern)
    ort = run_backend(ort_backend, args.pattern)
    print(f"onnx {onnx.__version__}, onnxruntime {onnxruntime.__version__}; node tests, "
          "product atlas_a2, precision_mode must_keep_origin_dtype")
    for name, r in (("geplug simulator", sim), ("onnxruntime backend", ort)):
        print(f"{name:20s} run {r['run']:5d}  passed {r['passed']:5d}  failed {r['failed']:4d}"
              f"  errors {r['errors']:4d}  skipped {r['skipped']:5d}  ({r['seconds']:.1f} s)")
    print(f"ratio passed sim/ort: {sim['passed'] / max(ort['passed'], 1):.3f}")
    only_ort = sorted(sim["not_passing"] - ort["not_passing"])
    only_sim = sorted(ort["not_passing"] - sim["not_passing"])
    print(f"pass on onnxruntime only: {len(only_ort)}; pass on the simulator only: "
          f"{len(only_sim)}")
    if args.list:
        print("onnxruntime only:", *only_ort, sep="\n  ")
        print("simulator only:", *only_sim, sep="\n  ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
