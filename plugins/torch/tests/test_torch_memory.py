"""A training job's device memory across its graphs (geplug_torch.memory): parameters,
gradients, optimizer states and saved activations beside each graph's own plan, checked
against the SoC's usable memory where the real card would fail to allocate."""

from __future__ import annotations

import pickle

import attrs
import pytest

torch = pytest.importorskip("torch")

import geplug_torch  # noqa: E402

from geplug.testing import require_product  # noqa: E402

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")

KEEP = {"precision_mode": "must_keep_origin_dtype", "soc_version": "Ascend910B1"}
WIDTH = 1024
PARAMS = 2 * (WIDTH * WIDTH + WIDTH) * 4  # two float32 Linear layers


def _a2_with_usable(mib: float):
    """atlas_a2 whose Ascend910B1 can allocate ``mib`` MiB (a small card, so a test model
    can fill it)."""
    product = require_product("atlas_a2")
    return attrs.evolve(product, memory=attrs.evolve(
        product.memory, usable_gib={**product.memory.usable_gib, "Ascend910B1": mib / 1024}))


def _mlp() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(),
                               torch.nn.Linear(WIDTH, WIDTH))


def _train(backend, optimizer_cls, steps: int, **opt_args
           ) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    model = _mlp()
    compiled = torch.compile(model, backend=backend)
    opt = optimizer_cls(model.parameters(), lr=1e-3, **opt_args)
    x = torch.randn(16, WIDTH)
    for _ in range(steps):
        compiled(x).square().mean().backward()
        opt.step()
        opt.zero_grad()
    return model, opt


def test_the_peak_counts_parameters_adam_states_and_the_backward_graph() -> None:
    with geplug_torch.backend(product="atlas_a2", config=KEEP) as npu:
        model, opt = _train(npu, torch.optim.Adam, 3)
        peak = npu.report()["memory"]["peak"]
        backward = npu.models[0].graphs["backward"].device.memory
        assert sum(p.numel() * 4 for p in model.parameters()) == PARAMS
        # the second backward: parameters, Adam's two moments (the first step made them;
        # zero_grad freed the gradients) and the backward's own plan (it writes them)
        assert peak["where"] == "graph_1 backward" and peak["iteration"] >= 1
        assert peak["parameters_bytes"] == PARAMS
        assert peak["optimizer_state_bytes"] == 2 * PARAMS
        assert peak["gradients_bytes"] == 0
        # the backward's plan holds its inputs, among them the second layer's transposed
        # weight saved for the input gradient (a view of a parameter) and the ReLU's output
        # saved twice (itself and its detached alias): each memory counted once
        assert peak["graph_bytes"] == (backward.activation_peak_bytes + backward.workspace_bytes
                                       - 4 * WIDTH * WIDTH - 16 * WIDTH * 4)
        assert npu.max_memory_allocated() == peak["total_bytes"] == 3 * PARAMS + peak[
            "graph_bytes"]
        # between steps: the parameters and the states (gradients freed by zero_grad);
        # an optimizer let go frees its states
        assert npu.memory_allocated() == 3 * PARAMS
        del opt
        assert npu.memory_allocated() == PARAMS


def test_sgd_momentum_holds_one_state_per_parameter_plain_sgd_none() -> None:
    with geplug_torch.backend(product="atlas_a2", config=KEEP) as npu:
        _train(npu, torch.optim.SGD, 2, momentum=0.9)
        assert npu.report()["memory"]["peak"]["optimizer_state_bytes"] == PARAMS
    torch._dynamo.reset()
    with geplug_torch.backend(product="atlas_a2", config=KEEP) as npu:
        _train(npu, torch.optim.SGD, 2)
        assert npu.report()["memory"]["peak"]["optimizer_state_bytes"] == 0


