"""The effective configuration for one product: every value and where it came from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from geplug.config.model import SessionConfig

__all__ = ["ResolvedConfig", "Source"]


class Source:
    """Where an effective value came from (the strings used in ``ResolvedConfig.sources``)."""

    USER = "user"
    PRODUCT_DEFAULT = "product default"
    RUN_MODE_DEFAULT = "run-mode default"
    BUILTIN_DEFAULT = "built-in default"

    @staticmethod
    def env(name: str) -> str:
        """The source string of an environment variable."""
        return f"environment {name}"

    @staticmethod
    def front_end(name: str) -> str:
        """The source string of a front end's own default (``front-end default (tf)``): the
        layers disagree on some defaults (options.md §12) and the config's front end decides."""
        return f"front-end default ({name})"


@attrs.frozen(kw_only=True)
class ResolvedConfig:
    """What the real stack would use, made explicit.

    ``config`` carries every option with its effective value (a value stays ``None`` only
    where "unset" is itself the behaviour, e.g. ``dump_step`` = every step), profiling options
    included when profiling is on. ``sources`` maps option paths to a :class:`Source` string.
    The path fields are absolute, or ``None`` when the feature writes nothing.
    """

    product: str
    config: SessionConfig
    sources: Mapping[str, str] = attrs.field(factory=dict)
    run_mode: str = "training"
    """``training`` (graph_run_mode 1) or ``inference`` (0)."""
    device_id: int = 0
    dump_root: str | None = None
    """The absolute dump_path when data or overflow dumping is on."""
    profiling_output: str | None = None
    """The absolute directory under which ``PROF_*`` is created when profiling is on."""
    kernel_meta_dir: str | None = None
    """The absolute ``.../kernel_meta`` directory when compile debug files are produced."""
    op_debug_items: tuple[str, ...] = ()
    """op_debug_config items in force (``oom``, ``dump_cce``, ...)."""
    op_debug_list: tuple[str, ...] = ()
    """op_debug_list entries (``OpType::X`` or node names); () = every op."""
    exception_dump_level: int = 0
    """0 off, 1 normal (L1), 2 lite (L0) - after NPU_COLLECT_PATH forcing."""
    exception_dump_path: str | None = None
    """The exception dump's storage path as the seed states it, absolute, when on: level 1
    NPU_COLLECT_PATH > ASCEND_WORK_PATH > ``./extra-info``; level 2 ASCEND_WORK_PATH >
    ``./extra-info/data-dump/<device_id>`` (:mod:`geplug.config.locations`)."""
    exception_dump_dir: str | None = None
    """Where the files land when on: the absolute ``{root}/extra-info/data-dump/{device_id}``
    directory, the real stack's layout inside :attr:`exception_dump_path` (formats.md §4)."""
    impl_by_op_type: Mapping[str, str] = attrs.field(factory=dict)
    """Implementation mode per op type from op_select_implmode/optypelist/op_precision_mode."""
    impl_by_node: Mapping[str, str] = attrs.field(factory=dict)
    """Implementation mode per node name from op_precision_mode ``[ByNodeName]``."""
    impl_default: str = "high_performance"
    """The mode of ops no list names (high_performance unless a ``_for_all`` mode says)."""
    enable_small_channel: bool = False
    """Whether small-channel mode (C04) is on: the user's ``enable_small_channel``, else 1
    from the TF adapter in online inference (options.md §6, R29), else 0 (ATC's and GE's
    default)."""
    mixlist_overrides: Mapping[str, bool | None] = attrs.field(factory=dict)
    """From the modify_mixlist JSON (options.md §5.5): op type -> ``True`` white list (may be
    lowered), ``False`` black list (kept), ``None`` grey list (follows the previous op).
    Applies on top of each op's ``precision_reduce``; empty when modify_mixlist is unset.
    These are the *final* lists of the op types the file names (the file's edits applied to
    the product's built-in lists by :func:`geplug.config.files.mixlist_state`), so every
    consumer (precision decisions, the unmatched-names check) sees one answer per op."""
    profiling: Any = attrs.field(default=None)
    """The typed profiling values the collectors act on
    (:class:`~geplug.config.resolve_profiling.Effective`, defaults filled in, sources under
    ``profiling.<field>``) when profiling is on; ``None`` when it is off."""
    profiling_error: str | None = None
    """Why the profiling options in force cannot be collected on this product (the checker
    reports it first); the profiling plugin raises it instead of collecting."""
    rank: Any = attrs.field(default=None, eq=False, repr=False)
    """The :class:`~geplug.config.rank.RankInfo` read from the rank table and the environment
    (read once, here; ``None`` when it cannot be read: the check reports why)."""

    def source(self, option: str) -> str:
        """Where ``option``'s effective value came from."""
        return self.sources.get(option, "")

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready mapping (``geplug resolve --format json``)."""
        data = attrs.asdict(self, recurse=True)
        data["sources"] = dict(self.sources)
        for key in ("impl_by_op_type", "impl_by_node", "mixlist_overrides"):
            data[key] = dict(getattr(self, key))
        data.pop("rank", None)
        return data
