"""Empty strings the ATC/GE layer refuses as empty are errors in check, not broken exports."""

from __future__ import annotations

from typing import Any

import pytest
from config_helpers import errors_on, problems_of

from geplug.config.options import OPTIONS

pytestmark = pytest.mark.geplug_requires_products("atlas_a2")


def test_empty_debug_dir_is_an_error(a2: Any) -> None:
    errors = errors_on(problems_of({"debug_dir": ""}, a2), "debug_dir")
    assert [e.code for e in errors] == ["E10004"]


EMPTY_MEANS_OFF = ("optypelist_for_implmode",)
"""Seed: optypelist_for_implmode "默认值为空，代表不使能此配置" (empty, the default, means off)."""


@pytest.mark.parametrize("name", [n for n, s in OPTIONS.items() if s.kind == "str" and s.atc_flag
                                  and n not in EMPTY_MEANS_OFF])
def test_every_empty_atc_string_option_is_an_error(a2: Any, name: str) -> None:
    assert errors_on(problems_of({name: ""}, a2), name)
