"""``geplug demo``: two small seeded models run on a simulated product under several precision
modes, showing per-op decisions, what float16 does to the numbers, and simulated time."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, BinaryIO, TextIO

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from geplug.backend import SampleModel
from geplug_simulator import DEFAULT_PRODUCT

__all__ = ["DEMO_CASES", "DEMO_MODES", "FALLBACK_MODES", "build_cnn", "build_mlp", "run_demo",
           "sample_models"]

DEMO_MODES = ("must_keep_origin_dtype", "allow_fp32_to_fp16", "allow_mix_precision_bf16")
"""Precision modes the demo compares (all valid for training on the default product)."""
FALLBACK_MODES = ("force_fp16", "allow_mix_precision_fp16", "force_fp32")
"""Tried, in order, in place of DEMO_MODES a product refuses (e.g. no bfloat16)."""
DEMO_CASES = 3 * 2
"""Model runs of a demo: three precision modes, two models (the progress display's total)."""


def build_mlp(seed: int = 0) -> onnx.ModelProto:
    """x[4,64] -> MatMul -> Relu -> MatMul -> Softmax; fc1's outputs exceed float16's range."""
    rng = np.random.default_rng(seed)
    w1 = (rng.standard_normal((64, 128)) * 10000.0).astype(np.float32)
    b1 = np.zeros(128, np.float32)
    w2 = (rng.standard_normal((128, 10)) * 1e-6).astype(np.float32)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])
    y = helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 10])
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("Add", ["h", "b1"], ["hb"], name="bias1"),
        helper.make_node("Relu", ["hb"], ["r"], name="relu1"),
        helper.make_node("MatMul", ["r", "w2"], ["logits"], name="fc2"),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    inits = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
             numpy_helper.from_array(w2, "w2")]
    graph = helper.make_graph(nodes, "demo_mlp", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                             producer_name="geplug-demo")


