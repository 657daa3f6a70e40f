"""Validation of the device model: predictions against public measurements.

Rebuilds the networks with ``onnx.helper`` (``geplug_simulator.netbuild``; big models with
their weights as shape-only inputs) and op-level kernels with the core's cost functions,
predicts each published figure on its product, and prints the table of
``docs/device-model.md`` with the ratio predicted / measured, its median and its worst row.
Target: every row within +-25% (0.80 <= ratio <= 1.25). "op"/"rated" rows are the figures
the coefficients were calibrated on; "fit" rows the end-to-end figures three coefficients of
the 310P were fitted to (float16 cube efficiency, pipeline fill, graph task overhead;
``--fit atlas_infer`` repeats the fit and prints its leave-one-out ratios); "e2e" rows are
held out (no coefficient fitted to them; the on-chip reuse mechanism was designed with the
training rows' misses in view, docs/device-model.md; the 310P ones, :data:`HELD_310P` and
:data:`BS1_HELD_310P`, are networks outside the fit set).

Run: ``python benchmarks/bench_device_model.py`` (about a minute);
``python benchmarks/bench_device_model.py --fit atlas_infer`` (about ten minutes).
"""

from __future__ import annotations

import json
import math
import statistics
import sys
import tempfile
from collections.abc import Callable

import attrs
from geplug_simulator import netbuild as nb
from geplug_simulator.devicegraph import device_graph
from geplug_simulator.importer import import_model
from geplug_simulator.runtime import device_infos

import geplug
from geplug.device import (
    DeviceModel,
    Graph,
    Node,
    OptimizedGraph,
    Tensor,
    build_device_model,
    copy_us,
    optimize,
)
from geplug.device.cost import Gemm, cube_time_us
from geplug.device.training import training_step
from geplug.plugin import get_manager
from geplug.precision import decide


def product(name: str):  # type: ignore[no-untyped-def]
    return get_manager().products().get(name)


def gemm_tflops(pname: str, dtype: str, n: int = 8192) -> float:
    """Achieved TFLOPS of an n³ GEMM (FlagPerf's computation benchmarks use large squares)."""
    c = product(pname).compute
    t_us, _ = cube_time_us(Gemm(1, n, n, n), c, dtype)
    t_us += c.task_overhead_us.get("graph", c.launch_overhead_us)
    return 2.0 * n**3 / (t_us * 1e-6) / 1e12


def elementwise_gbps(pname: str, op: str, numel: int = 1 << 28) -> float:
    """Achieved GB/s (bytes in + out / time) of one float32 elementwise op on ``numel``."""
    p = product(pname)
    x = Tensor(name="x", dtype="float32", shape=(numel,), kind="input")
    y = Tensor(name="y", dtype="float32", shape=(numel,))
    g = Graph(name="k", nodes=[Node(name="k", op_type=op, inputs=("x",), outputs=("y",))],
              tensors={"x": x, "y": y}, inputs=("x",), outputs=("y",))
    m = build_device_model(optimize(g, p.graph), p, check_memory=False)
    return 8.0 * numel / (m.tasks[0].duration_ns * 1e-9) / 1e9


def h2d_gbps(pname: str, nbytes: int = 1 << 30) -> float:
    return nbytes / (copy_us(nbytes, product(pname)) * 1e-6) / 1e9


