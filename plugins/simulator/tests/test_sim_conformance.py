"""External conformance (issue 4): onnx's own backend node tests under must_keep_origin_dtype
on the default product pass at least as often on the simulator as on onnxruntime's backend,
measured in the same run. Marked ``conformance`` (about 20 s): selected with
``-m conformance`` or ``GEPLUG_ONNX_CONFORMANCE=1`` (see conftest.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("geplug_simulator")

from geplug_simulator import DEFAULT_PRODUCT

pytestmark = [pytest.mark.conformance, pytest.mark.geplug_requires_products(DEFAULT_PRODUCT)]


def test_simulator_passes_at_least_as_many_onnx_node_tests_as_onnxruntime():
    import onnxruntime.backend as ort_backend
    from geplug_simulator.backend import SimBackend
    from geplug_simulator.conformance import run_node_tests

    sim = run_node_tests(SimBackend)
    ort = run_node_tests(ort_backend)
    assert sim.run == ort.run and sim.run > 1000  # the same, full suite on both sides
    assert sim.passed >= ort.passed, sorted(sim.not_passing - ort.not_passing)
