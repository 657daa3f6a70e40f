"""Well-known networks rebuilt with ``onnx.helper``, for the device model's tests and the
validation benchmark (``benchmarks/bench_device_model.py``; no model hub, no torch).

Each builder spells the graph one of two ways, as the two torch exporters do:
``style="dynamo"`` stores every constant as an initializer and every reshape target as a
constant; ``style="torchscript"`` spells constants as ``Constant`` nodes, passes tensors
through ``Identity`` and computes reshape targets with ``Shape``/``Gather``/``Concat``
arithmetic. Weights are random (seeded): the networks are for shapes and costs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["bert", "lstm", "mlp", "mobilenet_v2", "mobilenet_v2_flops", "resnet18", "resnet34",
           "resnet50", "resnet101", "resnet152", "vgg16", "vgg19", "wide_resnet50_2",
           "wide_resnet101_2"]


class _Net:
    def __init__(self, style: str, seed: int = 0, weights: str = "initializer") -> None:
        if style not in ("dynamo", "torchscript"):
            raise ValueError(f"style {style!r}: expected 'dynamo' or 'torchscript'")
        if weights not in ("initializer", "input"):
            raise ValueError(f"weights {weights!r}: expected 'initializer' or 'input'")
        self.style = style
        self.weights = weights
        self.weight_inputs: list[onnx.ValueInfoProto] = []
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.rng = np.random.default_rng(seed)
        self.n = 0

    def name(self, base: str) -> str:
        self.n += 1
        return f"{base}_{self.n}"

    def weight(self, shape: Sequence[int], base: str = "w") -> str:
        name = self.name(base)
        if self.weights == "input":  # shapes only: for costing models too big to hold
            self.weight_inputs.append(helper.make_tensor_value_info(
                name, TensorProto.FLOAT, list(shape)))
            return name
        value = (self.rng.standard_normal(shape) * 0.02).astype(np.float32)
        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def const(self, value: np.ndarray, base: str = "c") -> str:
        """A constant: an initializer (dynamo) or a Constant node (TorchScript)."""
        name = self.name(base)
        if self.style == "dynamo":
            self.inits.append(numpy_helper.from_array(value, name))
        else:
            self.nodes.append(helper.make_node(
                "Constant", [], [name], name=self.name("Constant"),
                value=numpy_helper.from_array(value)))
        return name

    def op(self, op_type: str, inputs: Sequence[str], base: str = "", n_out: int = 1,
           **attrs: object) -> str:
        outs = [self.name(f"{base or op_type}_out") for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs,
                                           name=self.name(base or op_type),
                                           **attrs))  # type: ignore[arg-type]
        return outs[0]

    def ident(self, x: str) -> str:
        return self.op("Identity", [x]) if self.style == "torchscript" else x

    def reshape(self, x: str, shape: Sequence[int], like: str | None = None) -> str:
        """Reshape to ``shape`` (0 = copy that dim of ``like``, TorchScript computes it)."""
        if self.style == "torchscript" and like is not None:
            dims = []
            s = self.op("Shape", [like])
            for i, d in enumerate(shape):
                if d == 0:
                    g = self.op("Gather", [s, self.const(np.array(i, np.int64))], axis=0)
                    dims.append(self.op("Unsqueeze", [g, self.const(np.array([0], np.int64))]))
                else:
                    dims.append(self.const(np.array([d], np.int64)))
            target = self.op("Concat", dims, axis=0)
        else:
            target = self.const(np.array(shape, np.int64))
        return self.op("Reshape", [x, target])

    def model(self, name: str, inputs: Sequence[onnx.ValueInfoProto],
              outputs: Sequence[onnx.ValueInfoProto]) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, [*inputs, *self.weight_inputs],
                                  list(outputs), self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def mlp(batch: int = 4, width: int = 64, style: str = "dynamo") -> onnx.ModelProto:
    """x -> MatMul -> Add -> Relu -> MatMul -> y."""
    n = _Net(style)
    h = n.op("MatMul", ["x", n.weight((width, width))])
    h = n.op("Relu", [n.op("Add", [h, n.const(np.zeros(width, np.float32))])])
    y = n.op("MatMul", [h, n.weight((width, width))])
    n.nodes[-1].output[0] = "y"
    del y
    return n.model("mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                          [batch, width])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, width])])


def _layer_norm(n: _Net, x: str, hidden: int) -> str:
    return n.op("LayerNormalization", [x, n.weight((hidden,), "ln_g"),
                                       n.weight((hidden,), "ln_b")], axis=-1, epsilon=1e-12)


def _gelu(n: _Net, x: str) -> str:
    d = n.op("Div", [x, n.const(np.array(1.4142135, np.float32))])
    e = n.op("Erf", [d])
    a = n.op("Add", [e, n.const(np.array(1.0, np.float32))])
    m = n.op("Mul", [x, a])
    return n.op("Mul", [m, n.const(np.array(0.5, np.float32))])


def bert(layers: int = 2, hidden: int = 768, heads: int = 12, seq: int = 128, batch: int = 8,
         style: str = "dynamo", vocab: int = 1000, weights: str = "initializer",
         causal: bool = False, lm_head: bool = False) -> onnx.ModelProto:
    """A BERT encoder (embedding gather, ``layers`` transformer blocks): BERT-base width by
    default (hidden 768, 12 heads, FFN 4x). ``weights="input"``: weights are graph inputs
    of the right shapes (no values), for costing big models. ``causal`` masks attention to
    earlier positions and ``lm_head`` projects onto the vocabulary with the embedding
    (tied, as GPT-2 does): :func:`gpt2`."""
    n = _Net(style, weights=weights)
    dh = hidden // heads
    table = n.weight((vocab, hidden), "emb")
    emb = n.op("Gather", [table, "ids"], axis=0)
    mask = n.const(np.triu(np.full((seq, seq), -1e4, np.float32), 1)) if causal else ""
    x = _layer_norm(n, n.op("Add", [emb, n.weight((seq, hidden), "pos")]), hidden)
    for _ in range(layers):
        x = n.ident(x)

        def proj(src: str, width: int) -> str:
            return n.op("Add", [n.op("MatMul", [src, n.weight((hidden, width))]),
                                n.weight((width,), "b")])

        def heads_of(t: str) -> str:
            r = n.reshape(t, [0, 0, heads, dh], like=t)
            return n.op("Transpose", [r], perm=[0, 2, 1, 3])

        q, k, v = (heads_of(proj(x, hidden)) for _ in range(3))
        kt = n.op("Transpose", [k], perm=[0, 1, 3, 2])
        s = n.op("Div", [n.op("MatMul", [q, kt]), n.const(np.array(np.sqrt(dh), np.float32))])
        if mask:
            s = n.op("Add", [s, mask])
        p = n.op("Softmax", [s], axis=-1)
        ctx = n.op("Transpose", [n.op("MatMul", [p, v])], perm=[0, 2, 1, 3])
        ctx = n.reshape(ctx, [0, 0, hidden], like=x)
        x = _layer_norm(n, n.op("Add", [x, proj(ctx, hidden)]), hidden)
        f = _gelu(n, proj(x, 4 * hidden))
        f = n.op("Add", [n.op("MatMul", [f, n.weight((4 * hidden, hidden))]),
                         n.weight((hidden,), "b")])
        x = _layer_norm(n, n.op("Add", [x, f]), hidden)
    if lm_head:
        n.op("MatMul", [x, n.op("Transpose", [table], perm=[1, 0])])
    n.nodes[-1].output[0] = "y"
    return n.model("gpt2" if lm_head else "bert",
                   [helper.make_tensor_value_info("ids", TensorProto.INT64, [batch, seq])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                  [batch, seq, vocab if lm_head else hidden])])


def gpt2(layers: int = 12, hidden: int = 768, heads: int = 12, seq: int = 128, batch: int = 1,
         vocab: int = 50257, style: str = "dynamo") -> onnx.ModelProto:
    """GPT-2 small's shape by default: causal blocks of BERT-base width and the tied
    vocabulary projection (post-norm blocks here; the cost and run time are the same)."""
    return bert(layers=layers, hidden=hidden, heads=heads, seq=seq, batch=batch, style=style,
                vocab=vocab, causal=True, lm_head=True)


_MBV2 = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
         (6, 160, 3, 2), (6, 320, 1, 1))
"""MobileNetV2's inverted-residual settings: expansion t, channels c, repeats n, stride s."""


