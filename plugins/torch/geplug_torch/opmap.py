"""aten operator -> Ascend op type (the names the products' operator tables use).

AOTAutograd hands the backend aten graphs, forward and backward. Each aten op that does work
on the device maps to the Ascend op type GE would run for it - the forward ops and the
gradient ops (``threshold_backward`` -> ReluGrad, ``_softmax_backward_data`` -> SoftmaxGrad,
``native_layer_norm_backward`` -> LayerNormGrad, ...). View-like ops (``view``, ``t``,
``squeeze``, ``expand``, ...) change only metadata: on the device they are folded into their
consumers, so they get no task, no decision and no dump (as GE's Reshape/Squeeze on the
device). An aten op without an entry keeps a CamelCase form of its name and gets the
product's documented default operator entry (``Product.op``), like an unlisted ONNX op.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["ATEN_TO_ASCEND", "VIEW_OPS", "ascend_op_type", "aten_name", "is_view"]

ATEN_TO_ASCEND: dict[str, str] = {
    # matrix
    "mm": "MatMulV2",
    "addmm": "MatMulV2",
    "bmm": "BatchMatMulV2",
    "baddbmm": "BatchMatMulV2",
    "matmul": "BatchMatMulV2",
    "convolution": "Conv2D",
    "_scaled_dot_product_flash_attention_for_cpu": "FlashAttentionScore",
    "_scaled_dot_product_flash_attention_for_cpu_backward": "FlashAttentionScoreGrad",
    # elementwise
    "add": "Add",
    "sub": "Sub",
    "rsub": "Sub",
    "mul": "Mul",
    "div": "Div",
    "neg": "Neg",
    "pow": "Pow",
    "exp": "Exp",
    "log": "Log",
    "sqrt": "Sqrt",
    "rsqrt": "Rsqrt",
    "abs": "Abs",
    "reciprocal": "Reciprocal",
    "maximum": "Maximum",
    "minimum": "Minimum",
    "clamp": "ClipByValue",
    "where": "Select",
    "masked_fill": "MaskedFill",
    "eq": "Equal",
    "ne": "NotEqual",
    "lt": "Less",
    "gt": "Greater",
    "le": "LessEqual",
    "ge": "GreaterEqual",
    "logical_not": "LogicalNot",
    # activations and their gradients
    "relu": "Relu",
    "threshold_backward": "ReluGrad",
    "gelu": "Gelu",
    "gelu_backward": "GeluGrad",
    "sigmoid": "Sigmoid",
    "sigmoid_backward": "SigmoidGrad",
    "tanh": "Tanh",
    "tanh_backward": "TanhGrad",
    "silu": "Swish",
    "silu_backward": "SwishGrad",
    "_softmax": "SoftmaxV2",
    "_softmax_backward_data": "SoftmaxGrad",
    "_log_softmax": "LogSoftmaxV2",
    "_log_softmax_backward_data": "LogSoftmaxGrad",
    "native_dropout": "DropOutDoMask",
    "native_dropout_backward": "DropOutDoMask",
    # normalisation
    "native_layer_norm": "LayerNorm",
    "native_layer_norm_backward": "LayerNormGrad",
    "native_batch_norm": "BatchNorm",
    "_native_batch_norm_legit_functional": "BatchNorm",
    "_native_batch_norm_legit_no_training": "BatchNorm",
    "native_batch_norm_backward": "BatchNormGrad",
    # pooling
    "max_pool2d_with_indices": "MaxPoolWithArgmaxV1",
    "max_pool2d_with_indices_backward": "MaxPoolGradWithArgmaxV1",
    "avg_pool2d": "Pooling",
    "avg_pool2d_backward": "AvgPoolV2Grad",
    "_adaptive_avg_pool2d": "Pooling",
    "_adaptive_avg_pool2d_backward": "AdaptiveAvgPool2dGrad",
    # losses, embeddings
    "nll_loss_forward": "NLLLoss",
    "nll_loss_backward": "NLLLossGrad",
    "embedding": "Gather",
    "embedding_dense_backward": "EmbeddingDenseGrad",
    # reductions
    "sum": "ReduceSum",
    "mean": "ReduceMean",
    "amax": "ReduceMax",
    "amin": "ReduceMin",
    "max": "ReduceMax",
    "min": "ReduceMin",
    "argmax": "ArgMaxV2",
    # data movement
    "permute": "Transpose",
    "transpose": "Transpose",
    "clone": "TensorMove",
    "copy": "TensorMove",
    "_to_copy": "Cast",
    "cat": "ConcatD",
    "split": "SplitV",
    "split_with_sizes": "SplitV",
    "gather": "GatherElements",
    "index": "Index",
    "index_select": "Gather",
    "select_backward": "StridedSliceGrad",
    "slice_backward": "StridedSliceGrad",
    "triu": "Triu",
    "tril": "Tril",
    # creation
    "ones": "Fill",
    "zeros": "Fill",
    "full": "Fill",
    "ones_like": "OnesLike",
    "zeros_like": "ZerosLike",
    "full_like": "Fill",
    "scalar_tensor": "Fill",
    "arange": "Range",
}
"""Fixed renames; ``convolution_backward`` is decided by its output mask."""

VIEW_OPS = frozenset({
    "view", "_unsafe_view", "reshape", "alias", "detach", "squeeze", "unsqueeze", "t",
    "expand", "slice", "select", "as_strided", "unbind", "lift_fresh_copy", "view_as",
    "_reshape_alias", "unfold", "narrow", "diagonal",
})
"""aten ops that only change a tensor's metadata: no device task."""


def aten_name(target: object) -> str:
    """The aten op name of an fx call target (``aten.mm.default`` -> ``mm``), or the
    callable's name for non-aten targets (``operator.getitem`` -> ``getitem``)."""
    name = getattr(target, "_opname", None)
    if isinstance(name, str):
        return name
    return str(getattr(target, "__name__", target)).split(".")[0]


def is_view(name: str) -> bool:
    """Whether aten op ``name`` gets no device task (a view, or ``getitem`` of a tuple)."""
    return name in VIEW_OPS or name == "getitem"


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.strip("_").split("_") if part)


def ascend_op_type(name: str, output_mask: Sequence[bool] = ()) -> str:
    """The Ascend op type of aten op ``name``.

    ``convolution_backward`` becomes Conv2DBackpropInput when it computes the input's
    gradient (``output_mask[0]``), else Conv2DBackpropFilter (one task per aten node).
    """
    if name == "convolution_backward":
        return "Conv2DBackpropInput" if (not output_mask or output_mask[0]) else \
            "Conv2DBackpropFilter"
    return ATEN_TO_ASCEND.get(name) or _camel(name)