def prepared(model, pname: str, mode: str, white: tuple[str, ...] = ()  # type: ignore[no-untyped-def]
             ) -> tuple[OptimizedGraph, dict[str, object]]:
    """The optimized forward graph of ``model`` (weights given as inputs count as weights)
    and its precision decisions on ``pname`` under ``mode``; ``white``: op types put on the
    mixed-precision white list (``modify_mixlist``)."""
    p = product(pname)
    config: dict[str, object] = {"precision_mode": mode}
    with tempfile.TemporaryDirectory() as tmp:
        if white:
            path = f"{tmp}/mixlist.json"
            with open(path, "w") as f:
                json.dump({"white-list": {"to-add": list(white)}}, f)
            config["modify_mixlist"] = path
        system = geplug.open_device(pname, config)  # serves the inference products too
        imported = import_model(model)
        graph = device_graph(imported)
        weights = {i.name for i in model.graph.input} - {model.graph.input[0].name}
        graph = attrs.evolve(graph, inputs=(model.graph.input[0].name,), tensors={
            k: attrs.evolve(t, kind="weight") if k in weights else t
            for k, t in graph.tensors.items()})
        opt = optimize(graph, p.graph)
        imported = attrs.evolve(imported, inputs=(model.graph.input[0].name,))
        decisions = decide(device_infos(imported, opt), p, system.config)
        system.shutdown()
    return opt, {d.node: d for d in decisions}


def device_model(model, pname: str, mode: str, white: tuple[str, ...] = (),  # type: ignore[no-untyped-def]
                 small_channel: bool = False) -> DeviceModel:
    """The forward device model of ``model`` (:func:`prepared`); ``small_channel``: ATC
    ``--enable_small_channel=1`` (the published figure's command)."""
    opt, decisions = prepared(model, pname, mode, white)
    return build_device_model(opt, product(pname), decisions, check_memory=False,
                              small_channel=small_channel)


def inference_throughput(model, pname: str, mode: str, batch: int,  # type: ignore[no-untyped-def]
                         small_channel: bool = False) -> float:
    """Samples/s of back-to-back inference steps (device time of the forward graph)."""
    return batch / (device_model(model, pname, mode, small_channel=small_channel)
                    .compute_span_us * 1e-6)


def training_throughput(model, pname: str, mode: str, batch: int, optimizer: str,  # type: ignore[no-untyped-def]
                        white: tuple[str, ...] = ()) -> float:
    """Samples/s of a training step: forward, backward and optimizer tasks derived from the
    forward graph (``geplug.device.training``)."""
    m = device_model(model, pname, mode, white)
    return batch / (training_step(m, product(pname), optimizer=optimizer).step_us * 1e-6)


def llm_training_tokens(model, pname: str, tokens: int, accumulation: int,  # type: ignore[no-untyped-def]
                        shards: int, recompute: bool) -> float:
    """Tokens/s per card of an LLM trained data-parallel (MindFormers' recipes): per
    micro-batch of ``tokens`` tokens a forward (twice under full ``recompute``) and a
    backward; the AdamW update once per ``accumulation`` micro-batches, over the
    ``1/shards`` of the parameters this card holds (optimizer parallel). The gradient
    reduce-scatter and all-gather, once per step, are left out (a few % of these steps)."""
    m = device_model(model, pname, "allow_mix_precision_bf16")
    step = training_step(m, product(pname), optimizer="adam")
    micro = (step.forward_us * (2 if recompute else 1) + step.backward_us
             + step.optimizer_us / (accumulation * shards))
    return tokens / (micro * 1e-6)


