"""Rules of the run mode, the target SoC, the environment and initialize_system
(options.md §6, §10, §14, §15; R28, R30). Product facts: ``product.runtime``, ``soc_versions``.
"""

from __future__ import annotations

from geplug.config.defaults import default_soc
from geplug.config.parse_common import choice_hint
from geplug.config.rules.base import Ctx
from geplug.config.text import signed_digits

__all__ = ["check_environment", "check_initialize_system", "check_run_mode", "check_soc"]


def check_run_mode(ctx: Ctx) -> None:
    """graph_run_mode 0 or 1, and 1 only where the product trains (``runtime.training``)."""
    value = ctx.c.graph_run_mode
    if value is None:
        return
    if value not in (0, 1):
        ctx.err("graph_run_mode", value, "graph_run_mode must be 0 (online inference) or 1 "
                "(training)", "set graph_run_mode = 0 or 1",
                code="graph_run_mode value must be 0 or 1")
    elif value == 1 and not ctx.p.runtime.training:
        ctx.err("graph_run_mode", value, f"{ctx.p.display_name} has no training "
                "(runtime.training = false)", "set graph_run_mode = 0 (online inference)")


def check_soc(ctx: Ctx) -> None:
    """soc_version must be one of the product's; ATC needs it (E10054)."""
    soc = ctx.c.soc_version
    if soc is None:
        if ctx.c.front_end == "atc":
            ctx.err("soc_version", None, "The required parameter --soc_version for ATC is "
                    "empty.", "add --soc_version=" + (default_soc(ctx.p, ctx.soc) or ""),
                    code="E10054")
        return
    if ctx.soc is not None and ctx.soc in ctx.p.soc_versions and soc != ctx.soc:
        ctx.warn("soc_version", soc, f"the product was named by the SoC {ctx.soc} but "
                 f"soc_version is {soc}; {soc} is used",
                 f"name the product by {soc}, or set soc_version = \"{ctx.soc}\" "
                 "(npu-smi info shows your card's)")
    if soc not in ctx.p.soc_versions:
        ctx.err("soc_version", soc, f"{soc!r} is not a SoC of {ctx.p.display_name}",
                choice_hint(soc, ctx.p.soc_versions))


def check_environment(ctx: Ctx) -> None:
    """R30 exclusions, device-id variables, and the rank table when RANK_TABLE_FILE is set."""
    env = ctx.env
    if env.get("CM_CHIEF_IP") and env.get("RANK_TABLE_FILE"):
        ctx.warn("RANK_TABLE_FILE", env["RANK_TABLE_FILE"], "CM_CHIEF_IP and RANK_TABLE_FILE "
                 "cannot be configured at the same time.", "unset one of them")
    if env.get("RANK_SIZE") and env.get("CM_WORKER_SIZE"):
        ctx.err("RANK_SIZE", env["RANK_SIZE"], "RANK_SIZE and CM_WORK_SIZE cannot be "
                "configured at the same time", "unset one of them")
    for name in ("ASCEND_DEVICE_ID", "DEVICE_ID"):
        raw = env.get(name)
        if raw is None or raw == "":
            continue
        text = raw.strip()
        if not signed_digits(text):
            ctx.err(name, raw, f"{name} is invalid, should be int, such as 0, 1, 2.",
                    f"export {name}=0")
        elif int(text) < 0:
            ctx.err(name, raw, f"{name} should be >= 0.", f"export {name}=0")
    scene = env.get("ASCEND_DUMP_SCENE")
    if scene:
        from geplug.config.locations import DUMP_SCENES

        if scene not in DUMP_SCENES:
            ctx.warn("ASCEND_DUMP_SCENE", scene, f"{scene!r} is not an exception-dump scene, "
                     "so the variable selects nothing (enable_exception_dump decides)",
                     choice_hint(scene, DUMP_SCENES))
    if env.get("RANK_TABLE_FILE"):
        _rank_table(ctx, env["RANK_TABLE_FILE"])


def _rank_table(ctx: Ctx, path: str) -> None:
    from geplug.config.rank import read_rank_info
    from geplug.errors import ConfigError, GeplugError, RankTableError

    try:
        info = read_rank_info(ctx.env, ctx.p)
    except RankTableError as exc:
        if not exc.issues:
            ctx.err("RANK_TABLE_FILE" + (f":{exc.field}" if exc.field else ""), path, str(exc),
                    "fix the rank table (CANN docs: \"rank table file\")", code=exc.code)
        for issue in exc.issues:  # every problem of the table at once, each with its value
            ctx.err(issue.option, issue.value, issue.message, issue.hint, code=issue.code)
    except ConfigError as exc:
        ctx.extend(list(exc.problems))
    except GeplugError as exc:
        ctx.err("RANK_TABLE_FILE", path, str(exc),
                "fix the rank table (CANN docs: \"rank table file\")")
    else:
        for issue in info.table_warnings:
            ctx.warn(issue.option, issue.value, issue.message, issue.hint, code=issue.code)


def check_initialize_system(ctx: Ctx) -> None:
    """R28: only where ``runtime.initialize_system`` (run when asked for initialize_system)."""
    if ctx.for_initialize_system and not ctx.p.runtime.initialize_system:
        ctx.err("initialize_system", ctx.p.name, f"initialize_system is not supported on "
                f"{ctx.p.display_name} (runtime.initialize_system = false)",
                "run without initialize_system, or choose a product that supports it")
