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

__all__ = [
    "bert",
    "chain",
    "densenet121",
    "efficientnet_b0",
    "inception_v3",
    "llama",
    "lstm",
    "mlp",
    "mnasnet1_0",
    "mobilenet_v1",
    "mobilenet_v2",
    "mobilenet_v2_flops",
    "resnet18",
    "resnet34",
    "resnet50",
    "resnet101",
    "resnet152",
    "resnext50_32x4d",
    "shufflenet_v2",
    "squeezenet1_1",
    "vgg16",
    "vgg19",
    "wide_resnet50_2",
    "wide_resnet101_2",
]


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
              outputs: Sequence[onnx.ValueInfoProto], opset: int = 17) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, [*inputs, *self.weight_inputs],
                                  list(outputs), self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def chain(n: int = 1000) -> onnx.ModelProto:
    """``n`` elementwise ops in a chain (Relu, Tanh, Sigmoid, Abs repeating) on an 8x8 input:
    the large-graph shape of the compile benchmarks and the device model's speed tests."""
    nodes, prev = [], "x"
    ops = ("Relu", "Tanh", "Sigmoid", "Abs")
    for i in range(n):
        nodes.append(helper.make_node(ops[i % 4], [prev], [f"t{i}"], name=f"n{i}"))
        prev = f"t{i}"
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 8])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [8, 8])])
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