# Inference: best throughput per model on a 310P (Atlas 300I Pro, Ascend310P3; ATC's default
# force_fp16) from the Ascend ModelZoo-PyTorch ACL_PyTorch README table "310P最优性能(对应bs)"
# (best 310P performance, at the batch size given) and each model's own README (ATC, ais_bench
# pure inference; the best batch of its table). small channel: the README's ATC command has
# --enable_small_channel=1. These rows are the calibration set of the 310P's float16
# cube_efficiency and cube_k_latency ("fit"; `--fit atlas_infer` repeats the fit with
# leave-one-out). VGG16, thirteen large 3x3 convolutions, ~31 GFLOPs per image: 1567 img/s is
# ~48 TFLOPS achieved (its own README: 1424.51 img/s at bs 16, 1508.33 at its best batch).
INFER_310P: list[tuple[str, float, str, Callable[[], object], int, bool]] = [
    ("ResNet-50 inference, bs 64, fp16 (img/s)", 4250.0,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/README.md (310P table, ID 100046)",
     lambda: nb.resnet50(batch=64, weights="input"), 64, False),
    ("ResNet-18 inference, bs 128, fp16 (img/s)", 9828.0,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/README.md (310P table, ID 100045; small channel)",
     lambda: nb.resnet18(batch=128), 128, True),
    ("VGG16 inference, bs 16, fp16 (img/s)", 1567.0,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/README.md (310P table, VGG16)",
     lambda: nb.vgg16(batch=16, weights="input"), 16, False),
    ("MobileNetV2 inference, bs 4, fp16 (img/s)", 7072.0,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/README.md (310P table, ID 100041)",
     lambda: nb.mobilenet_v2(batch=4), 4, False),
    ("ResNet-34 inference, bs 32, fp16 (img/s)", 5527.69,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/contrib/cv/classfication/ResNet34/README.md "
     "(310P3 table, commit b3af8737)",
     lambda: nb.resnet34(batch=32, weights="input"), 32, False),
    ("ResNet-101 inference, bs 8, fp16 (img/s)", 2793.40,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/built-in/cv/Resnet101_Pytorch_Infer/README.md "
     "(310P3 table, commit e9c424a2; AIPP, small channel)",
     lambda: nb.resnet101(batch=8, weights="input"), 8, True),
    ("ResNet-152 inference, bs 8, fp16 (img/s)", 1934.15,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/contrib/cv/classfication/ResNet152/README.md "
     "(310P3 table, commit e9c424a2; AIPP, small channel)",
     lambda: nb.resnet152(batch=8, weights="input"), 8, True),
    ("Wide ResNet-50-2 inference, bs 32, fp16 (img/s)", 2097.663,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/contrib/cv/classfication/"
     "Wide_ResNet50_2_for_Pytorch/README.md (310P3 table, commit 95b3b3e8)",
     lambda: nb.wide_resnet50_2(batch=32, weights="input"), 32, False),
    ("Wide ResNet-101-2 inference, bs 16, fp16 (img/s)", 1151.036,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/contrib/cv/classfication/Wide_ResNet101_2/"
     "README.md (310P3 table, commit 49a79342)",
     lambda: nb.wide_resnet101_2(batch=16, weights="input"), 16, False),
    ("VGG19 inference, bs 64, fp16 (img/s)", 1153.01,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/contrib/cv/classfication/VGG19/ReadMe.md "
     "(310P column, commit 2b78ef25)",
     lambda: nb.vgg19(batch=64, weights="input"), 64, False),
]