def build_cnn(seed: int = 0) -> onnx.ModelProto:
    """A small image classifier: Conv-Relu-MaxPool-Conv-Relu-GlobalAveragePool-Gemm-Softmax."""
    rng = np.random.default_rng(seed)

    def he(shape: Sequence[int], fan_in: int) -> np.ndarray:
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    inits = {
        "conv1.w": he((32, 3, 3, 3), 27), "conv1.b": np.zeros(32, np.float32),
        "conv2.w": he((64, 32, 3, 3), 288), "conv2.b": np.zeros(64, np.float32),
        "fc.w": he((10, 64), 64), "fc.b": np.zeros(10, np.float32),
    }
    x = helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, 64, 64])
    y = helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 10])
    nodes = [
        helper.make_node("Conv", ["image", "conv1.w", "conv1.b"], ["c1"], name="conv1",
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2.w", "conv2.b"], ["c2"], name="conv2",
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(nodes, "demo_cnn", [x], [y],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                             producer_name="geplug-demo")


def _short(engine: str, dtype: str) -> str:
    dt = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}.get(dtype, dtype or "-")
    return f"{engine} {dt}"  # the engine in the real stack's words (geplug.vocab.ENGINES)


def _describe(out: np.ndarray, ref: np.ndarray) -> str:
    bad = int(np.count_nonzero(~np.isfinite(out)))
    if bad:
        return f"NOT FINITE ({bad}/{out.size} inf/nan)"
    err = float(np.max(np.abs(out.astype(np.float64) - ref.astype(np.float64))))
    return f"finite, max |diff| vs fp32 {err:.1e}"


def sample_models() -> list[SampleModel]:
    """The demo's two seeded models with their inputs (also the backend conformance suite's)."""
    rng = np.random.default_rng(42)
    return [
        SampleModel(name="MLP", model=build_mlp(),
                    inputs={"x": rng.standard_normal((4, 64)).astype(np.float32)},
                    description="fc1's activations reach ~1e5, above float16's largest finite "
                                "value 65504"),
        SampleModel(name="CNN", model=build_cnn(),
                    inputs={"image": rng.standard_normal((16, 3, 64, 64)).astype(np.float32)},
                    description="a small image classifier: reduced precision costs accuracy, "
                                "saves device time"),
    ]


def _refuses_mode(exc: Any) -> bool:
    """Whether a :class:`~geplug.errors.ConfigError` from opening the system is only the
    product refusing the precision mode (the demo then tries the next mode)."""
    errors = [p for p in exc.problems if p.severity == "error"]
    return bool(errors) and all(p.option == "precision_mode" for p in errors)


def run_demo(
    open_system: Callable[[str, dict[str, Any]], Any],
    *,
    product: str = DEFAULT_PRODUCT,
    modes: Sequence[str] = (*DEMO_MODES, *FALLBACK_MODES),
    out_dir: str | None = None,
    stream: TextIO,
    on_case: Callable[[str], None] | None = None,
) -> int:
    """Run the demo and print its summary to ``stream``; returns an exit code.

    ``open_system(product, options)`` returns an initialised system (a context manager); it
    raises :class:`~geplug.errors.ConfigError` for a mode the product refuses. The first
    three of ``modes`` the product accepts are compared; the first is the reference.
    ``on_case("MLP under force_fp32")`` is called after each model ran under a mode (the CLI's
    progress display counts them).
    """
    started = time.perf_counter()
    cases = [(s.name, s.model, dict(s.inputs), s.description) for s in sample_models()]
    from geplug.errors import ConfigError

    results: dict[str, np.ndarray] = {}
    report: dict[str, Any] = {}
    rows: dict[str, list[tuple[str, list[str], np.ndarray, float]]] = {c[0]: [] for c in cases}
    reasons: dict[str, dict[str, str]] = {c[0]: {} for c in cases}
    nodes: dict[str, list[str]] = {}
    display = product
    used: list[str] = []
    skipped: list[str] = []
    for mode in dict.fromkeys(modes):
        if len(used) == 3:
            break
        try:
            system = open_system(product, {"precision_mode": mode})
        except ConfigError as exc:
            if not _refuses_mode(exc):
                raise  # anything else (a bad environment setting) is the user's to see
            skipped.append(mode)  # the product's rules refuse this mode (e.g. no bfloat16)
            continue
        used.append(mode)
        with system:
            display = f"{system.product.display_name} ({system.product.name})"
            for label, model, feeds, _note in cases:
                compiled = system.compile(model, name=f"demo_{label.lower()}")
                out = next(iter(compiled.run(feeds).values()))
                nodes[label] = [d.node for d in compiled.decisions]
                cells = [_short(d.engine, d.dtype) for d in compiled.decisions]
                rows[label].append((mode, cells, out, compiled.simulated_time_us))
                first = compiled.decisions[0]
                reasons[label][mode] = f"{first.node}: {first.reason}"
                results[f"{label.lower()}/{mode}"] = out
                report[f"{label}/{mode}"] = [d.to_json() for d in compiled.decisions]
                if on_case is not None:
                    on_case(f"{label} under {mode}")
    if not used:
        print(f"no precision mode of {list(modes)} is accepted on {product!r}", file=stream)
        return 1
    width = max(len(m) for m in used) + 2
    for label, _model, feeds, note in cases:
        shapes = ", ".join(f"{k}{list(v.shape)}" for k, v in feeds.items())
        batch = next(iter(feeds.values())).shape[0]
        print(f"\n{label} (batch size {batch}, input {shapes}): {note}", file=stream)
        header = "  " + "precision_mode".ljust(width) + "".join(
            n[:13].ljust(14) for n in nodes[label])
        print(header + "sim. device time  output", file=stream)
        reference = rows[label][0][2]
        for mode, cells, out, sim_us in rows[label]:
            print("  " + mode.ljust(width) + "".join(c.ljust(14) for c in cells)
                  + f"{sim_us:9.2f} us    {_describe(out, reference)}", file=stream)
        print("  why (first op):", file=stream)
        for mode in used:
            print(f"    - {reasons[label][mode]}", file=stream)
    if skipped:
        print(f"\nNot accepted on this product (skipped): {', '.join(skipped)}", file=stream)
    print(f"\nProduct: {display}. Output compared with the {used[0]} run; simulated device "
          "time from the product's compute model (approximate public figures). "
          f"Done in {time.perf_counter() - started:.1f} s.", file=stream)
    print(f"Next: `geplug compile MODEL.onnx --product {product} --config session.toml` shows "
          "the decisions for your own model.", file=stream)
    if out_dir:
        _save(out_dir, cases, results, report)
        print(f"Artifacts written to {out_dir}", file=stream)
    return 0


def _save(out_dir: str, cases: Sequence[tuple[str, onnx.ModelProto, Any, str]],
          results: dict[str, np.ndarray], report: dict[str, Any]) -> None:
    from geplug.atomic import write_atomic

    os.makedirs(out_dir, exist_ok=True)
    for label, model, _feeds, _note in cases:
        data = model.SerializeToString()
        write_atomic(os.path.join(out_dir, f"demo_{label.lower()}.onnx"),
                     partial(_write_bytes, data))
    arrays: dict[str, Any] = {k.replace("/", "__"): v for k, v in results.items()}
    write_atomic(os.path.join(out_dir, "demo_outputs.npz"), lambda fh: np.savez(fh, **arrays))
    text = json.dumps(report, indent=2).encode("utf-8")
    write_atomic(os.path.join(out_dir, "demo_decisions.json"), partial(_write_bytes, text))


def _write_bytes(data: bytes, fh: BinaryIO) -> None:
    fh.write(data)