def llama(layers: int = 32, hidden: int = 4096, heads: int = 32, ffn: int = 11008,
          seq: int = 4096, batch: int = 1, vocab: int = 32000, kv_heads: int | None = None,
          weights: str = "initializer") -> onnx.ModelProto:
    """A LLaMA decoder (LLaMA2-7B's shape by default): pre-norm blocks with RMS norms
    (``RMSNormalization``), rotary embedding as the elementwise multiply-adds it is, causal
    fused attention (ONNX ``Attention``, opset 23: one FlashAttentionScore task, its score
    matrix never in memory), a SwiGLU feed-forward (``silu(x W_gate) * x W_up``, then
    ``W_down``) and the vocabulary projection. ``kv_heads`` fewer than ``heads``: grouped
    query attention."""
    n = _Net("dynamo", weights=weights)
    kv = kv_heads or heads
    dh = hidden // heads
    emb = n.op("Gather", [n.weight((vocab, hidden), "emb"), "ids"], axis=0)
    # the rotary tables, per position (broadcast over the batch): one for the queries' width
    # and, with grouped query attention, one for the keys' narrower width
    tables = {hidden: n.weight((seq, hidden), "rope_cos")}
    if dh * kv not in tables:
        tables[dh * kv] = n.weight((seq, dh * kv), "rope_cos_kv")

    def norm(x: str) -> str:
        return n.op("RMSNormalization", [x, n.weight((hidden,), "rms_g")], axis=-1,
                    epsilon=1e-5)

    def rope(t: str, width: int) -> str:
        c = tables[width]
        return n.op("Add", [n.op("Mul", [t, c]), n.op("Mul", [t, c])])

    x = emb
    for _ in range(layers):
        h = norm(x)
        q = rope(n.op("MatMul", [h, n.weight((hidden, hidden))]), hidden)
        k = rope(n.op("MatMul", [h, n.weight((hidden, dh * kv))]), dh * kv)
        v = n.op("MatMul", [h, n.weight((hidden, dh * kv))])
        a = n.op("Attention", [q, k, v], is_causal=1, q_num_heads=heads, kv_num_heads=kv)
        x = n.op("Add", [x, n.op("MatMul", [a, n.weight((hidden, hidden))])])
        h = norm(x)
        g = n.op("MatMul", [h, n.weight((hidden, ffn))])
        f = n.op("Mul", [n.op("Mul", [g, n.op("Sigmoid", [g])]),
                         n.op("MatMul", [h, n.weight((hidden, ffn))])])
        x = n.op("Add", [x, n.op("MatMul", [f, n.weight((ffn, hidden))])])
    n.op("MatMul", [norm(x), n.weight((hidden, vocab), "lm_head")])
    n.nodes[-1].output[0] = "y"
    return n.model("llama", [helper.make_tensor_value_info("ids", TensorProto.INT64,
                                                            [batch, seq])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                  [batch, seq, vocab])], opset=23)


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
            width_per_group: int = 64, groups: int = 1) -> onnx.ModelProto:
    """The torchvision ResNet family: a 7x7 stem, four stages of ``layers`` blocks (stride on
    the first block's 3x3 from the second stage on, v1.5), global pooling and a 1000-way
    Gemm. Basic blocks (two 3x3) or bottlenecks (1x1, 3x3, 1x1 to 4x the stage width, the
    inner width scaled by ``width_per_group / 64`` and ``groups``: the wide variants, and
    ResNeXt's grouped 3x3). BatchNorm folded, or with ``batchnorm`` a BatchNormalization
    after every convolution (the training graph)."""
    n = _Net(style, weights=weights)

    def conv(x: str, cin: int, cout: int, k: int, s: int, act: bool = True,
             group: int = 1) -> str:
        y = n.op("Conv", [x, n.weight((cout, cin // group, k, k)), n.weight((cout,), "b")],
                 kernel_shape=[k, k], strides=[s, s], pads=[k // 2] * 4)
        if group > 1:  # only then: the ungrouped networks stay the graphs they were
            n.nodes[-1].attribute.append(helper.make_attribute("group", group))
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
                inner = width * width_per_group // 64 * groups
                h = conv(x, cin, inner, 1, 1)
                h = conv(h, inner, inner, 3, stride, group=groups)
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


def resnext50_32x4d(batch: int = 1, res: int = 224,
                    weights: str = "initializer") -> onnx.ModelProto:
    """ResNeXt-50 32x4d (ResNet-50's bottlenecks with the 3x3 a grouped convolution of 32
    groups, the inner width 2x ResNet-50's: 4 channels per group at the first stage)."""
    return _resnet("resnext50_32x4d", (3, 4, 6, 3), True, batch, res, "dynamo", weights,
                   width_per_group=4, groups=32)


def _cv(n: _Net, x: str, cin: int, cout: int, k: int | tuple[int, int], stride: int = 1,
        group: int = 1, act: str = "relu", pads: Sequence[int] | None = None) -> str:
    """A convolution (BatchNorm folded into its weight and bias, as an inference export
    folds it) and its activation: ``"relu"``, ``"swish"`` (x * sigmoid(x), two nodes as
    exported), ``"sigmoid"`` or ``""``. ``k``: square or (kh, kw); padded to keep the size
    at stride 1 unless ``pads`` is given."""
    kh, kw = (k, k) if isinstance(k, int) else k
    y = n.op("Conv", [x, n.weight((cout, cin // group, kh, kw)), n.weight((cout,), "b")],
             kernel_shape=[kh, kw], strides=[stride, stride], group=group,
             pads=list(pads) if pads is not None else [kh // 2, kw // 2, kh // 2, kw // 2])
    if act == "relu":
        return n.op("Relu", [y])
    if act == "swish":
        return n.op("Mul", [y, n.op("Sigmoid", [y])])
    if act == "sigmoid":
        return n.op("Sigmoid", [y])
    return y


def _classifier(n: _Net, x: str, cin: int, name: str, batch: int, res: int,
                pooled: bool = False) -> onnx.ModelProto:
    """Global average pooling (unless ``pooled``), flatten, a 1000-way Gemm; the model."""
    if not pooled:
        x = n.op("GlobalAveragePool", [x])
    x = n.op("Flatten", [x], axis=1)
    n.op("Gemm", [x, n.weight((1000, cin)), n.weight((1000,), "b")], transB=1)
    n.nodes[-1].output[0] = "y"
    return n.model(name, [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [batch, 3, res, res])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 1000])])


def _mean_classifier(n: _Net, x: str, cin: int, name: str, batch: int,
                     res: int) -> onnx.ModelProto:
    """The spatial mean as torchvision spells it (``x.mean([2, 3])``: ReduceMean, no
    pooling op), a 1000-way Gemm; the model."""
    x = n.op("ReduceMean", [x], axes=[2, 3], keepdims=0)
    n.op("Gemm", [x, n.weight((1000, cin)), n.weight((1000,), "b")], transB=1)
    n.nodes[-1].output[0] = "y"
    return n.model(name, [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [batch, 3, res, res])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 1000])])


def densenet121(batch: int = 1, res: int = 224,
                weights: str = "initializer") -> onnx.ModelProto:
    """DenseNet-121 (torchvision: growth 32, four dense blocks of 6, 12, 24, 16 layers, each
    layer BatchNorm-ReLU-1x1 (128)-ReLU-3x3 (32) on the concatenation of every earlier
    output, as the export spells it: one Concat per layer; transitions halve the channels
    with a 1x1 and a 2x2 average pool). The BatchNorm before each layer's ReLU cannot be
    folded into a convolution and stays a BatchNormalization; the one after is folded."""
    n = _Net("dynamo", weights=weights)

    def bn_relu(x: str, c: int) -> str:  # running statistics 0 and 1: a finite output
        stats = (n.const(np.zeros(c, np.float32), "m"), n.const(np.ones(c, np.float32), "v"))
        y = n.op("BatchNormalization", [x, n.weight((c,), "s"), n.weight((c,), "b"), *stats])
        return n.op("Relu", [y])

    x = _cv(n, "x", 3, 64, 7, 2)
    x = n.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c = 64
    for i, layers in enumerate((6, 12, 24, 16)):
        feats = [x]
        for _ in range(layers):
            cat = feats[0] if len(feats) == 1 else n.op("Concat", feats, axis=1)
            h = _cv(n, bn_relu(cat, c), c, 128, 1)
            feats.append(_cv(n, h, 128, 32, 3, act=""))
            c += 32
        x = n.op("Concat", feats, axis=1)
        if i < 3:
            x = _cv(n, bn_relu(x, c), c, c // 2, 1, act="")
            x = n.op("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2])
            c //= 2
    return _classifier(n, bn_relu(x, c), c, "densenet121", batch, res)


_MBV1 = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1),
         (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1))
"""MobileNetV1 1.0's depthwise-separable layers: output channels, stride of the 3x3."""


def mobilenet_v1(batch: int = 1, res: int = 224,
                 weights: str = "initializer") -> onnx.ModelProto:
    """MobileNetV1 1.0 (Howard et al. 2017, Table 1: a 3x3 stem to 32, thirteen depthwise
    3x3 + pointwise 1x1 pairs, each with BatchNorm folded and ReLU; global pooling and a
    1000-way classifier; 569 M multiply-adds at 224x224)."""
    n = _Net("dynamo", weights=weights)
    x = _cv(n, "x", 3, 32, 3, 2)
    cin = 32
    for cout, stride in _MBV1:
        x = _cv(n, _cv(n, x, cin, cin, 3, stride, group=cin), cin, cout, 1)
        cin = cout
    return _classifier(n, x, cin, "mobilenet_v1", batch, res)


_MNASNET = ((24, 3, 2, 3, 3), (40, 5, 2, 3, 3), (80, 5, 2, 6, 3), (96, 3, 1, 6, 2),
            (192, 5, 2, 6, 4), (320, 3, 1, 6, 1))
"""MnasNet 1.0's stacks (torchvision): output channels, kernel, stride, expansion, repeats."""


def mnasnet1_0(batch: int = 1, res: int = 224,
               weights: str = "initializer") -> onnx.ModelProto:
    """MnasNet 1.0 (torchvision ``mnasnet1_0``: a 3x3 stem to 32, a depthwise 3x3 and a 1x1
    to 16, six stacks of inverted residuals (1x1 expansion, depthwise 3x3 or 5x5, 1x1
    projection; the residual add where shape allows), a 1x1 to 1280, the spatial mean, a
    1000-way classifier; 0.31 G multiply-adds at 224x224). BatchNorm folded, ReLU."""
    n = _Net("dynamo", weights=weights)
    x = _cv(n, "x", 3, 32, 3, 2)
    x = _cv(n, _cv(n, x, 32, 32, 3, 1, group=32), 32, 16, 1, act="")
    cin = 16
    for cout, k, stride, expand, repeats in _MNASNET:
        for i in range(repeats):
            s = stride if i == 0 else 1
            mid = cin * expand
            h = _cv(n, _cv(n, x, cin, mid, 1), mid, mid, k, s, group=mid)
            h = _cv(n, h, mid, cout, 1, act="")
            x = n.op("Add", [x, h]) if s == 1 and cin == cout else h
            cin = cout
    return _mean_classifier(n, _cv(n, x, cin, 1280, 1), 1280, "mnasnet1_0", batch, res)


def squeezenet1_1(batch: int = 1, res: int = 224,
                  weights: str = "initializer") -> onnx.ModelProto:
    """SqueezeNet 1.1 (torchvision: an unpadded 3x3 stem, eight Fire modules - a 1x1
    squeeze, then a 1x1 and a 3x3 expand concatenated - three ceil-mode max pools, and a
    1x1 convolution to the 1000 classes before global pooling; no BatchNorm)."""
    n = _Net("dynamo", weights=weights)

    def pool(x: str) -> str:
        return n.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)

    def fire(x: str, cin: int, sq: int, ex: int) -> str:
        s = _cv(n, x, cin, sq, 1)
        return n.op("Concat", [_cv(n, s, sq, ex, 1), _cv(n, s, sq, ex, 3)], axis=1)

    x = pool(_cv(n, "x", 3, 64, 3, 2, pads=[0, 0, 0, 0]))
    x = pool(fire(fire(x, 64, 16, 64), 128, 16, 64))
    x = pool(fire(fire(x, 128, 32, 128), 256, 32, 128))
    for cin, sq, ex in ((256, 48, 192), (384, 48, 192), (384, 64, 256), (512, 64, 256)):
        x = fire(x, cin, sq, ex)
    x = n.op("GlobalAveragePool", [_cv(n, x, 512, 1000, 1)])
    n.op("Flatten", [x], axis=1)
    n.nodes[-1].output[0] = "y"
    return n.model("squeezenet1_1", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [batch, 3, res, res])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 1000])])