def _conv(n: _Net, x: str, cin: int, cout: int, k: int, stride: int, group: int = 1,
          act: bool = True) -> str:
    y = n.op("Conv", [x, n.weight((cout, cin // group, k, k)), n.weight((cout,), "b")],
             kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4, group=group)
    if act:
        y = n.op("Clip", [y, n.const(np.array(0.0, np.float32)),
                          n.const(np.array(6.0, np.float32))])
    return y


def mobilenet_v2(batch: int = 1, res: int = 224, style: str = "dynamo",
                 dynamic_batch: bool = False) -> onnx.ModelProto:
    """MobileNetV2 1.0 (BatchNorm folded into the convolutions, as exported for inference)."""
    n = _Net(style)
    x = _conv(n, "x", 3, 32, 3, 2)
    cin = 32
    for t, c, reps, s in _MBV2:
        for i in range(reps):
            stride = s if i == 0 else 1
            hid = cin * t
            h = x if t == 1 else _conv(n, x, cin, hid, 1, 1)
            h = _conv(n, h, hid, hid, 3, stride, group=hid)
            h = _conv(n, h, hid, c, 1, 1, act=False)
            x = n.op("Add", [x, h]) if stride == 1 and cin == c else h
            cin = c
    x = _conv(n, x, cin, 1280, 1, 1)
    x = n.op("GlobalAveragePool", [x])
    x = n.reshape(x, [0, 1280], like=x) if style == "torchscript" else n.op(
        "Flatten", [x], axis=1)
    n.op("Gemm", [x, n.weight((1000, 1280)), n.weight((1000,), "b")], transB=1)
    n.nodes[-1].output[0] = "y"
    b: int | str = "N" if dynamic_batch else batch
    return n.model("mobilenet_v2", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [b, 3, res, res])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [b, 1000])])