# Held out of that fit: published 310P3 throughputs of networks with other layer mixes
# (grouped, depthwise, concatenating, factorised 1x7 convolutions), predicted with the fitted
# coefficients unchanged ("e2e"). The same ModelZoo README tables (ATC at the batch size shown,
# ais_bench pure inference; the best batch of each table); small channel as above ("AIPP":
# the README's ATC command also inserts AIPP; as for the fit rows, AIPP is not modelled).
HELD_310P: list[tuple[str, float, str, Callable[[], object], int, bool]] = [
    ("ResNeXt-50 32x4d inference, bs 32, fp16 (img/s)", 3749.0,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/contrib/cv/classfication/ResNeXt50/ReadMe.md "
     "(Ascend310P3 table, commit d69f9bfb; AIPP, small channel)",
     lambda: nb.resnext50_32x4d(batch=32, weights="input"), 32, True),
    ("DenseNet-121 inference, bs 8, fp16 (img/s)", 2194.99,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/built-in/cv/Densenet121_Pytorch_Infer/ReadMe.md "
     "(Ascend310P3 table, commit b3324a6d)",
     lambda: nb.densenet121(batch=8, weights="input"), 8, False),
    ("SqueezeNet 1.1 inference, bs 8, fp16 (img/s)", 19546.3,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/contrib/cv/classfication/Squeezenet1_1/README.md "
     "(310P3 column, commit 3025cbe7; AIPP, small channel)",
     lambda: nb.squeezenet1_1(batch=8, weights="input"), 8, True),
    ("ShuffleNetV2 1.0x inference, bs 32, fp16 (img/s)", 7736.07,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/built-in/cv/Shufflenetv2_for_Pytorch/ReadMe.md "
     "(Ascend310P3 table, commit a73f3a70; AIPP, small channel)",
     lambda: nb.shufflenet_v2(batch=32, weights="input"), 32, True),
    ("EfficientNet-B0 inference, bs 8, fp16 (img/s)", 2489.11,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/built-in/cv/EfficientNet_for_Pytorch/README.md "
     "(310P3 column, commit 949ee5a1; AIPP, small channel)",
     lambda: nb.efficientnet_b0(batch=8, weights="input"), 8, True),
    ("Inception-v3 inference, bs 8, 299x299, fp16 (img/s)", 2388.07,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/built-in/cv/InceptionV3_for_Pytorch/README.md "
     "(Ascend310P3 table, commit a73f3a70; AIPP)",
     lambda: nb.inception_v3(batch=8, weights="input"), 8, False),
    # added in a later session, after the fit (no coefficient changed for them): depthwise
    # networks without squeeze-excite or channel shuffle, the controls for the depthwise
    # layout (docs/device-model.md, Validation)
    ("MobileNetV1 1.0 inference, bs 32, fp16 (img/s)", 13990.09,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/contrib/cv/classfication/MobileNet-v1/README.md "
     "(310P3 column, commit 949ee5a1; plain ATC, no AIPP)",
     lambda: nb.mobilenet_v1(batch=32, weights="input"), 32, False),
    ("MnasNet 1.0 inference, bs 16, fp16 (img/s)", 10650.99,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/contrib/cv/classfication/Mnasnet1_0/README.md "
     "(310P3 table, commit 18c5f795)",
     lambda: nb.mnasnet1_0(batch=16, weights="input"), 16, False),
]



# Batch 1 (the latency a single request sees; overhead-bound for small networks) from the
# batch sweeps of the same READMEs (310P3 tables, ais_bench pure inference). The three of fit
# networks calibrate the graph task overhead with the cube coefficients (``--fit``); the
# rest are held out.
BS1_FIT_310P: list[tuple[str, float, str, Callable[[], object], int, bool]] = [
    ("ResNet-18 inference, bs 1, fp16 (img/s)", 2864.96,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/built-in/cv/Resnet18_for_PyTorch/README.md "
     "(310P3 table, commit 3c2cbb83; AIPP, small channel)",
     lambda: nb.resnet18(batch=1), 1, True),
    ("ResNet-34 inference, bs 1, fp16 (img/s)", 1775.08,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/contrib/cv/classfication/ResNet34/README.md "
     "(310P3 table, commit 0621d3d3)",
     lambda: nb.resnet34(batch=1, weights="input"), 1, False),
    ("ResNet-101 inference, bs 1, fp16 (img/s)", 971.86,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/built-in/cv/Resnet101_Pytorch_Infer/README.md "
     "(310P3 table, commit 8988159f; AIPP, small channel)",
     lambda: nb.resnet101(batch=1, weights="input"), 1, True),
]
BS1_HELD_310P: list[tuple[str, float, str, Callable[[], object], int, bool]] = [
    ("ShuffleNetV2 1.0x inference, bs 1, fp16 (img/s)", 2035.68,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/built-in/cv/Shufflenetv2_for_Pytorch/ReadMe.md "
     "(Ascend310P3 table, commit a73f3a70; AIPP, small channel)",
     lambda: nb.shufflenet_v2(batch=1, weights="input"), 1, True),
    ("EfficientNet-B0 inference, bs 1, fp16 (img/s)", 1245.33,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/built-in/cv/EfficientNet_for_Pytorch/README.md "
     "(310P3 column, commit 949ee5a1; AIPP, small channel)",
     lambda: nb.efficientnet_b0(batch=1, weights="input"), 1, True),
    ("SqueezeNet 1.1 inference, bs 1, fp16 (img/s)", 4849.7,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/contrib/cv/classfication/Squeezenet1_1/README.md "
     "(310P3 column, commit 3025cbe7; AIPP, small channel)",
     lambda: nb.squeezenet1_1(batch=1, weights="input"), 1, True),
    ("DenseNet-121 inference, bs 1, fp16 (img/s)", 1087.52,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/built-in/cv/Densenet121_Pytorch_Infer/ReadMe.md "
     "(Ascend310P3 table, commit b3324a6d)",
     lambda: nb.densenet121(batch=1, weights="input"), 1, False),
    ("Inception-v3 inference, bs 1, 299x299, fp16 (img/s)", 1099.11,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/built-in/cv/InceptionV3_for_Pytorch/README.md "
     "(Ascend310P3 table, commit a73f3a70; AIPP)",
     lambda: nb.inception_v3(batch=1, weights="input"), 1, False),
    ("ResNeXt-50 32x4d inference, bs 1, fp16 (img/s)", 1490.0,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/contrib/cv/classfication/ResNeXt50/ReadMe.md "
     "(Ascend310P3 table, commit d69f9bfb; AIPP, small channel)",
     lambda: nb.resnext50_32x4d(batch=1, weights="input"), 1, True),
    ("MobileNetV1 1.0 inference, bs 1, fp16 (img/s)", 4076.18,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/contrib/cv/classfication/MobileNet-v1/README.md "
     "(310P3 column, commit 949ee5a1; plain ATC, no AIPP)",
     lambda: nb.mobilenet_v1(batch=1, weights="input"), 1, False),
    ("MnasNet 1.0 inference, bs 1, fp16 (img/s)", 3382.05,
     "Ascend/ModelZoo-PyTorch ACL_PyTorch/contrib/cv/classfication/Mnasnet1_0/README.md "
     "(310P3 table, commit 18c5f795)",
     lambda: nb.mnasnet1_0(batch=1, weights="input"), 1, False),
]

