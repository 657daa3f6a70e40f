"""Training a convolutional network through torch.compile: the convolution kernels and their
gradients are timed on the cube by their own shapes (issue 10, device model)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import geplug_torch  # noqa: E402

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")

KEEP = {"precision_mode": "must_keep_origin_dtype"}
N, H = 4, 14


class _Net(torch.nn.Module):
    """A plain, a depthwise and a transposed convolution (kernel 3, stride 2: its kernel
    window is not its stride squared, so a weight read as (C_out, C_in) shows)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.dw = torch.nn.Conv2d(32, 32, 3, padding=1, groups=32, bias=False)
        self.up = torch.nn.ConvTranspose2d(32, 8, 3, stride=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.up(self.dw(torch.relu(self.conv(x))))


def _macs(cin: int, cout: int, window: int, groups: int, positions: int) -> int:
    """Multiply-adds of a convolution counted independently: every output position of every
    output channel sums cin/groups x window products (for a transposed convolution, every
    input position scatters into cout x window outputs: the same count by input positions)."""
    return positions * cout * (cin // groups) * window


@pytest.fixture
def trained():
    be = geplug_torch.backend(product="atlas_a2", config=KEEP)
    net = _Net()
    compiled = torch.compile(net, backend=be)
    compiled(torch.randn(N, 16, H, H)).sum().backward()
    (model,) = be.models
    yield be, model
    be.shutdown()


def _cube(graph, op_type: str) -> list[float]:
    return sorted(p.cost.cube_flops for p in graph.device.tasks if p.task.op_type == op_type)


def test_convolution_gradients_are_cube_kernels_with_the_forwards_work(trained):
    be, model = trained
    bw = model.graphs["backward"]
    plain = 2 * _macs(16, 32, 9, 1, N * H * H)
    depthwise = 2 * _macs(32, 32, 9, 32, N * H * H)
    up = 2 * _macs(32, 8, 9, 1, N * H * H)  # by the transposed convolution's input positions
    # the weight gradient of every convolution; the input gradient of all but the first
    # (its input is the data), the transposed one's a plain Conv2D of its output gradient
    assert _cube(bw, "Conv2DBackpropFilter") == sorted([plain, depthwise, up])
    assert _cube(bw, "Conv2DBackpropInput") == [depthwise]
    assert _cube(bw, "Conv2D") == [up]
    assert {p.task.op_type for p in bw.device.tasks} >= {"BiasAddGrad", "ReluGrad"}
    decided = {d.op_type: d.op_class for d in be.decisions()}
    assert decided["Conv2DBackpropFilter"] == decided["Conv2DBackpropInput"] == "matrix"
    names = {op.record.name for op in bw.ops}
    assert {"gradients/convolution_backward_filter",
            "gradients/convolution_backward_bias"} <= names


def test_a_transposed_convolution_reads_its_weight_as_c_in_c_out(trained):
    _be, model = trained
    fw = model.graphs["forward"]
    assert _cube(fw, "Conv2DTranspose") == [2 * _macs(32, 8, 9, 1, N * H * H)]


def test_a_weight_gradient_is_timed_as_the_core_times_it_with_its_k_split():
    from geplug.device.cost import Gemm, cube_time_us, split_k, weight_gradient
    from geplug.testing.plugin import require_product

    compute = require_product("atlas_a2").compute
    # a 1x1 conv 64 -> 64 over 8 x 56 x 56 positions: dW is 64 x 64 (16 cube tiles for 24
    # cores), K = 25,088: the idle cores take parts of K
    forward = Gemm(batch=1, m=8 * 56 * 56, n=64, k=64, window=1)
    wg = weight_gradient(forward)
    assert wg.flops == forward.flops and wg.k == forward.m
    parts = split_k(wg, compute)
    assert parts.batch > 1 and parts.k * parts.batch >= wg.k
    unsplit = cube_time_us(Gemm(1, wg.m, wg.n, wg.k), compute, "float16")[0]
    assert cube_time_us(wg, compute, "float16")[0] == cube_time_us(parts, compute,
                                                                  "float16")[0] < unsplit
    # a 3x3 conv's dW (576 x 64: 144 tiles) already fills the cores: the split would only
    # add pipeline fills, and the tiling keeps the whole K
    wide = weight_gradient(Gemm(batch=1, m=8 * 56 * 56, n=64, k=64 * 9, window=9))
    assert cube_time_us(wide, compute, "float16")[0] == cube_time_us(
        Gemm(1, wide.m, wide.n, wide.k), compute, "float16")[0]


def test_a_torch_gradient_kernel_costs_what_the_derived_training_step_costs(trained):
    from geplug.device.cost import Gemm, cube_time_us, input_gradient, weight_gradient

    be, model = trained
    compute = be.system.product.compute
    bw = model.graphs["backward"].device.tasks
    # the depthwise convolution (32 channels, 3x3, groups 32) as the forward GEMM the
    # core builds for it; training_step derives its gradients from this GEMM
    forward = Gemm(batch=32, m=N * H * H, n=1, k=9, window=9)
    want_dx = cube_time_us(input_gradient(forward), compute, "float32")[0]
    want_dw = cube_time_us(weight_gradient(forward), compute, "float32")[0]
    (dx,) = [p for p in bw if p.task.op_type == "Conv2DBackpropInput"]
    dws = [p for p in bw if p.task.op_type == "Conv2DBackpropFilter"
           and p.cost.cube_flops == forward.flops]
    assert dx.cost.cube_flops == forward.flops
    assert dx.cost.compute_us == pytest.approx(want_dx)
    assert len(dws) == 1 and dws[0].cost.compute_us == pytest.approx(want_dw)
    # the transposed convolution (32 -> 8, 3x3, stride 2; ungrouped): its input gradient, a
    # Conv2D of the output gradient, costs what input_gradient of its forward GEMM costs
    up = Gemm(batch=1, m=N * 29 * 29, n=8, k=32 * 9, window=9, useful_m=N * H * H)
    (dx_up,) = [p for p in bw if p.task.op_type == "Conv2D"]
    assert dx_up.cost.compute_us == pytest.approx(
        cube_time_us(input_gradient(up), compute, "float32")[0])


def test_the_profiler_shows_one_framework_op_per_convolution_backward_call(tmp_path):
    import json

    from geplug_torch import profiler as P

    be = geplug_torch.backend(product="atlas_a2", config=KEEP)
    net = _Net()
    compiled = torch.compile(net, backend=be)
    with P.profile(activities=[P.ProfilerActivity.CPU, P.ProfilerActivity.NPU],
                   schedule=P.schedule(wait=0, warmup=0, active=1, repeat=1),
                   on_trace_ready=P.tensorboard_trace_handler(str(tmp_path), "w"),
                   record_shapes=True) as prof:
        compiled(torch.randn(N, 16, H, H)).sum().backward()
        prof.step()
    be.shutdown()
    (root,) = prof.outputs
    with open(f"{root}/ASCEND_PROFILER_OUTPUT/trace_view.json", encoding="utf-8") as fh:
        events = json.load(fh)
    calls = [e for e in events if e.get("name") == "aten::convolution_backward"
             and e.get("cat") == "cpu_op"]
    # three convolutions: three calls, although they run seven kernels (2 + 2 + 3: the first
    # computes no input gradient, the depthwise one has no bias)
    assert len(calls) == 3
    # each shows the call's own arguments: grad_output, input, weight
    assert all(len(e["args"]["Input Dims"]) == 3 for e in calls)
    kernels = [e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith(
        "gradients/convolution_backward")]
    assert len(kernels) == 7
