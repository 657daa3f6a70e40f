"""Implementation-mode choice (seed op_select_implmode sentences) and mixed-precision lists."""

from __future__ import annotations

from geplug.config.model import SessionConfig
from geplug.config.resolved import ResolvedConfig
from geplug.precision import NodeInfo, choose_impl_mode, decide, list_state
from geplug.products.schema import OpSupport
from geplug.testing.plugin import require_product

TWO = OpSupport(op_type="SoftmaxV2", op_class="vector", aicore_dtypes=["float16"],
                aicpu_dtypes=[], impl_modes=["high_precision", "high_performance"])


def cfg(**kw: object) -> ResolvedConfig:
    return ResolvedConfig(product="p", config=SessionConfig(), **kw)  # type: ignore[arg-type]


def a2():  # type: ignore[no-untyped-def]
    """The Atlas A2 declaration (the test is skipped where it is not installed)."""
    return require_product("atlas_a2")


def resolved(**options: object) -> ResolvedConfig:
    from geplug.config import resolve

    return resolve(SessionConfig(**options), a2())  # type: ignore[arg-type]


def test_users_choose_between_high_precision_and_high_performance():
    """NPU内置算子有高精度和高性能实现方式，用户可以通过该参数配置模型编译时选择哪种算子。"""
    assert choose_impl_mode("n", TWO, cfg(impl_default="high_precision"))[0] == "high_precision"
    assert choose_impl_mode("n", TWO, cfg(impl_default="high_performance"))[0] == \
        "high_performance"


def test_default_is_high_performance():
    """默认为high_performance。"""
    assert choose_impl_mode("n", TWO, cfg())[0] == "high_performance"
    assert choose_impl_mode("n", a2().op("SoftmaxV2"), resolved())[0] == "high_performance"


def test_high_precision_applies_to_the_builtin_list():
    """high_precision：表示算子选择高精度实现。(the built-in high_precision list of the product)"""
    config = resolved(op_select_implmode="high_precision")
    product = a2()
    for op_type in product.implmode.builtin_lists["high_precision"]:
        assert choose_impl_mode("n", product.op(op_type), config)[0] == "high_precision"


def test_optypelist_applies_the_mode_to_listed_ops_only():
    """列举算子optype的列表，该列表中的算子使用op_select_implmode参数指定的模式，当前支持的算子为
    Pooling、SoftmaxV2、LRN、ROIAlign，多个算子以英文逗号分隔。"""
    config = resolved(op_select_implmode="high_precision", optypelist_for_implmode="Pooling")
    product = a2()
    assert choose_impl_mode("n", product.op("Pooling"), config)[0] == "high_precision"
    assert choose_impl_mode("n", product.op("SoftmaxV2"), config)[0] == "high_performance"
    assert set(product.implmode.optypelist_allowed) == {"Pooling", "SoftmaxV2", "LRN", "ROIAlign"}


def test_optypelist_needs_op_select_implmode():
    """该参数需要与op_select_implmode参数配合使用。"""
    from geplug.config import check

    problems = check(SessionConfig(optypelist_for_implmode="Pooling"), a2())
    assert any(p.option == "optypelist_for_implmode" and p.severity == "error"
               for p in problems)


def test_optypelist_default_empty_means_off():
    """默认值为空，代表不使能此配置。"""
    assert resolved(op_select_implmode="high_precision").config.optypelist_for_implmode in (
        None, "")


def test_node_list_beats_op_type_list():
    config = cfg(impl_by_op_type={"SoftmaxV2": "high_performance"},
                 impl_by_node={"sm": "high_precision"})
    assert choose_impl_mode("sm", TWO, config)[0] == "high_precision"
    assert choose_impl_mode("other", TWO, config)[0] == "high_performance"


def test_an_op_with_one_mode_always_runs_it():
    one = OpSupport(op_type="X", op_class="vector", aicore_dtypes=["float16"], aicpu_dtypes=[],
                    impl_modes=["high_precision"])
    assert choose_impl_mode("n", one, cfg(impl_default="high_performance"))[0] == \
        "high_precision"


def test_a_mode_the_op_lacks_falls_back():
    mode, reason = choose_impl_mode("n", TWO, cfg(impl_by_node={"n": "keep_fp16"}))
    assert mode == "high_performance" and "keep_fp16" in reason


def test_mixlist_edits_move_ops_between_lists():
    edits = {"black-list": {"to-remove": ["Exp"]}, "white-list": {"to-add": ["Relu"]}}
    assert list_state("Exp", False, edits) == "grey"
    assert list_state("Relu", None, edits) == "white"
    assert list_state("MatMulV2", True, {"MatMulV2": False}) == "black"


def test_decide_uses_the_resolved_mixlist_overrides_and_grey_follows_previous():
    product = a2()
    nodes = [NodeInfo(name="mm", onnx_op="MatMul", op_type="MatMulV2", original_dtype="float32"),
             NodeInfo(name="relu", onnx_op="Relu", op_type="Relu", original_dtype="float32",
                      predecessors=["mm"])]
    config = ResolvedConfig(product="atlas_a2",
                            config=SessionConfig(precision_mode="allow_mix_precision"))
    lowered = decide(nodes, product, config)
    assert [d.dtype for d in lowered] == ["float16", "float16"]
    assert lowered[1].mix_list == "grey"
    kept = decide(nodes, product, config, mixlist_overrides={"MatMulV2": False})
    assert [d.dtype for d in kept] == ["float32", "float32"]
