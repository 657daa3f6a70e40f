"""The documented default set of fusion patterns (product data selects among them by name).

A pattern is a chain of steps; each step is a set of Ascend op types. A step whose set
contains ``"?"`` is optional, one containing ``"*"`` may repeat. The matcher
(:func:`geplug.device.passes.fuse`) walks producer -> consumer edges in topological order.
The sets name the op types geplug's ONNX mapping and torch mapping produce
(``docs/device-model.md`` lists them).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["ACTIVATIONS", "DEFAULT_PATTERNS", "ELEMENTWISE"]

ACTIVATIONS = ("Relu", "Relu6", "ClipByValue", "Sigmoid", "Tanh", "Gelu", "FastGelu",
               "LeakyRelu", "Elu", "HardSigmoid", "HardSwish", "Swish", "Softplus", "Mish",
               "PRelu")
"""Activation op types a cube op's epilogue takes (UB fusion of conv/matmul + activation)."""

ELEMENTWISE = ("Add", "Sub", "Mul", "Div", "RealDiv", "Neg", "Abs", "Reciprocal", "Sqrt",
               "Rsqrt", "Exp", "Log", "Erf", "Pow", "Maximum", "Minimum", "Cast", "Select",
               "Equal", "Less", "Greater", "LessEqual", "GreaterEqual", "LogicalNot",
               "LogicalAnd", "LogicalOr", "Sin", "Cos", "Floor", "Ceil", "Round", "Sign",
               "IsNaN", "IsInf", *ACTIVATIONS)
"""Op types whose output element depends only on the same element of the inputs."""

DEFAULT_PATTERNS: Mapping[str, tuple[tuple[str, ...], ...]] = {
    # Conv2D + BatchNorm (+ residual Add) (+ activation): GE's Conv+BN graph fusion, then
    # FE's UB fusion of the elementwise epilogue.
    "conv_bn_act": (("Conv2D", "Conv2DTranspose", "DepthwiseConv2D"),
                    ("BatchNorm", "?"), ("Add", "?"), (*ACTIVATIONS, "?")),
    # A BatchNorm no convolution took (DenseNet's pre-activation BN on a concat) and the
    # elementwise chain after it (ReLU): one vector task. GE turns an inference BatchNorm
    # into BNInference (BatchNormBnInferFusionPass) whose kernel supports UB fusion
    # (bninference_d.py, support_fusion=True) and FE fuses the chain
    # (TbeEltwiseFusionPass); training's BNTrainingUpdate likewise
    # (TbeBnupdateEltwiseFusionPass) - CANN 8.1.RC1 fusion_config.json.
    "bn_act": (("BatchNorm",), (*ELEMENTWISE, "*")),
    # MatMul + bias + GELU spelled with erf (x/sqrt2 -> erf -> +1 -> *x -> *0.5, as torch
    # exports nn.GELU below opset 20): FE's GELU graph fusion, then the matmul epilogue.
    "matmul_bias_gelu": (("MatMulV2", "BatchMatMulV2"), ("Add", "?"), ("Div", "Mul"),
                         ("Erf",), ("Add",), ("Mul",), ("Mul",)),
    # MatMul/Gemm + bias Add (+ activation).
    "matmul_bias_act": (("MatMulV2", "BatchMatMulV2", "MatMul", "BatchMatMul"),
                        ("Add", "BiasAdd", "?"), (*ACTIVATIONS, "?")),
    # LayerNorm spelled out: mean, centre, variance, eps, rsqrt, scale, shift.
    "layer_norm": (("ReduceMean",), ("Sub",), ("Pow", "Mul"), ("ReduceMean",), ("Add",),
                   ("Sqrt",), ("Div", "RealDiv"), ("Mul", "?"), ("Add", "?")),
    # RMSNorm (LLaMA, T5): x * rsqrt(mean(x^2) + eps) * weight.
    "rms_norm": (("Pow", "Mul"), ("ReduceMean",), ("Add",), ("Sqrt", "Rsqrt"),
                 ("Reciprocal", "Div", "RealDiv", "?"), ("Mul",), ("Mul", "?")),
    # Softmax spelled out: max-subtract, exp, sum, divide.
    "softmax": (("ReduceMax", "?"), ("Sub", "?"), ("Exp",), ("ReduceSum",),
                ("Div", "RealDiv")),
    # Attention scores: scale (+ mask) + softmax, one kernel (ScaledMaskedSoftmax).
    "scaled_softmax": (("Div", "RealDiv", "Mul"), ("Add", "?"), ("SoftmaxV2",)),
    # Residual add + LayerNorm, one kernel (AddLayerNorm).
    "add_layer_norm": (("Add",), ("LayerNorm",)),
    # Softmax / LayerNorm followed by a scale or cast epilogue.
    "norm_epilogue": (("SoftmaxV2", "LogSoftmaxV2", "LayerNorm"), ("Mul", "Cast", "Add")),
    # Any chain of elementwise ops: one vector task.
    "elementwise_chain": ((*ELEMENTWISE, "*"),),
}
"""Name -> chain of steps (see the module docstring)."""
