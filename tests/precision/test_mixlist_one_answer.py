"""One answer for an op's mixlist state, whichever path asks (issue 9: ``black`` vs ``grey``).

A modify_mixlist file that removes a black-list op from the *white* list changes nothing
(options.md §5.5: to-remove moves an op off the list it is on). The resolved configuration,
the precision decision at compile and the Python API's ``load_modify_mixlist`` +
``list_state`` must all say so.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from geplug.config import resolve
from geplug.config.model import SessionConfig
from geplug.precision import NodeInfo, decide, list_state, load_modify_mixlist
from geplug.testing.plugin import require_product

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")

EDITS = {"white-list": {"to-remove": ["Exp"], "to-add": ["SoftmaxV2"]},
         "black-list": {"to-remove": ["Log"], "to-add": ["MatMulV2"]}}
EXPECTED = {"Exp": "black", "SoftmaxV2": "white", "Log": "grey", "MatMulV2": "black"}
"""Exp, Log and SoftmaxV2 are built-in black, MatMulV2 white, on atlas_a2."""


@pytest.fixture
def mixlist(tmp_path: Path) -> str:
    path = tmp_path / "mixlist.json"
    path.write_text(json.dumps(EDITS), encoding="utf-8")
    return str(path)


def _resolved(path: str):  # type: ignore[no-untyped-def]
    product = require_product("atlas_a2")
    cfg = SessionConfig.from_mapping({"precision_mode": "allow_mix_precision",
                                      "modify_mixlist": path})
    return product, resolve(cfg, product, env={})


def test_resolve_carries_the_final_list_of_every_named_op(mixlist: str) -> None:
    _, resolved = _resolved(mixlist)
    named = {"white": True, "black": False, "grey": None}
    assert dict(resolved.mixlist_overrides) == {op: named[s] for op, s in EXPECTED.items()}


def test_the_compile_decision_and_the_python_api_give_the_same_list(mixlist: str) -> None:
    product, resolved = _resolved(mixlist)
    nodes = [NodeInfo(name=op.lower(), onnx_op=op, op_type=op, original_dtype="float32")
             for op in EXPECTED]
    decided = {d.op_type: d.mix_list for d in decide(nodes, product, resolved)}
    edits = load_modify_mixlist(mixlist)
    api = {op: list_state(op, product.op(op).precision_reduce, edits) for op in EXPECTED}
    assert decided == api == EXPECTED