def test_adam_that_does_not_fit_fails_where_the_card_would_and_sgd_fits() -> None:
    """The same model and batch on a card of 45 MiB: SGD trains; Adam's states (2x the
    parameters) leave room for the second step's forward graph, not for its backward (the
    larger plan: it writes the gradients)."""
    small = _a2_with_usable(45)
    with geplug_torch.backend(product=small, config=KEEP) as npu:
        _train(npu, torch.optim.SGD, 3)
        assert npu.max_memory_allocated() <= 45 << 20
    torch._dynamo.reset()
    npu = geplug_torch.backend(product=small, config=KEEP)
    try:
        with pytest.raises(torch.OutOfMemoryError) as info:
            _train(npu, torch.optim.Adam, 3)
        err = info.value
        assert isinstance(err, geplug_torch.NpuOutOfMemoryError)
        assert err.use.where == "graph_1 backward" and err.use.iteration == 1
        assert err.available_bytes == 45 << 20 < err.required_bytes
        text = str(err)
        assert text.startswith("NPU out of memory. Tried to allocate ")
        assert "0.04 GiB total capacity" in text
        assert f"optimizer states {2 * PARAMS}" in text
        assert f"parameters and buffers {PARAMS}" in text
        assert "207001" in text and "Reduce the batch size" in text
        # the failed request is no peak; the error crosses processes (pickles)
        assert npu.max_memory_allocated() <= 45 << 20
        again = pickle.loads(pickle.dumps(err))
        assert isinstance(again, torch.OutOfMemoryError) and str(again) == text
        assert again.use == err.use
    finally:
        npu.shutdown()  # the job ends cleanly after the error
    assert npu.system.closed


def test_a_graph_too_large_for_the_card_is_an_out_of_memory_error_a_smaller_batch_runs(
        ) -> None:
    """One graph alone over the card is caught as the real stack's OOM (not a compile
    error), so the usual "catch it, halve the batch" loop works."""
    with geplug_torch.backend(product=_a2_with_usable(64), config=KEEP) as npu:
        model, seen = _mlp(), []
        compiled = torch.compile(model, backend=npu)
        for batch in (8192, 4096, 2048, 1024):
            try:
                compiled(torch.randn(batch, WIDTH)).square().mean().backward()
            except torch.OutOfMemoryError:
                seen.append(batch)
                continue
            break
        assert seen and batch not in seen and batch < 8192
        assert npu.max_memory_allocated() <= 64 << 20


def test_a_forwards_outputs_are_held_until_freed_and_counted_once() -> None:
    """What a forward makes and returns (the activations autograd saves for its backward,
    the output) stays on the device until freed; a tensor two graphs share (the output of
    one, saved by the next) counts once; the caller's own batch is not the graph's."""
    import gc

    first, second = _mlp(), torch.nn.Linear(WIDTH, 8)
    act = 64 * WIDTH * 4  # one 64 x 1024 float32 activation
    with geplug_torch.backend(product="atlas_a2", config=KEEP) as npu:
        f1 = torch.compile(first, backend=npu)
        f2 = torch.compile(second, backend=npu)
        x = torch.randn(64, WIDTH)
        assert npu.memory_allocated() == 0
        h = f1(x)
        params = sum(p.numel() * 4 for p in first.parameters())
        # the ReLU's output (its gradient needs it) and h
        assert npu.memory_allocated() == params + 2 * act
        out = f2(h)
        params += sum(p.numel() * 4 for p in second.parameters())
        # graph_2 saves h (held once) and returns its 64 x 8 output
        assert npu.memory_allocated() == params + 2 * act + 64 * 8 * 4
        out.sum().backward()
        # the backwards freed what the forwards saved; the caller still holds h and out
        assert npu.memory_allocated() == 2 * params + act + 64 * 8 * 4
        del h, out
        gc.collect()
        assert npu.memory_allocated() == 2 * params  # parameters and their gradients


def test_two_optimizers_both_count_and_a_buffer_is_state() -> None:
    model = _mlp()
    model.register_buffer("table", torch.zeros(256, WIDTH))  # read by no op, still held
    table = 256 * WIDTH * 4
    with geplug_torch.backend(product="atlas_a2", config=KEEP) as npu:
        compiled = torch.compile(lambda x: model(x) + model.table[:16].sum(), backend=npu)
        o1 = torch.optim.Adam(model[0].parameters())
        o2 = torch.optim.Adam(model[2].parameters())
        for _ in range(2):
            compiled(torch.randn(16, WIDTH)).square().mean().backward()
            o1.step()
            o2.step()
            o1.zero_grad()
            o2.zero_grad()
        assert npu.memory_allocated() == 3 * PARAMS + table


def test_a2_cards_can_allocate_what_torch_npu_reports_not_their_whole_hbm() -> None:
    from geplug.device.memory import capacity_bytes, hbm_bytes

    product = require_product("atlas_a2")
    assert capacity_bytes(product, "Ascend910B2") == int(60.96 * (1 << 30))
    assert hbm_bytes(product, "Ascend910B2") == 64 << 30
    assert capacity_bytes(product, "Ascend910B4") == 32 << 30  # no public figure: whole
