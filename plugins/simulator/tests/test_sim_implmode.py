"""Implementation modes end to end: op_select_implmode (all four values), optypelist_for_implmode
and op_precision_mode ini files reach the compiled model's decisions and its numbers."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from sim_helpers import f32, graph_model

import geplug

pytestmark = [
    pytest.mark.geplug_requires_products("atlas_a2"),
    # these tests use op_select_implmode / optypelist_for_implmode on purpose: the check's
    # deprecation warnings (ConfigWarning) are expected, not the behaviour under test
    pytest.mark.filterwarnings("ignore::geplug.errors.ConfigWarning"),
]


def _model() -> object:
    nodes = [helper.make_node("Softmax", ["x"], ["s1"], name="sm1", axis=-1),
             helper.make_node("Softmax", ["s1"], ["s2"], name="sm2", axis=-1),
             helper.make_node("Tanh", ["s2"], ["y"], name="tanh")]
    return graph_model(nodes, [f32("x", [8, 64])], [f32("y", [8, 64])])


def _impl_modes(options: dict[str, object]) -> dict[str, str]:
    config = {"precision_mode_v2": "fp16", **options}
    with geplug.initialize_system(product="atlas_a2", config=config) as system:
        return {d.node: d.impl_mode for d in system.compile(_model()).decisions}


def test_by_node_name_beats_by_op_type_in_an_op_precision_mode_ini(tmp_path):
    """options.md §9.3: node-name entries beat op-type entries; the ini wins over
    op_select_implmode."""
    ini = tmp_path / "net.ini"
    ini.write_text("[ByOpType]\nSoftmaxV2=high_precision\n[ByNodeName]\nsm2=high_performance\n")
    modes = _impl_modes({"op_precision_mode": str(ini),
                         "op_select_implmode": "high_performance_for_all"})
    assert modes == {"sm1": "high_precision", "sm2": "high_performance",
                     "tanh": "high_performance"}


@pytest.mark.parametrize(("value", "softmax", "tanh"), [
    ("high_precision", "high_precision", "high_performance"),  # Tanh is not on the list
    ("high_performance", "high_performance", "high_performance"),
    ("high_precision_for_all", "high_precision", "high_precision"),
    ("high_performance_for_all", "high_performance", "high_performance"),
])
def test_each_op_select_implmode_value_applies_its_builtin_list(value, softmax, tanh):
    """options.md §9.1: high_precision / high_performance act only on the ops of their
    built-in ini; the *_for_all lists reach further (the product's builtin_lists)."""
    modes = _impl_modes({"op_select_implmode": value})
    assert modes == {"sm1": softmax, "sm2": softmax, "tanh": tanh}


def test_optypelist_limits_the_mode_to_the_listed_op_types():
    """该列表中的算子使用op_select_implmode参数指定的模式 (options.md §9.2)."""
    modes = _impl_modes({"op_select_implmode": "high_precision",
                         "optypelist_for_implmode": "LRN"})
    assert modes["sm1"] == "high_performance"


def test_high_performance_keeps_network_accuracy_for_float16_inputs():
    """high_performance：表示算子选择高性能实现。高性能实现算子是指在fp16输入的情况下，不影响网络精度
    前提的最优性能实现。 The float16-accumulating softmax differs from the careful one but
    stays within float16 accuracy of the exact result."""
    x = np.random.default_rng(7).standard_normal((8, 64)).astype(np.float32)
    model = graph_model([helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=-1)],
                        [f32("x", [8, 64])], [f32("y", [8, 64])])
    outs = {}
    for mode in ("high_precision", "high_performance"):
        config = {"precision_mode_v2": "fp16", "op_select_implmode": mode}
        with geplug.initialize_system(product="atlas_a2", config=config) as system:
            outs[mode] = system.compile(model).run({"x": x})["y"].astype(np.float64)
    x16 = x.astype(np.float16).astype(np.float64)
    e = np.exp(x16 - x16.max(axis=-1, keepdims=True))
    exact = e / e.sum(axis=-1, keepdims=True)
    assert not np.array_equal(outs["high_performance"], outs["high_precision"])
    assert np.max(np.abs(outs["high_performance"] - exact) / exact) < 2.0**-7


def test_ini_names_matching_no_compiled_op_are_warned_at_shutdown(tmp_path):
    """The real stack ignores unmatched lines silently; geplug warns with a did-you-mean."""
    from geplug.precision.unmatched import UnmatchedNameWarning

    ini = tmp_path / "net.ini"
    ini.write_text("[ByOpType]\nSoftmax=high_precision\n[ByNodeName]\nnosuchnode=high_precision\n")
    with pytest.warns(UnmatchedNameWarning) as record:
        _impl_modes({"op_precision_mode": str(ini)})
    text = " ".join(str(w.message) for w in record)
    assert "'Softmax' (did you mean 'SoftmaxV2'?)" in text and "'nosuchnode'" in text


def test_mixlist_op_types_matching_no_compiled_op_are_warned(tmp_path):
    import json

    from geplug.precision.unmatched import UnmatchedNameWarning

    mixlist = tmp_path / "mix.json"
    mixlist.write_text(json.dumps({"black-list": {"to-add": ["Softmax"]}}))
    with pytest.warns(UnmatchedNameWarning, match="did you mean 'SoftmaxV2'"):
        _impl_modes({"precision_mode_v2": "mixed_float16", "modify_mixlist": str(mixlist)})
