"""ONNX operator -> Ascend op type (the names the product's operator table uses).

Unlisted ONNX operators keep their ONNX name and get the product's documented default op
entry (``Product.op``), so every standard operator can be simulated.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["ONNX_TO_ASCEND", "ascend_op_type"]

ONNX_TO_ASCEND = {
    "Gemm": "MatMulV2",
    "Conv": "Conv2D",
    "ConvTranspose": "Conv2DTranspose",
    "Softmax": "SoftmaxV2",
    # ONNX's fused attention (opset 23) runs as CANN's fused attention kernel (the 910B's
    # and 910_93's FlashAttentionScore; its matrix work on the cube, geplug.device.cost)
    "Attention": "FlashAttentionScore",
    "LogSoftmax": "LogSoftmaxV2",
    "MaxPool": "Pooling",
    "AveragePool": "Pooling",
    "GlobalAveragePool": "Pooling",
    "GlobalMaxPool": "Pooling",
    "LRN": "LRN",
    "RoiAlign": "ROIAlign",
    "LayerNormalization": "LayerNorm",
    "RMSNormalization": "RmsNorm",
    "BatchNormalization": "BatchNorm",
    "InstanceNormalization": "InstanceNorm",
    "ReduceSum": "ReduceSum",
    "ReduceMean": "ReduceMean",
    "ReduceMax": "ReduceMax",
    "ReduceMin": "ReduceMin",
    "ReduceProd": "ReduceProd",
    "ArgMax": "ArgMaxV2",
    "ArgMin": "ArgMin",
    "Split": "SplitV",
    "Slice": "StridedSliceV2",
    "Clip": "ClipByValue",
    "Where": "Select",
    "Expand": "BroadcastTo",
    "Flatten": "Flatten",
    "Gather": "Gather",
    "GatherElements": "GatherElements",
    "Pad": "PadV3",
    "Resize": "Resize",
    "Erf": "Erf",
    "Pow": "Pow",
    "Neg": "Neg",
    "Abs": "Abs",
    "Reciprocal": "Reciprocal",
    "Max": "Maximum",
    "Min": "Minimum",
    "Equal": "Equal",
    "Less": "Less",
    "Greater": "Greater",
    "Not": "LogicalNot",
    "And": "LogicalAnd",
    "Or": "LogicalOr",
    "TopK": "TopKV2",
    "CumSum": "Cumsum",
    "Einsum": "Einsum",
    "DepthToSpace": "DepthToSpace",
    "Tile": "Tile",
    "OneHot": "OneHot",
    "LSTM": "DynamicRNN",
    "GRU": "DynamicGRUV2",
    "RNN": "RNN",
    "Softplus": "Softplus",
    "HardSigmoid": "HardSigmoid",
    "LeakyRelu": "LeakyRelu",
    "ScatterND": "ScatterND",
}
"""Fixed renames (DESIGN.md "The simulator"); MatMul is decided by rank."""


def ascend_op_type(onnx_op: str, input_ranks: Sequence[int | None] = ()) -> str:
    """The Ascend op type of an ONNX node (``MatMul`` -> ``MatMulV2`` or ``BatchMatMulV2``)."""
    if onnx_op == "MatMul":
        ranks = [r for r in input_ranks[:2] if r is not None]
        return "BatchMatMulV2" if any(r > 2 for r in ranks) else "MatMulV2"
    return ONNX_TO_ASCEND.get(onnx_op, onnx_op)
