"""Where the exception dump goes: the one rule shared by resolution and the dump writer.

Priorities of formats.md §4 and options.md §8, §14: ``ASCEND_DUMP_SCENE`` > ``NPU_COLLECT_PATH``
(forces level 1) > the ``enable_exception_dump`` option. Roots: scene: ASCEND_DUMP_PATH >
ASCEND_WORK_PATH > cwd; level 1: NPU_COLLECT_PATH > ASCEND_WORK_PATH > cwd; level 2:
ASCEND_WORK_PATH > cwd. Two directories come out:

- ``path``: the dump data storage path in the seed's words ("dump数据存储路径优先级为：环境变量
  NPU_COLLECT_PATH > 环境变量ASCEND_WORK_PATH > 默认路径（当前脚本执行路径下的extra-info目录）" for
  level 1; "...默认路径（指当前脚本执行路径下的extra-info/data-dump/<device_id>目录）" for level 2):
  the environment directory when one is set, else ``./extra-info`` (level 1) or
  ``./extra-info/data-dump/<device_id>`` (level 2);
- ``directory``: where the files land, the real stack's layout under that root
  (``{root}/extra-info/data-dump/{device_id}``, formats.md §4; msaicerr and the host plog line
  look there), which is always inside ``path``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import attrs

__all__ = ["DUMP_SCENES", "ExceptionDumpLocation", "exception_dump_location"]

DUMP_SCENES = {"aic_err_brief_dump": 2, "aic_err_norm_dump": 1, "aic_err_detail_dump": 1}
"""ASCEND_DUMP_SCENE values and the exception-dump level each means (brief = lite L0)."""


@attrs.frozen
class ExceptionDumpLocation:
    """The effective level (0 off, 1 normal, 2 lite), the absolute directory of the files
    (None when off), the sources of the level and of the root directory (``Source`` strings),
    and the absolute storage path the seed names (None when off; see the module docstring)."""

    level: int
    directory: str | None
    level_source: str
    root_source: str
    path: str | None = None


def exception_dump_location(
    level: int, env: Mapping[str, str], device_id: int, cwd: str | None = None
) -> ExceptionDumpLocation:
    """The exception dump's effective level and directory for option value ``level``."""
    from geplug.config.resolved import Source

    cwd = cwd or os.getcwd()
    work = env.get("ASCEND_WORK_PATH") or ""
    scene = env.get("ASCEND_DUMP_SCENE") or ""
    collect = env.get("NPU_COLLECT_PATH") or ""
    work_or_cwd = (work, Source.env("ASCEND_WORK_PATH")) if work else (cwd, Source.BUILTIN_DEFAULT)
    if scene in DUMP_SCENES:
        level, level_src = DUMP_SCENES[scene], Source.env("ASCEND_DUMP_SCENE")
        dump_path = env.get("ASCEND_DUMP_PATH") or ""
        root, root_src = (dump_path, Source.env("ASCEND_DUMP_PATH")) if dump_path else work_or_cwd
    elif collect:
        level, level_src = 1, Source.env("NPU_COLLECT_PATH")
        root, root_src = collect, Source.env("NPU_COLLECT_PATH")
    elif level in (1, 2):
        level_src = ""
        root, root_src = work_or_cwd
    else:
        return ExceptionDumpLocation(0, None, "", "")
    base = os.path.abspath(os.path.join(cwd, root))
    directory = os.path.join(base, "extra-info", "data-dump", str(int(device_id)))
    if root_src != Source.BUILTIN_DEFAULT:
        path = base  # the environment variable's directory itself
    elif level == 1:
        path = os.path.join(base, "extra-info")  # the seed: ./extra-info
    else:
        path = directory  # the seed: ./extra-info/data-dump/<device_id>
    return ExceptionDumpLocation(level, directory, level_src, root_src, path)
