"""onnx backend node tests: the simulator (must_keep_origin_dtype on the default product) vs
onnxruntime's own backend, measured in the same run.

Run: ``python benchmarks/bench_conformance.py [--pattern REGEX] [--list]``. Prints passed /
failed / errors / skipped for both backends (about 13 s for the simulator and 3 s for
onnxruntime on two cores) and exits 0; onnxruntime's own log lines are silenced so only the
summary shows.
docs/conformance.md records the numbers; the ``conformance`` test
(``plugins/simulator/tests/test_sim_conformance.py``) asserts the same comparison.
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("ORT_LOGGING_LEVEL", "3")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pattern", default=None, help="only tests matching this regex")
    parser.add_argument("--list", action="store_true", help="list tests only one side passes")
    args = parser.parse_args()
    import onnx
    import onnxruntime
    import onnxruntime.backend as ort_backend

    # only the summary: the node tests make both backends' sessions log hundreds of
    # expected [E:onnxruntime...] / [W:...] lines (the failures are counted, not printed)
    onnxruntime.set_default_logger_severity(4)
    from geplug_simulator.backend import SimBackend
    from geplug_simulator.conformance import run_node_tests

    sim = run_node_tests(SimBackend, args.pattern)
    ort = run_node_tests(ort_backend, args.pattern)
    print(f"onnx {onnx.__version__}, onnxruntime {onnxruntime.__version__}; node tests, "
          f"product {SimBackend.product}, precision_mode must_keep_origin_dtype")
    for name, r in (("geplug simulator", sim), ("onnxruntime backend", ort)):
        print(f"{name:20s} run {r.run:5d}  passed {r.passed:5d}  failed {r.failed:4d}"
              f"  errors {r.errors:4d}  skipped {r.skipped:5d}  ({r.seconds:.1f} s)")
    print(f"ratio passed sim/ort: {sim.passed / max(ort.passed, 1):.3f}")
    only_ort = sorted(sim.not_passing - ort.not_passing)
    only_sim = sorted(ort.not_passing - sim.not_passing)
    print(f"pass on onnxruntime only: {len(only_ort)}; pass on the simulator only: "
          f"{len(only_sim)}")
    if args.list:
        print("onnxruntime only:", *only_ort, sep="\n  ")
        print("simulator only:", *only_sim, sep="\n  ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
