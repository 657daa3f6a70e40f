"""Fuzz: product declarations (``capabilities.toml``): mutated bytes of a valid declaration,
hostile values at its keys, nesting past the limit - read, validated and built into a product
or refused with a :class:`CapabilityError` naming the file."""

from __future__ import annotations

import os

from fuzz_support import count, mutate, scratch, unchanged
from hypothesis import given
from hypothesis import strategies as st

from geplug.errors import CapabilityError
from geplug.products import build_product, read_declaration
from geplug.testing.samples import minimal_toml

_VALID = minimal_toml("fuzz_decl", ("FuzzDeclSoC",)).encode()
_LINES = _VALID.decode().splitlines()
_VALUES = ["inf", "nan", "-1", "4000000000", '""', '"\\u001b[2J"', "[]", "{}", "true",
           "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
           '"' + "x" * 5000 + '"', "1979-05-27", "0.0", "1e308", "[1, \"a\"]"]


@st.composite
def declarations(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["mutate", "value", "deep"]))
    if kind == "mutate":
        return mutate(_VALID, draw)
    if kind == "deep":
        n = draw(st.sampled_from([33, 200, 3000]))
        return _VALID + f"\n[extra]\nx = {'[' * n}{']' * n}\n".encode()
    lines = list(_LINES)
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(lines) - 1))
        if " = " in lines[i]:
            key = lines[i].split(" = ", 1)[0]
            lines[i] = f"{key} = {draw(st.sampled_from(_VALUES))}"
    return "\n".join(lines).encode()


@given(data=declarations())
def test_any_declaration_builds_or_is_refused_naming_the_file(data: bytes) -> None:
    count("capabilities.toml")
    with scratch() as tmp:
        path = os.path.join(tmp, "capabilities.toml")
        with open(path, "wb") as fh:
            fh.write(data)
        with unchanged(tmp):
            try:
                build_product(read_declaration(path))
            except CapabilityError as exc:
                assert "capabilities.toml" in str(exc) or exc.path.endswith(
                    "capabilities.toml")
