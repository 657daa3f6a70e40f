"""Session options on every installed product (runs in every tox env that has a product)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from geplug.cli.main import main
from geplug.config import SessionConfig, export, read_export
from geplug.config.export import export_values

TYPICAL = {
    "enable_dump": True, "dump_path": "/tmp", "dump_step": "0|5-9", "dump_mode": "all",
    "precision_mode": "allow_fp32_to_fp16", "op_debug_level": 3, "debug_dir": "/tmp/dbg",
    "enable_exception_dump": 1, "op_select_implmode": "high_precision",
    "optypelist_for_implmode": "Pooling",
}


@pytest.mark.parametrize(("to", "front_end"), [("ge", "ge"), ("tf", "tf"), ("atc", "atc"),
                                               ("torch_npu", "torch")])
def test_export_reads_back_on_every_product(geplug_product: Any, to: str, front_end: str) -> None:
    config = SessionConfig.from_mapping(TYPICAL)
    values, _ = export_values(config, geplug_product, to)
    assert read_export(export(config, geplug_product, to), to) == SessionConfig(front_end=front_end,
                                                                         **values)


def test_all_products_matrix_has_one_object_per_product(geplug_product: Any, tmp_path: Path,
                                                        capsys: Any) -> None:
    path = tmp_path / "s.toml"
    path.write_text('dump_mode = "all"\n')
    assert main(["check", str(path), "--all-products", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert geplug_product.name in [o["product"] for o in data["products"]]
    assert all(set(o) >= {"product", "problems"} for o in data["products"])
