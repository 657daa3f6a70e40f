"""How the cube lays out a convolution (``geplug.device.cost.cube_shape``): input channels
padded to C0 per kernel tap (C04 under small-channel mode) and grouped convolutions with
their groups merged as CANN's TBE Conv2D merges them. The FLOPs stay the convolution's own."""

from __future__ import annotations

import math

import pytest

from geplug.device import Graph, Node, Tensor, build_device_model, optimize
from geplug.device.cost import (
    Gemm,
    cube_shape,
    cube_time_us,
    node_work,
    small_channel_in_force,
)
from geplug.testing.plugin import require_product

TILE = (16, 16, 16)


def _conv_graph(cin: int, cout: int, k: int, group: int = 1, hw: int = 56,
                batch: int = 8) -> Graph:
    ts = {"x": Tensor(name="x", dtype="float16", shape=(batch, cin, hw, hw), kind="input"),
          "w": Tensor(name="w", dtype="float16", shape=(cout, cin // group, k, k),
                      kind="weight"),
          "y": Tensor(name="y", dtype="float16", shape=(batch, cout, hw, hw))}
    node = Node(name="conv", op_type="Conv2D", inputs=("x", "w"), outputs=("y",),
                attrs={"group": group, "kernel_shape": [k, k]})
    return Graph(name="g", nodes=[node], tensors=ts, inputs=("x",), outputs=("y",))


def _gemm(cin: int, cout: int, k: int, group: int = 1) -> Gemm:
    g = _conv_graph(cin, cout, k, group)
    (gemm,) = node_work(g.nodes[0], g, "matrix").gemms
    return gemm


def test_a_depthwise_convolution_runs_as_merged_groups_of_sixteen_channels() -> None:
    gemm = _gemm(96, 96, 3, group=96)
    assert (gemm.batch, gemm.n, gemm.k, gemm.window) == (96, 1, 9, 9)
    # enlarge = min(lcm(lcm(1, 16), lcm(1, 16)), 96) = 16: 6 GEMMs of N 16, K 16 x 9
    assert cube_shape(gemm, TILE) == (6, 16, 144)
    # the FLOPs are the convolution's own, not the padded cube work
    assert gemm.flops == 2.0 * 96 * (8 * 56 * 56) * 9


@pytest.mark.parametrize(("cin", "cout", "group", "expected"), [
    (32, 32, 8, (2, 16, 16 * 9)),     # 4 channels per group: 4 groups merged
    (64, 64, 2, (2, 32, 32 * 9)),     # 32 per group: already whole fractals, none merged
    (48, 48, 16, (1, 48, 48 * 9)),    # 3 per group: lcm(3, 16) / 3 = 16 groups merged
])
def test_grouped_convolutions_merge_as_the_tbe_conv2d_does(cin: int, cout: int, group: int,
                                                          expected: tuple[int, int, int]
                                                          ) -> None:
    gemm = _gemm(cin, cout, 3, group=group)
    cin_g, cout_g = cin // group, cout // group
    enlarge = min(math.lcm(math.lcm(cin_g, 16) // cin_g, math.lcm(cout_g, 16) // cout_g), group)
    assert expected[0] == -(-group // enlarge)
    assert cube_shape(gemm, TILE) == expected


def test_input_channels_pad_per_kernel_tap_and_small_channel_pads_a_stem_to_four() -> None:
    stem = _gemm(3, 64, 7)
    assert stem.k == 3 * 49 and stem.c04
    assert cube_shape(stem, TILE) == (1, 64, 16 * 49)            # C0 = 16 per tap
    assert cube_shape(stem, TILE, small_channel=True) == (1, 64, 208)  # 4 x 49 = 196 -> 208
    wide = _gemm(64, 64, 3)
    assert not wide.c04
    assert cube_shape(wide, TILE) == cube_shape(wide, TILE, small_channel=True) == (1, 64, 576)
    odd = _gemm(24, 32, 3)                                        # 24 -> 32 per tap
    assert cube_shape(odd, TILE) == (1, 32, 32 * 9)
    plain = Gemm(batch=4, m=100, n=24, k=40)                      # a MatMul: K padded once
    assert cube_shape(plain, TILE) == (4, 32, 48)


@pytest.mark.parametrize(("cin", "cout", "k", "group"), [
    (4, 4, 3, 2),      # grouped: C04 is off for groups (TBE Conv2D op_select_format)
    (4, 4, 3, 4),      # depthwise on 4 channels
    (3, 64, 1, 1),     # a 1x1 kernel
])
def test_small_channel_leaves_grouped_and_1x1_convolutions_alone(cin: int, cout: int, k: int,
                                                                 group: int) -> None:
    gemm = _gemm(cin, cout, k, group=group)
    assert not gemm.c04
    assert cube_shape(gemm, TILE, small_channel=True) == cube_shape(gemm, TILE)


def test_the_channel_block_is_32_bytes_of_the_dtype() -> None:
    stem = _gemm(3, 64, 7)
    assert cube_shape(stem, TILE, dtype="float16") == (1, 64, 16 * 49)
    assert cube_shape(stem, TILE, dtype="float32") == (1, 64, 8 * 49)   # C0 = 8
    assert cube_shape(stem, TILE, dtype="int8") == (1, 64, 32 * 49)     # C0 = 32
    depthwise = _gemm(64, 64, 3, group=64)
    assert cube_shape(depthwise, TILE, dtype="int8") == (2, 32, 32 * 9)  # 32 groups merged


@pytest.mark.requires_products("atlas_infer", "atlas_a2")
def test_c04_needs_aipp_where_the_product_says_so() -> None:
    infer, a2 = require_product("atlas_infer"), require_product("atlas_a2")
    assert infer.compute.small_channel_needs_aipp and not a2.compute.small_channel_needs_aipp
    assert small_channel_in_force(infer, True) is False       # geplug models no AIPP
    assert small_channel_in_force(infer, True, aipp=True) is True
    assert small_channel_in_force(a2, True) is True
    assert small_channel_in_force(a2, False) is False


@pytest.mark.requires_products("atlas_infer")
def test_merged_groups_make_a_depthwise_convolution_cheaper_than_per_channel_gemms() -> None:
    compute = require_product("atlas_infer").compute
    gemm = _gemm(192, 192, 3, group=192)
    merged, _ = cube_time_us(gemm, compute, "float16")
    per_channel, _ = cube_time_us(Gemm(gemm.batch, gemm.m, gemm.n, gemm.k), compute, "float16")
    assert merged < per_channel / 2


@pytest.mark.requires_products("atlas_infer")
def test_small_channel_makes_a_three_channel_stem_faster_and_keeps_its_flops() -> None:
    product = require_product("atlas_infer")
    opt = optimize(_conv_graph(3, 64, 7), product.graph)
    off = build_device_model(opt, product, check_memory=False)
    on = build_device_model(opt, product, check_memory=False, small_channel=True)
    assert on.tasks[0].cost.compute_us < off.tasks[0].cost.compute_us
    assert on.tasks[0].cost.cube_flops == off.tasks[0].cost.cube_flops


def _transposed(cin: int, cout: int, k: int, stride: int, hw: int = 28,
                batch: int = 4) -> Gemm:
    out = (hw - 1) * stride + k  # no padding
    ts = {"x": Tensor(name="x", dtype="float16", shape=(batch, cin, hw, hw), kind="input"),
          "w": Tensor(name="w", dtype="float16", shape=(cin, cout, k, k), kind="weight"),
          "y": Tensor(name="y", dtype="float16", shape=(batch, cout, out, out))}
    node = Node(name="up", op_type="Conv2DTranspose", inputs=("x", "w"), outputs=("y",),
                attrs={"group": 1})
    g = Graph(name="g", nodes=[node], tensors=ts, inputs=("x",), outputs=("y",))
    (gemm,) = node_work(node, g, "matrix").gemms
    return gemm


@pytest.mark.requires_products("atlas_a2")
def test_a_strided_transposed_convolution_computes_over_its_zero_filled_input() -> None:
    # ConvTranspose 64 -> 32, 3x3, stride 2 on 4 x 28 x 28: CANN's Conv2DBackpropInput
    # computes every one of the 57 x 57 output positions with K = 64 channels x 9 taps
    gemm = _transposed(64, 32, 3, 2)
    assert (gemm.m, gemm.n, gemm.k, gemm.window) == (4 * 57 * 57, 32, 64 * 9, 9)
    # its FLOPs are the work of its input positions: each scatters into 32 x 9 outputs
    assert gemm.flops == 2.0 * (4 * 28 * 28) * 64 * 32 * 9
    c = require_product("atlas_a2").compute
    dilated = cube_time_us(Gemm(1, 4 * 57 * 57, 32, 64 * 9, window=9), c, "float16")[0]
    assert cube_time_us(gemm, c, "float16")[0] == dilated
    assert dilated > 3.5 * cube_time_us(Gemm(1, 4 * 28 * 28, 32, 64 * 9, window=9), c,
                                        "float16")[0]


def test_a_1x1_transposed_convolution_is_a_gemm_over_its_input_positions() -> None:
    gemm = _transposed(64, 32, 1, 2)  # the kernel-size-1 pattern: no zero filling
    assert (gemm.m, gemm.n, gemm.k, gemm.useful_m) == (4 * 28 * 28, 32, 64, 0)


@pytest.mark.requires_products("atlas_a2")
def test_a_strided_convolutions_input_gradient_is_the_same_kernel_as_a_transposed_conv() -> None:
    from geplug.device.cost import input_gradient

    c = require_product("atlas_a2").compute
    # forward: 3x3 stride-2 convolution 128 -> 256, 32 x 57 x 57 -> 32 x 28 x 28; its input
    # gradient is Conv2DBackpropInput over dy zero-filled by the stride: the same kernel
    # and shape as a 3x3 stride-2 ConvTranspose 256 -> 128 on 32 x 28 x 28
    forward = Gemm(batch=1, m=32 * 28 * 28, n=256, k=128 * 9, window=9)
    dgrad = input_gradient(forward, input_positions=32 * 57 * 57)
    up = _transposed(256, 128, 3, 2, hw=28, batch=32)
    assert (dgrad.m, dgrad.n, dgrad.k) == (up.m, up.n, up.k) == (32 * 57 * 57, 128, 256 * 9)
    assert dgrad.flops == up.flops == forward.flops
    assert cube_time_us(dgrad, c, "float16") == cube_time_us(up, c, "float16")
    # a 1x1 strided kernel takes the kernel-size-1 pattern: dy's positions only
    one = input_gradient(Gemm(batch=1, m=32 * 28 * 28, n=256, k=128, window=1),
                         input_positions=32 * 56 * 56)
    assert (one.m, one.useful_m) == (32 * 28 * 28, 0)
