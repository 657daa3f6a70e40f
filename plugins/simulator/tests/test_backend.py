"""A quick subset of onnx's backend node tests through the simulator's onnx.backend wrapper
(the full run is the ``conformance`` test in test_sim_conformance.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("geplug_simulator")

from geplug_simulator import DEFAULT_PRODUCT
from geplug_simulator.backend import SimBackend
from geplug_simulator.conformance import run_node_tests

pytestmark = pytest.mark.geplug_requires_products(DEFAULT_PRODUCT)

QUICK = (r"^test_(relu|softmax_example|matmul_2d|gemm_default_no_bias|conv_with_strides_padding"
         r"|averagepool_2d_default|maxpool_2d_default|lrn|add_bcast|cast_FLOAT_to_FLOAT16"
         r"|layer_normalization_2d_axis0|reduce_sum_default_axes_keepdims_example"
         r"|identity_sequence|string_concat)_cpu$")


def test_quick_subset_of_onnx_node_tests_passes_wherever_onnxruntime_does():
    """Every quick test onnxruntime's own backend passes in this environment passes through the
    simulator too (older onnxruntime releases, e.g. the last one for Python 3.10, miss some
    newer operator versions; then neither passes)."""
    import onnxruntime.backend

    result = run_node_tests(SimBackend, QUICK)
    reference = run_node_tests(onnxruntime.backend, QUICK)
    assert result.run - result.skipped >= 14
    assert sorted(result.not_passing - reference.not_passing) == []
    assert result.passed >= reference.passed >= 10
