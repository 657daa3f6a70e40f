"""geplug-simulator: runs ONNX models on a simulated Ascend product (precision, timing, files)."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["DEFAULT_PRODUCT", "__version__"]

DEFAULT_PRODUCT = "atlas_a2"
"""The product ``geplug demo``, the onnx backend (:class:`~geplug_simulator.backend.SimBackend`)
and the benchmarks use when none is named: a family whose tables have float16, bfloat16 and
float32, so every precision mode the demo compares is valid on it."""