ROWS: list[tuple[str, str, str, float, str, Callable[[], float]]] = [
    ("atlas_a2", "GEMM FP16 (TFLOPS)", "op", 313.2,
     "FlagPerf base/benchmarks/computation-FP16/ascend/README.md",
     lambda: gemm_tflops("atlas_a2", "float16")),
    ("atlas_a2", "GEMM BF16 (TFLOPS)", "op", 304.0,
     "FlagPerf base/benchmarks/computation-BF16/ascend/README.md",
     lambda: gemm_tflops("atlas_a2", "bfloat16")),
    ("atlas_a2", "GEMM FP32/HF32 (TFLOPS)", "op", 82.9,
     "FlagPerf base/benchmarks/computation-FP32/ascend/README.md",
     lambda: gemm_tflops("atlas_a2", "float32")),
    ("atlas_a2", "GEMM INT8 (TOPS)", "op", 608.6,
     "FlagPerf base/benchmarks/computation-INT8/ascend/README.md",
     lambda: gemm_tflops("atlas_a2", "int8")),
    ("atlas_a2", "torch.matmul BF16 (TFLOPS)", "op", 328.0,
     "gameofdimension/limulidae README.md", lambda: gemm_tflops("atlas_a2", "bfloat16")),
    ("atlas_a2", "torch.matmul FP32 (TFLOPS)", "op", 87.0,
     "gameofdimension/limulidae README.md", lambda: gemm_tflops("atlas_a2", "float32")),
    ("atlas_a2", "exp bandwidth (GB/s)", "op", 642.0,
     "gameofdimension/limulidae README.md (weaker)", lambda: elementwise_gbps("atlas_a2", "Exp")),
    ("atlas_a2", "sigmoid bandwidth (GB/s)", "op", 640.0,
     "gameofdimension/limulidae README.md (weaker)",
     lambda: elementwise_gbps("atlas_a2", "Sigmoid")),
    ("atlas_a2", "host->device copy (GB/s)", "op", 24.9,
     "FlagPerf base/toolkits/interconnect-h2d/ascend/README.md", lambda: h2d_gbps("atlas_a2")),
    ("atlas_350", "vector-only fused op (GB/s)", "op", 1170.0,
     "Ascend950PR guide quoted in hardware.md (weaker)",
     lambda: elementwise_gbps("atlas_350", "Add")),
    ("atlas_a3", "BF16 per die, rated (TFLOPS)", "rated", 376.0,
     "CloudMatrix384 paper arXiv 2506.12708", lambda: gemm_tflops("atlas_a3", "bfloat16")),
    # MindSpore's model-zoo ResNet-50 trains with amp O2 and keep_batchnorm_fp32=False
    # (BatchNorm in float16: on the white list here) and Momentum; BERT with Lamb.
    ("atlas_train", "ResNet-50 v1.5 training, bs 256, mixed (img/s)", "e2e", 2115.0,
     "mindspore-ai/docs docs/source_en/benchmark.md (r0.5, 1x Ascend 910)",
     lambda: training_throughput(nb.resnet50(batch=256, weights="input", batchnorm=True),
                                 "atlas_train", "allow_mix_precision", 256, "momentum",
                                 white=("BatchNorm",))),
    ("atlas_train", "BERT-Large training, bs 96, seq 128, mixed (sent/s)", "e2e", 269.0,
     "mindspore-ai/docs docs/source_en/benchmark.md (r0.5, 1x Ascend 910)",
     lambda: training_throughput(nb.bert(layers=24, hidden=1024, heads=16, seq=128, batch=96,
                                         vocab=21128, weights="input"),
                                 "atlas_train", "allow_mix_precision", 96, "lamb")),
    # MindFormers on Atlas 800T A2, 8 cards data-parallel (data_parallel 8, model_parallel 1,
    # pipeline_stage 1, optimizer parallel), bf16, flash attention; tokens/s per card
    ("atlas_a2", "LLaMA2-7B training, seq 4096, mbs 1, GA 8, bf16 (tokens/s/card)", "e2e",
     4160.0, "mindspore-lab/mindformers docs/model_cards/llama2.md (Atlas 800T A2, commit "
     "2388c729; configs/llama2/pretrain_llama2_7b_bf16.yaml)",
     lambda: llm_training_tokens(nb.llama(weights="input"), "atlas_a2", 4096, 8, 8, False)),
    ("atlas_a2", "Qwen-7B fine-tuning, seq 2048, mbs 2, bf16 (tokens/s/card)", "e2e", 2955.0,
     "mindspore-lab/mindformers research/qwen/qwen.md (Atlas 800T A2, commit 2388c729; "
     "research/qwen/finetune_qwen_7b_bf16.yaml)",
     lambda: llm_training_tokens(nb.llama(seq=2048, batch=2, vocab=151936, weights="input"),
                                 "atlas_a2", 4096, 1, 8, False)),
    ("atlas_a2", "LLaMA3-8B fine-tuning, seq 8192, mbs 1, full recompute, bf16 "
     "(tokens/s/card)", "e2e", 2581.0,
     "mindspore-lab/mindformers research/llama3/llama3.md (Atlas 800T A2, commit 2388c729; "
     "research/llama3/finetune_llama3_8b_8k_800T_A2_64G.yaml)",
     lambda: llm_training_tokens(nb.llama(seq=8192, vocab=128256, kv_heads=8, ffn=14336,
                                          weights="input"), "atlas_a2", 8192, 1, 8, True)),
    *[("atlas_infer", what, "fit", published, source,
       (lambda f=factory, b=batch, sc=small: inference_throughput(
           f(), "atlas_infer", "force_fp16", b, small_channel=sc)))
      for what, published, source, factory, batch, small in [*INFER_310P, *BS1_FIT_310P]],
    *[("atlas_infer", what, "e2e", published, source,
       (lambda f=factory, b=batch, sc=small: inference_throughput(
           f(), "atlas_infer", "force_fp16", b, small_channel=sc)))
      for what, published, source, factory, batch, small in [*HELD_310P, *BS1_HELD_310P]],
]