def mobilenet_v2_flops(batch: int = 1, res: int = 224) -> float:
    """Matrix FLOPs (2 x MACs) of :func:`mobilenet_v2`, counted from its layer table alone."""
    total = 0.0
    size = -(-res // 2)
    total += 2 * 32 * 3 * 9 * size * size
    cin = 32
    for t, c, reps, s in _MBV2:
        for i in range(reps):
            stride = s if i == 0 else 1
            hid = cin * t
            if t != 1:
                total += 2 * hid * cin * size * size
            size = -(-size // stride)
            total += 2 * hid * 9 * size * size
            total += 2 * c * hid * size * size
            cin = c
    total += 2 * 1280 * cin * size * size + 2 * 1280 * 1000
    return total * batch


def _resnet(name: str, layers: Sequence[int], bottleneck: bool, batch: int, res: int,
            style: str, weights: str, batchnorm: bool = False,
            width_per_group: int = 64) -> onnx.ModelProto:
    """The torchvision ResNet family: a 7x7 stem, four stages of ``layers`` blocks (stride on
    the first block's 3x3 from the second stage on, v1.5), global pooling and a 1000-way
    Gemm. Basic blocks (two 3x3) or bottlenecks (1x1, 3x3, 1x1 to 4x the stage width, the
    inner width scaled by ``width_per_group / 64``: the wide variants). BatchNorm folded,
    or with ``batchnorm`` a BatchNormalization after every convolution (the training graph)."""
    n = _Net(style, weights=weights)

    def conv(x: str, cin: int, cout: int, k: int, s: int, act: bool = True) -> str:
        y = n.op("Conv", [x, n.weight((cout, cin, k, k)), n.weight((cout,), "b")],
                 kernel_shape=[k, k], strides=[s, s], pads=[k // 2] * 4)
        if batchnorm:
            y = n.op("BatchNormalization", [y, *(n.weight((cout,), p) for p in "sbmv")])
        return n.op("Relu", [y]) if act else y

    x = conv("x", 3, 64, 7, 2)
    x = n.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    expansion = 4 if bottleneck else 1
    for (width, s), blocks in zip(((64, 1), (128, 2), (256, 2), (512, 2)), layers,
                                  strict=True):
        cout = expansion * width
        for i in range(blocks):
            stride = s if i == 0 else 1
            if bottleneck:
                inner = width * width_per_group // 64
                h = conv(x, cin, inner, 1, 1)
                h = conv(h, inner, inner, 3, stride)
                h = conv(h, inner, cout, 1, 1, act=False)
            else:
                h = conv(conv(x, cin, width, 3, stride), width, width, 3, 1, act=False)
            short = x if stride == 1 and cin == cout else conv(x, cin, cout, 1, stride,
                                                               act=False)
            x = n.op("Relu", [n.op("Add", [h, short])])
            cin = cout
    x = n.op("Flatten", [n.op("GlobalAveragePool", [x])], axis=1)
    n.op("Gemm", [x, n.weight((1000, cin)), n.weight((1000,), "b")], transB=1)
    n.nodes[-1].output[0] = "y"
    return n.model(name, [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [batch, 3, res, res])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 1000])])


def resnet50(batch: int = 1, res: int = 224, style: str = "dynamo",
             weights: str = "initializer", batchnorm: bool = False) -> onnx.ModelProto:
    """ResNet-50 v1.5 (bottleneck blocks, stride on the 3x3); BatchNorm folded, or with
    ``batchnorm`` a BatchNormalization after every convolution (the training graph)."""
    return _resnet("resnet50", (3, 4, 6, 3), True, batch, res, style, weights, batchnorm)


def resnet101(batch: int = 1, res: int = 224, weights: str = "initializer") -> onnx.ModelProto:
    """ResNet-101 v1.5 (bottleneck blocks 3, 4, 23, 3; BatchNorm folded)."""
    return _resnet("resnet101", (3, 4, 23, 3), True, batch, res, "dynamo", weights)


def resnet152(batch: int = 1, res: int = 224, weights: str = "initializer") -> onnx.ModelProto:
    """ResNet-152 v1.5 (bottleneck blocks 3, 8, 36, 3; BatchNorm folded)."""
    return _resnet("resnet152", (3, 8, 36, 3), True, batch, res, "dynamo", weights)


def wide_resnet50_2(batch: int = 1, res: int = 224,
                    weights: str = "initializer") -> onnx.ModelProto:
    """Wide ResNet-50-2 (ResNet-50 with the bottlenecks' inner width doubled)."""
    return _resnet("wide_resnet50_2", (3, 4, 6, 3), True, batch, res, "dynamo", weights,
                   width_per_group=128)


def wide_resnet101_2(batch: int = 1, res: int = 224,
                     weights: str = "initializer") -> onnx.ModelProto:
    """Wide ResNet-101-2 (ResNet-101 with the bottlenecks' inner width doubled)."""
    return _resnet("wide_resnet101_2", (3, 4, 23, 3), True, batch, res, "dynamo", weights,
                   width_per_group=128)


def resnet18(batch: int = 1, res: int = 224, style: str = "dynamo",
             weights: str = "initializer") -> onnx.ModelProto:
    """ResNet-18 (basic blocks 2, 2, 2, 2; BatchNorm folded into the convolutions)."""
    return _resnet("resnet18", (2, 2, 2, 2), False, batch, res, style, weights)


def resnet34(batch: int = 1, res: int = 224, weights: str = "initializer") -> onnx.ModelProto:
    """ResNet-34 (basic blocks 3, 4, 6, 3; BatchNorm folded)."""
    return _resnet("resnet34", (3, 4, 6, 3), False, batch, res, "dynamo", weights)


def _vgg(name: str, stages: Sequence[int], batch: int, res: int,
         weights: str) -> onnx.ModelProto:
    n = _Net("dynamo", weights=weights)
    x, cin = "x", 3
    for width, reps in zip((64, 128, 256, 512, 512), stages, strict=True):
        for _ in range(reps):
            y = n.op("Conv", [x, n.weight((width, cin, 3, 3)), n.weight((width,), "b")],
                     kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])
            x, cin = n.op("Relu", [y]), width
        x = n.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = n.op("Flatten", [x], axis=1)
    features = 512 * (res // 32) ** 2
    for fin, fout in ((features, 4096), (4096, 4096)):
        x = n.op("Relu", [n.op("Gemm", [x, n.weight((fout, fin)), n.weight((fout,), "b")],
                               transB=1)])
    n.op("Gemm", [x, n.weight((1000, 4096)), n.weight((1000,), "b")], transB=1)
    n.nodes[-1].output[0] = "y"
    return n.model(name, [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [batch, 3, res, res])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 1000])])


