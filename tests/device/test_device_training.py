"""A training step derived from the forward device model (geplug.device.training)."""

from __future__ import annotations

import pytest

from geplug.device import Graph, Node, Tensor, build_device_model, optimize
from geplug.device.training import OPTIMIZER_BYTES, training_step
from geplug.errors import CompileError
from geplug.testing.plugin import require_product


def _mlp() -> Graph:
    """x @ w1 -> relu -> @ w2: two matrix tasks and an elementwise one."""
    t = {n: Tensor(name=n, dtype="float16", shape=s, kind=k) for n, s, k in (  # type: ignore[arg-type]
        ("x", (512, 1024), "input"), ("w1", (1024, 1024), "weight"), ("h", (512, 1024),
                                                                        "activation"),
        ("r", (512, 1024), "activation"), ("w2", (1024, 256), "weight"),
        ("y", (512, 256), "activation"))}
    nodes = [Node(name="mm1", op_type="MatMulV2", inputs=("x", "w1"), outputs=("h",)),
             Node(name="relu", op_type="Relu", inputs=("h",), outputs=("r",)),
             Node(name="mm2", op_type="MatMulV2", inputs=("r", "w2"), outputs=("y",))]
    return Graph(name="mlp", nodes=nodes, tensors=t, inputs=("x",), outputs=("y",))


def _model():  # type: ignore[no-untyped-def]
    product = require_product("atlas_a2")
    return build_device_model(optimize(_mlp(), product.graph), product, fusion=False), product


@pytest.mark.requires_products("atlas_a2")
def test_backward_gemms_carry_twice_the_forward_flops_except_the_inputs_gradient() -> None:
    model, product = _model()
    step = training_step(model, product)
    fwd = sum(t.flops for t in step.tasks if t.phase == "forward" and t.op_type == "MatMulV2")
    bwd = sum(t.flops for t in step.tasks if t.phase == "backward" and t.op_type == "MatMulV2")
    mm1 = 2.0 * 512 * 1024 * 1024
    assert fwd == pytest.approx(model.cube_flops)
    assert bwd == pytest.approx(2 * model.cube_flops - mm1)  # no gradient for the data
    assert [t.name for t in step.tasks if t.phase == "backward"][:2] == ["mm2_dgrad",
                                                                         "mm2_wgrad"]


@pytest.mark.requires_products("atlas_a2")
def test_optimizer_updates_move_the_declared_bytes_per_parameter() -> None:
    model, product = _model()
    step = training_step(model, product, optimizer="adam", mixed_precision=False)
    updates = [t for t in step.tasks if t.phase == "optimizer"]
    assert sorted(t.name for t in updates) == ["w1_apply", "w2_apply"]
    assert sum(t.bytes_moved for t in updates) == OPTIMIZER_BYTES["adam"] * (1024 * 1024
                                                                             + 1024 * 256)
    assert step.step_us == pytest.approx(step.forward_us + step.backward_us
                                         + step.optimizer_us)


@pytest.mark.requires_products("atlas_a2")
def test_an_unknown_optimizer_is_a_compile_error_naming_the_choices() -> None:
    model, product = _model()
    with pytest.raises(CompileError, match="'rmsprop' is not one of"):
        training_step(model, product, optimizer="rmsprop")


@pytest.mark.requires_products("atlas_a2")
def test_a_depthwise_convolutions_input_gradient_merges_its_groups_as_the_forward() -> None:
    """Conv2DBackpropInput of a grouped convolution is a grouped convolution of dy with the
    rotated kernel, its groups merged by the same rule (CANN util_deconv_comm)."""
    from geplug.device import Graph, Node, Tensor, build_device_model, optimize
    from geplug.device.training import training_step

    product = require_product("atlas_a2")
    ts = {"x": Tensor(name="x", dtype="float16", shape=(32, 192, 28, 28), kind="input"),
          "a": Tensor(name="a", dtype="float16", shape=(32, 192, 28, 28)),
          "w": Tensor(name="w", dtype="float16", shape=(192, 1, 3, 3), kind="weight"),
          "y": Tensor(name="y", dtype="float16", shape=(32, 192, 28, 28))}
    g = Graph(name="dw", nodes=[
        Node(name="relu", op_type="Relu", inputs=("x",), outputs=("a",)),
        Node(name="dw", op_type="Conv2D", inputs=("a", "w"), outputs=("y",),
             attrs={"group": 192, "kernel_shape": [3, 3]})],
        tensors=ts, inputs=("x",), outputs=("y",))
    fwd = build_device_model(optimize(g, product.graph), product, check_memory=False,
                             fusion=False)
    step = training_step(fwd, product)
    forward = next(t for t in step.tasks if t.phase == "forward" and t.op_type == "Conv2D")
    dgrad = next(t for t in step.tasks if t.name.endswith("_dgrad"))
    assert dgrad.flops == forward.flops
    # merged: the same cube work as the forward (unmerged, each channel's N = 9 and K = 1
    # padded to 16 x 16 took ~6x the forward's time)
    assert dgrad.duration_us == pytest.approx(forward.duration_us, rel=0.1)
