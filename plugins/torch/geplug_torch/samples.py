"""The torch backend's sample models (``Runtime.sample_models``): built in code, seeded.

One multi-layer perceptron (MatMulV2 + bias + activation, LayerNorm, the matmul+bias and
elementwise fusions) and one small convolutional network (Conv2D, BatchNorm, pooling). The
modules are made once per process so the backend's export cache serves every product.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from geplug.backend import SampleModel

__all__ = ["sample_models"]

_made: list[SampleModel] = []
_lock = threading.Lock()


def _build() -> list[SampleModel]:
    import torch
    from torch import nn

    from geplug_torch.static import TorchModel

    gen = torch.Generator().manual_seed(0)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        mlp = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 4))
        cnn = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5))
    x = torch.randn(4, 16, generator=gen).numpy()
    img = torch.randn(2, 3, 8, 8, generator=gen).numpy()
    return [
        SampleModel(name="torch_mlp", model=TorchModel(module=mlp, inputs={"x": x},
                                                       outputs=("y",), name="torch_mlp"),
                    inputs={"x": x}, description="Linear-GELU-LayerNorm-Linear, batch 4"),
        SampleModel(name="torch_cnn", model=TorchModel(module=cnn, inputs={"image": img},
                                                       outputs=("logits",), name="torch_cnn"),
                    inputs={"image": np.asarray(img)},
                    description="Conv2d-BatchNorm-ReLU-pool-Linear on 2x3x8x8"),
    ]


def sample_models() -> list[Any]:
    """The sample models (made on first use)."""
    with _lock:
        if not _made:
            _made.extend(_build())
        return list(_made)