def vgg16(batch: int = 1, res: int = 224, weights: str = "initializer") -> onnx.ModelProto:
    """VGG-16 (configuration D: thirteen 3x3 convolutions in five stages, each stage ending
    in a 2x2 max pool, then three fully connected layers); no BatchNorm. Mostly large 3x3
    convolutions: the validation's compute-bound convolution network."""
    return _vgg("vgg16", (2, 2, 3, 3, 3), batch, res, weights)


def vgg19(batch: int = 1, res: int = 224, weights: str = "initializer") -> onnx.ModelProto:
    """VGG-19 (configuration E: sixteen 3x3 convolutions, four in each of the last three
    stages); no BatchNorm."""
    return _vgg("vgg19", (2, 2, 4, 4, 4), batch, res, weights)


def lstm(seq: int = 100, batch: int = 8, inputs: int = 256, hidden: int = 256,
         style: str = "dynamo") -> onnx.ModelProto:
    """One LSTM layer over ``seq`` steps, then a linear head on its last output."""
    n = _Net(style)
    w = n.weight((1, 4 * hidden, inputs))
    r = n.weight((1, 4 * hidden, hidden))
    b = n.weight((1, 8 * hidden), "b")
    n.nodes.append(helper.make_node("LSTM", ["x", w, r, b], ["seq_out", "h_n", "c_n"],
                                    name="lstm", hidden_size=hidden))
    h = n.op("Squeeze", ["h_n", n.const(np.array([0], np.int64))])
    n.op("MatMul", [h, n.weight((hidden, 10))])
    n.nodes[-1].output[0] = "y"
    return n.model("lstm", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [seq, batch, inputs])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 10])])
