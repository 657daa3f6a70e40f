"""geplug-torch serves every installed product (a product-parametrised conformance run).

Until the core's backend conformance suite exists, this checks per product what a backend
must do: compile forward and backward graphs, decide every op within the product's own
operator table, run finite training steps under the product's default precision mode -
and refuse products without initialize_system clearly.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import geplug_torch  # noqa: E402
from torch import nn  # noqa: E402

from geplug.errors import ConfigError  # noqa: E402


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 4))


def test_torch_backend_trains_on_every_product_within_its_operator_table(geplug_product):
    product = geplug_product
    if not product.runtime.initialize_system:
        with pytest.raises(ConfigError, match="initialize_system"):
            geplug_torch.backend(product=product.name)
        return
    be = geplug_torch.backend(product=product.name)
    try:
        model = _mlp()
        compiled = torch.compile(model, backend=be)
        x, y = torch.randn(8, 16), torch.randn(8, 4)
        if product.runtime.training:
            opt = torch.optim.SGD(model.parameters(), lr=1e-2)
            for _ in range(2):
                loss = nn.functional.mse_loss(compiled(x), y)
                loss.backward()
                opt.step()
                opt.zero_grad()
                assert torch.isfinite(loss)
            assert be.runtime.iteration == 2
            assert {"forward", "backward"} <= set(be.models[0].graphs)
        else:
            with torch.no_grad():
                assert torch.isfinite(compiled(x)).all()
        for d in be.decisions():
            op = product.op(d.op_type)
            table = op.aicore_dtypes if d.engine == "AI_CORE" else op.aicpu_dtypes
            assert d.dtype in table or "unchanged" in d.reason, (d.node, d.dtype, d.engine)
    finally:
        be.shutdown()
