"""``check(config, product)``: every rule of options.md (§3-11, policy §12), all problems at once.

The rules live in :mod:`geplug.config.rules`, one module per option group; product rules read
the declaration (``geplug/products/schema.py``), never a product's name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from geplug.config.model import SessionConfig
from geplug.config.problems import Problem
from geplug.config.rules import RULES, Ctx
from geplug.products.schema import Product

__all__ = ["check"]


def check(
    config: SessionConfig,
    product: Product,
    *,
    env: Mapping[str, str] | None = None,
    for_initialize_system: bool = False,
    cwd: str | None = None,
    soc: str | None = None,
) -> list[Problem]:
    """Every problem of ``config`` on ``product``, errors and warnings, each once.

    ``env``: the environment the run will see (default ``os.environ``; NPU_COLLECT_PATH,
    RANK_TABLE_FILE... change the rules). ``for_initialize_system``: also check that the
    product supports ``initialize_system`` (options.md §15.1, R28). ``cwd``: the directory
    relative paths are resolved against (default the current one). ``soc``: the SoC string
    the product was named by (``--product Ascend910B3``); a config soc_version naming another
    SoC is then a warning naming both.
    """
    ctx = Ctx(config, product, os.environ if env is None else env,
              os.getcwd() if cwd is None else cwd, for_initialize_system=for_initialize_system,
              soc=soc)
    for _, rule in RULES:
        rule(ctx)
    return ctx.out
