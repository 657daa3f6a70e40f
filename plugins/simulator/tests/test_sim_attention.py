"""ONNX's fused Attention (opset 23) in the simulator: one FlashAttentionScore task with
attention's matrix work on the cube, outputs as onnxruntime computes them; the LLaMA
builder of the validation bench."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from geplug_simulator import netbuild as nb
from onnx import TensorProto, helper

import geplug

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")

B, H, S, D = 2, 4, 256, 32


def _attention(layout: str = "bnsd", causal: bool = True) -> onnx.ModelProto:
    shape = [B, H, S, D] if layout == "bnsd" else [B, S, H * D]
    heads = {} if layout == "bnsd" else {"q_num_heads": H, "kv_num_heads": H}
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=int(causal),
                            **heads)  # type: ignore[arg-type]
    graph = helper.make_graph(
        [node], "attn", [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape)
                         for n in "qkv"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return model


@pytest.mark.parametrize("layout", ["bnsd", "bsh"])
def test_attention_is_one_fused_attention_task_on_the_cube(layout: str) -> None:
    with geplug.initialize_system(product="atlas_a2") as system:
        compiled = system.compile(_attention(layout))
    (task,) = compiled.device.tasks
    assert task.task.op_type == "FlashAttentionScore"
    share = 3 / 4  # causal: 3 of the 4 blocks of 128 x 128 at S = 256
    assert task.cost.cube_flops == pytest.approx(4.0 * B * H * S * S * D * share)
    assert not compiled.device.unresolved


def test_attention_outputs_are_onnxruntimes() -> None:
    model = _attention()
    try:
        plain = ort.InferenceSession(model.SerializeToString(),
                                     providers=["CPUExecutionProvider"])
    except Exception as exc:  # an onnxruntime without opset 23's Attention
        pytest.skip(f"this onnxruntime runs no Attention: {exc}")
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal((B, H, S, D)).astype(np.float32) for n in "qkv"}
    with geplug.initialize_system(
            product="atlas_a2", config={"precision_mode": "must_keep_origin_dtype"}) as system:
        got = system.compile(model).run(feeds)["y"]
    np.testing.assert_array_equal(got, plain.run(None, feeds)[0])


@pytest.mark.parametrize("kv_heads", [4, 2])
def test_llama_builder_matrix_work_is_the_published_parameter_count(kv_heads: int) -> None:
    """2 FLOPs per matrix weight per token (an independent count from the layer widths),
    plus causal attention's 4 s^2 d per head, block-skipped; with grouped-query attention
    the key/value projections narrow and the rotary tables stay two, not one per layer."""
    layers, hidden, heads, ffn, seq, vocab = 2, 256, 4, 688, 512, 1000
    dh = hidden // heads
    model = nb.llama(layers=layers, hidden=hidden, heads=heads, ffn=ffn, seq=seq,
                     vocab=vocab, kv_heads=kv_heads, weights="input")
    with geplug.initialize_system(product="atlas_a2") as system:
        compiled = system.compile(model)
    weights = layers * (2 * hidden * hidden + 2 * hidden * dh * kv_heads
                        + 3 * hidden * ffn) + hidden * vocab
    attention = layers * 4.0 * heads * seq * seq * dh * (10 / 16)
    assert compiled.device.cube_flops == pytest.approx(2.0 * weights * seq + attention)
    assert [t.task.op_type for t in compiled.device.tasks].count(
        "FlashAttentionScore") == layers
    tables = [i.name for i in model.graph.input if i.name.startswith("rope_cos")]
    assert len(tables) == (1 if kv_heads == heads else 2)


def test_a_causal_attention_after_a_key_cache_sees_every_cached_key() -> None:
    """ONNX aligns the causal diagonal to the last key when ``past_key`` is given: 128 new
    queries after 384 cached keys compute all 4 key blocks (without the cache the same
    shapes would be 1 of 4: the diagonal from the first key)."""
    new, past = 128, 384
    node = helper.make_node("Attention", ["q", "k", "v", "", "pk", "pv"], ["y", "ok", "ov"],
                            is_causal=1)
    shapes = {"q": [B, H, new, D], "k": [B, H, new, D], "v": [B, H, new, D],
              "pk": [B, H, past, D], "pv": [B, H, past, D]}
    graph = helper.make_graph(
        [node], "cached", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
                           for n, s in shapes.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, H, new, D]),
         helper.make_tensor_value_info("ok", TensorProto.FLOAT, [B, H, new + past, D]),
         helper.make_tensor_value_info("ov", TensorProto.FLOAT, [B, H, new + past, D])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    with geplug.initialize_system(product="atlas_a2") as system:
        compiled = system.compile(model)
    (task,) = compiled.device.tasks
    assert task.cost.cube_flops == pytest.approx(4.0 * B * H * new * (new + past) * D)


@pytest.mark.geplug_requires_products("atlas_train")
def test_a_product_without_the_fused_kernel_says_the_attention_is_decomposed() -> None:
    with geplug.open_device("atlas_train") as system:
        compiled = system.compile(_attention())
    (note,) = [n for n in compiled.notes if "attention" in n]
    assert "decomposition on atlas_train" in note and "fused_attention = false" in note
    scratch = 2 * B * H * S * S * 2  # S and P, float16 (allow_fp32_to_fp16 lowers it)
    assert f"{scratch / 2**20:.1f} MiB" in note
    with geplug.initialize_system(product="atlas_a2") as system:
        assert not system.compile(_attention()).notes