def shufflenet_v2(batch: int = 1, res: int = 224,
                  weights: str = "initializer") -> onnx.ModelProto:
    """ShuffleNetV2 1.0x (torchvision: stages of 4, 8, 4 units at 116, 232, 464 channels;
    a unit splits its input in two channel halves, runs one through 1x1, 3x3 depthwise,
    1x1, concatenates and shuffles the channels with Reshape-Transpose-Reshape; a
    downsampling unit runs both halves from the whole input, each with a stride-2
    depthwise; a 1x1 to 1024, the spatial mean, the classifier)."""
    n = _Net("dynamo", weights=weights)

    def shuffle(x: str, c: int, size: int) -> str:
        r = n.reshape(x, [batch, 2, c // 2, size, size])
        t = n.op("Transpose", [r], perm=[0, 2, 1, 3, 4])
        return n.reshape(t, [batch, c, size, size])

    x = _cv(n, "x", 3, 24, 3, 2)
    x = n.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin, size = 24, res // 4
    for cout, units in ((116, 4), (232, 8), (464, 4)):
        half = cout // 2
        for i in range(units):
            if i == 0:
                size //= 2
                b1 = _cv(n, _cv(n, x, cin, cin, 3, 2, group=cin, act=""), cin, half, 1)
                b2 = _cv(n, x, cin, half, 1)
                b2 = _cv(n, _cv(n, b2, half, half, 3, 2, group=half, act=""), half, half, 1)
            else:
                b1 = n.op("Split", [x, n.const(np.array([half, half], np.int64))], n_out=2,
                          axis=1)
                b2 = n.nodes[-1].output[1]
                b2 = _cv(n, _cv(n, _cv(n, b2, half, half, 1), half, half, 3, group=half,
                                    act=""), half, half, 1)
            x = shuffle(n.op("Concat", [b1, b2], axis=1), cout, size)
            cin = cout
    return _mean_classifier(n, _cv(n, x, cin, 1024, 1), 1024, "shufflenet_v2", batch, res)


_EFFNET_B0 = ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
              (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1))
"""EfficientNet-B0's MBConv stages: expansion, kernel, stride, channels, repeats."""


def efficientnet_b0(batch: int = 1, res: int = 224,
                    weights: str = "initializer") -> onnx.ModelProto:
    """EfficientNet-B0 (pycls's, the same network as torchvision's: MBConv blocks - 1x1
    expansion, kxk depthwise, squeeze-and-excitation to a quarter of the block's input
    width, 1x1 projection - with swish, x * sigmoid(x), as two exported nodes; a 1x1 head
    to 1280, pooling, the classifier)."""
    n = _Net("dynamo", weights=weights)
    x, cin = _cv(n, "x", 3, 32, 3, 2, act="swish"), 32
    for t, k, s, c, reps in _EFFNET_B0:
        for i in range(reps):
            stride = s if i == 0 else 1
            hid = cin * t
            h = x if t == 1 else _cv(n, x, cin, hid, 1, act="swish")
            h = _cv(n, h, hid, hid, k, stride, group=hid, act="swish")
            se = _cv(n, n.op("GlobalAveragePool", [h]), hid, cin // 4, 1, act="swish")
            h = n.op("Mul", [h, _cv(n, se, cin // 4, hid, 1, act="sigmoid")])
            h = _cv(n, h, hid, c, 1, act="")
            x = n.op("Add", [x, h]) if stride == 1 and cin == c else h
            cin = c
    x = _cv(n, x, cin, 1280, 1, act="swish")
    return _classifier(n, x, 1280, "efficientnet_b0", batch, res)


def inception_v3(batch: int = 1, res: int = 299, weights: str = "initializer",
                 transform_input: bool = True) -> onnx.ModelProto:
    """Inception-v3 (torchvision's pretrained model as exported for inference: no
    auxiliary classifier; with ``transform_input`` its per-channel rescaling of the input,
    a Slice, Mul and Add per channel and a Concat, as the pretrained model has): an
    unpadded stem, three InceptionA, InceptionB, four InceptionC with factorised 1x7 / 7x1
    convolutions, InceptionD and two InceptionE blocks, each a Concat of parallel branches
    (a 3x3 average-pool branch in A, C and E)."""
    n = _Net("dynamo", weights=weights)
    x = "x"
    if transform_input:
        chans = []
        for i, (mean, std) in enumerate(((0.485, 0.229), (0.456, 0.224), (0.406, 0.225))):
            ch = n.op("Slice", [x, *(n.const(np.array([v], np.int64)) for v in (i, i + 1, 1))])
            ch = n.op("Mul", [ch, n.const(np.array(std / 0.5, np.float32))])
            chans.append(n.op("Add", [ch, n.const(np.array((mean - 0.5) / 0.5, np.float32))]))
        x = n.op("Concat", chans, axis=1)

    def cv(x: str, cin: int, cout: int, k: int | tuple[int, int], stride: int = 1,
           pad: bool = True) -> str:
        return _cv(n, x, cin, cout, k, stride, pads=None if pad else [0, 0, 0, 0])

    def avg(x: str) -> str:
        return n.op("AveragePool", [x], kernel_shape=[3, 3], strides=[1, 1], pads=[1] * 4,
                    count_include_pad=1)

    def maxp(x: str) -> str:
        return n.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2])

    def cat(*xs: str) -> str:
        return n.op("Concat", list(xs), axis=1)

    x = cv(cv(cv(x, 3, 32, 3, 2, pad=False), 32, 32, 3, pad=False), 32, 64, 3)
    x = maxp(cv(cv(maxp(x), 64, 80, 1), 80, 192, 3, pad=False))
    c = 192
    for pf in (32, 64, 64):  # InceptionA
        b5 = cv(cv(x, c, 48, 1), 48, 64, 5)
        b3 = cv(cv(cv(x, c, 64, 1), 64, 96, 3), 96, 96, 3)
        x, c = cat(cv(x, c, 64, 1), b5, b3, cv(avg(x), c, pf, 1)), 224 + pf
    b3 = cv(cv(cv(x, c, 64, 1), 64, 96, 3), 96, 96, 3, 2, pad=False)  # InceptionB
    x, c = cat(cv(x, c, 384, 3, 2, pad=False), b3, maxp(x)), 768
    for c7 in (128, 160, 160, 192):  # InceptionC
        b7 = cv(cv(cv(x, c, c7, 1), c7, c7, (1, 7)), c7, 192, (7, 1))
        d = cv(x, c, c7, 1)
        for kk, co in (((7, 1), c7), ((1, 7), c7), ((7, 1), c7), ((1, 7), 192)):
            d = cv(d, c7, co, kk)
        x = cat(cv(x, c, 192, 1), b7, d, cv(avg(x), c, 192, 1))
    b3 = cv(cv(x, c, 192, 1), 192, 320, 3, 2, pad=False)  # InceptionD
    b7 = cv(cv(cv(x, c, 192, 1), 192, 192, (1, 7)), 192, 192, (7, 1))
    x, c = cat(b3, cv(b7, 192, 192, 3, 2, pad=False), maxp(x)), 1280
    for _ in range(2):  # InceptionE
        b3 = cv(x, c, 384, 1)
        d = cv(cv(x, c, 448, 1), 448, 384, 3)
        x, c = cat(cv(x, c, 320, 1), cv(b3, 384, 384, (1, 3)), cv(b3, 384, 384, (3, 1)),
                   cv(d, 384, 384, (1, 3)), cv(d, 384, 384, (3, 1)),
                   cv(avg(x), c, 192, 1)), 2048
    return _classifier(n, x, c, "inception_v3", batch, res)


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
