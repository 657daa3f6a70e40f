"""The compile builds the device model while onnxruntime creates the session (on a worker
thread, 2+ cores) and pauses the cyclic garbage collector: results, errors and their order
are those of the sequential compile, and nothing is left running after it."""

from __future__ import annotations

import gc
import threading

import onnx
import pytest
from geplug_simulator import netbuild as nb
from geplug_simulator import runtime as rt
from onnx import TensorProto, helper
from sim_helpers import any_product, make_system, overflow_model

import geplug
from geplug.device import DeviceMemoryError
from geplug.errors import CompileError


def _with_unrunnable_erf(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` plus a float64 Erf branch, which onnxruntime's CPU kernels refuse."""
    g = model.graph
    g.input.append(helper.make_tensor_value_info("z", TensorProto.DOUBLE, [2, 2]))
    g.node.append(helper.make_node("Erf", ["z"], ["zz"], name="bad_erf"))
    g.output.append(helper.make_tensor_value_info("zz", TensorProto.DOUBLE, [2, 2]))
    return model


def _session_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "geplug-sim-session"]


@pytest.mark.requires_products("atlas_a2")
@pytest.mark.parametrize("overlap", [True, False])
def test_onnxruntime_refusal_surfaces_before_the_memory_error(monkeypatch, overlap) -> None:
    monkeypatch.setattr(rt, "OVERLAP", overlap)
    with geplug.initialize_system(product="atlas_a2",
                                  config={"soc_version": "Ascend910B4"}) as system:
        # over the 32 GiB HBM and unrunnable: the sequential compile names the node first
        with pytest.raises(CompileError) as info:
            system.compile(_with_unrunnable_erf(nb.mlp(batch=1 << 23, width=1024)))
        assert not isinstance(info.value, DeviceMemoryError)
        assert info.value.node == "bad_erf"
        assert info.value.__suppress_context__  # raised as the session raised it
        with pytest.raises(DeviceMemoryError):  # the memory error alone still surfaces
            system.compile(nb.mlp(batch=1 << 23, width=1024))
    assert not _session_threads()


@pytest.mark.requires_products("atlas_a2")
def test_the_overlapped_compile_equals_the_sequential_one(monkeypatch) -> None:
    model = nb.bert(layers=1, hidden=128, heads=4, seq=32, batch=2)
    got = {}
    with geplug.initialize_system(product="atlas_a2") as system:
        for overlap in (False, True):
            monkeypatch.setattr(rt, "OVERLAP", overlap)
            device = system.compile(model).device
            got[overlap] = (device.tasks, device.schedule, device.memory,
                            device.memory.blocks)
    assert got[True] == got[False]


def test_a_compile_leaves_no_worker_and_the_collector_as_it_found_it(monkeypatch) -> None:
    monkeypatch.setattr(rt, "OVERLAP", True)
    system = make_system(any_product())
    assert gc.isenabled()
    system.compile(overflow_model())
    with pytest.raises(CompileError):
        system.compile(_with_unrunnable_erf(overflow_model()))
    assert gc.isenabled() and not _session_threads()
    gc.disable()
    try:
        system.compile(overflow_model())
        assert not gc.isenabled()  # a caller's own choice stays
    finally:
        gc.enable()
