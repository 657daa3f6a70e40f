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

__all__ = ["ATEN_TO_ASCEND", "CONV_BACKWARD_KERNELS", "VIEW_OPS", "ascend_op_type",
           "aten_name", "is_view"]

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
    "_safe_softmax": "SoftmaxV2",  # the math attention's softmax (masked rows give 0)
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
"""Fixed renames (``convolution`` by its ``transposed`` flag: :func:`ascend_op_type`)."""

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


def ascend_op_type(name: str, *, transposed: bool = False) -> str:
    """The Ascend op type of aten op ``name``; ``transposed``: an ``aten.convolution`` with
    its ``transposed`` flag set, which runs as Conv2DTranspose (its weight is
    ``(C_in, C_out/groups, k...)``). ``convolution_backward`` runs as up to three kernels
    (:data:`CONV_BACKWARD_KERNELS`), split by :mod:`geplug_torch.devicegraph`."""
    if name == "convolution" and transposed:
        return "Conv2DTranspose"
    return ATEN_TO_ASCEND.get(name) or _camel(name)


CONV_BACKWARD_KERNELS: dict[tuple[int, bool], tuple[str, str]] = {
    (0, False): ("Conv2DBackpropInput", "input"),
    (0, True): ("Conv2D", "input"),
    (1, False): ("Conv2DBackpropFilter", "filter"),
    (1, True): ("Conv2DBackpropFilter", "filter"),
    (2, False): ("BiasAddGrad", "bias"),
    (2, True): ("BiasAddGrad", "bias"),
}
"""(output of ``aten.convolution_backward``, transposed forward) -> (Ascend op type, name
suffix). torch_npu computes each requested gradient with its own kernel: the input's with
Conv2DBackpropInput (for a transposed convolution a plain Conv2D of the output gradient
with the same weight), the weight's with Conv2DBackpropFilter, the bias's as a reduction
of the output gradient over batch and positions (BiasAddGrad)."""