def fit(pname: str = "atlas_infer") -> int:
    """Repeat the fit of ``pname``'s float16 ``cube_efficiency``, ``cube_k_latency`` and graph
    ``task_overhead_us`` to its calibration rows (:data:`INFER_310P` and the batch-1 rows of
    the same networks, :data:`BS1_FIT_310P`): a grid (overhead 1.5-4.5 µs in steps of 0.5,
    fill 0-768 in steps of 32, efficiency 0.70-1.00 in steps of 0.025), the setting with the
    smallest worst |log ratio|; then leave-one-out: each row predicted by the setting fitted
    to the others, which is what the fit says about a network it was not fitted to. Takes
    about ten minutes."""
    base = product(pname)
    cases = []
    for what, published, _, factory, batch, small in [*INFER_310P, *BS1_FIT_310P]:
        opt, decisions = prepared(factory(), pname, "force_fp16")
        name = what.split(" inference")[0] + (", bs 1" if batch == 1 else "")
        cases.append((name, published, batch, small, opt, decisions))
    grid: dict[tuple[float, int, float], dict[str, float]] = {}
    for overhead in (x / 2 for x in range(3, 10)):
        for fill in range(0, 769, 32):
            for eff in (x / 1000 for x in range(700, 1001, 25)):
                c = attrs.evolve(base.compute, cube_k_latency=float(fill),
                                 cube_efficiency={**base.compute.cube_efficiency,
                                                  "float16": eff},
                                 task_overhead_us={**base.compute.task_overhead_us,
                                                   "graph": overhead})
                p = attrs.evolve(base, compute=c)
                grid[(overhead, fill, eff)] = {
                    name: batch / (build_device_model(opt, p, dec, check_memory=False,
                                                      small_channel=small)
                                   .compute_span_us * 1e-6) / published
                    for name, published, batch, small, opt, dec in cases}

    def best(leave_out: str = "") -> tuple[float, int, float]:
        return min(grid, key=lambda k: max(abs(math.log(r)) for n, r in grid[k].items()
                                           if n != leave_out))

    declared = (base.compute.task_overhead_us.get("graph"), int(base.compute.cube_k_latency),
                base.compute.cube_efficiency["float16"])
    chosen = best()
    print(f"{pname}: declared (graph task_overhead_us, cube_k_latency, float16 "
          f"cube_efficiency) = {declared}; best on the grid {chosen}")
    print(f"{'row':<24} {'fitted':>7} {'left out':>9}  (fit without the row)")
    held = []
    for name, *_ in cases:
        k = best(name)
        held.append(grid[k][name])
        print(f"{name:<24} {grid[chosen][name]:>7.3f} {grid[k][name]:>9.3f}  {k}")
    inside = sum(0.8 <= r <= 1.25 for r in held)
    worst = max(held, key=lambda r: abs(math.log(r)))
    print(f"leave-one-out: median {statistics.median(held):.2f}, worst {worst:.2f}, "
          f"{inside}/{len(held)} within +-25%")
    return 0


def main() -> int:
    print(f"{'product':<12} {'measurement':<52} {'kind':<6} {'published':>10} "
          f"{'predicted':>10} {'ratio':>6}  source")
    ratios: list[tuple[float, str]] = []
    for pname, what, kind, published, source, predict in ROWS:
        predicted = predict()
        ratio = predicted / published
        ratios.append((ratio, f"{pname} {what}"))
        flag = "" if 0.8 <= ratio <= 1.25 else "  <-- outside +-25%"
        print(f"{pname:<12} {what:<52} {kind:<6} {published:>10.1f} {predicted:>10.1f} "
              f"{ratio:>6.2f}  {source}{flag}")
    values = [r for r, _ in ratios]
    worst = max(ratios, key=lambda r: abs(r[0] - 1.0))
    inside = sum(0.8 <= r <= 1.25 for r in values)
    print(f"\nmedian ratio {statistics.median(values):.2f}; worst {worst[0]:.2f} ({worst[1]}); "
          f"{inside}/{len(values)} rows within +-25%")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--fit":
        sys.exit(fit(*sys.argv[2:3]))
    sys.exit(main())
