"""A quick subset of onnx's backend node tests through the simulator's onnx.backend wrapper
(the full run is ``benchmarks/bench_conformance.py``, recorded in docs/conformance.md)."""

from __future__ import annotations

import io
import unittest
import warnings

import onnx.backend.test
from geplug_simulator.backend import SimBackend

QUICK = (r"^test_(relu|softmax_example|matmul_2d|gemm_default_no_bias|conv_with_strides_padding"
         r"|averagepool_2d_default|maxpool_2d_default|lrn|add_bcast|cast_FLOAT_to_FLOAT16"
         r"|layer_normalization_2d_axis0|reduce_sum_default_axes_keepdims_example"
         r"|identity_sequence|string_concat)_cpu$")


def test_quick_subset_of_onnx_node_tests_passes():
    bt = onnx.backend.test.BackendTest(SimBackend, __name__)
    bt.include(QUICK)
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(
        bt.test_cases["OnnxBackendNodeModelTest"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = unittest.TextTestRunner(stream=io.StringIO()).run(suite)
    problems = [(t.id(), tb.splitlines()[-1]) for t, tb in result.failures + result.errors]
    ran = result.testsRun - len(result.skipped)
    assert ran >= 14 and problems == []
