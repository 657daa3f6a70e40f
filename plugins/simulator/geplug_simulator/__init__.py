"""geplug-simulator: runs ONNX models on a simulated Ascend product (precision, timing, files)."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
