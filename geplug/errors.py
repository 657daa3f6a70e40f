"""The geplug exception hierarchy: every error names its culprit and says how to fix it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from geplug.config.problems import Problem

__all__ = [
    "AICoreError",
    "BackendError",
    "CapabilityError",
    "CompileError",
    "ConfigError",
    "ConfigWarning",
    "DumpError",
    "GeplugError",
    "GeplugWarning",
    "HcclError",
    "NotInitializedError",
    "OverflowWarning",
    "PluginConflictError",
    "PluginError",
    "ProductNotNamedError",
    "ProfilingError",
    "RankQueryError",
    "RankTableError",
    "RunError",
    "UnknownProductError",
    "UsageError",
]


class GeplugError(Exception):
    """Base of every error geplug raises on purpose (never a deep traceback)."""


class UsageError(GeplugError):
    """A command-line argument is invalid (the CLI exits 2); ``argument`` names it."""

    def __init__(self, message: str, *, argument: str = "") -> None:
        super().__init__(message)
        self.argument = argument


class PluginError(GeplugError):
    """A plugin could not be used; ``plugin`` and ``distribution`` name it."""

    def __init__(self, message: str, *, plugin: str = "", distribution: str = "") -> None:
        super().__init__(message)
        self.plugin = plugin
        self.distribution = distribution


class PluginConflictError(PluginError):
    """Two plugins declare the same product; ``providers`` names both distributions."""

    def __init__(self, message: str, *, product: str, providers: Sequence[str]) -> None:
        super().__init__(message, plugin=product)
        self.product = product
        self.providers = tuple(providers)


class CapabilityError(GeplugError):
    """A ``capabilities.toml`` is invalid: ``path`` is the file, ``key`` the dotted key path.

    ``errors`` holds every (key path, message) found when the file was validated.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str = "",
        key: str = "",
        errors: Sequence[tuple[str, str]] = (),
    ) -> None:
        super().__init__(message)
        self.path = path
        self.key = key
        self.errors = tuple(errors) or ((key, message),)


class UnknownProductError(GeplugError):
    """No installed product has this name or SoC string; ``suggestions`` are the closest names.

    ``note``, when given, says why instead (the plugin declaring it is installed but disabled
    by GEPLUG_DISABLE_PLUGINS, or was skipped).
    """

    def __init__(self, name: str, suggestions: Sequence[str], known: Sequence[str], *,
                 note: str = "") -> None:
        self.name = name
        self.suggestions = tuple(suggestions)
        self.known = tuple(known)
        self.note = note
        if note:
            hint = note
        elif not known:
            hint = "no product plugin is installed; install one, e.g. `pip install geplug-atlas-a2`"
        elif suggestions:
            hint = "did you mean " + " or ".join(repr(s) for s in suggestions) + "?"
        else:
            hint = "installed products: " + ", ".join(known)
        head = "product {!r} is not available" if note else "unknown product {!r}"
        super().__init__(f"{head.format(name)}: {hint}")


class ConfigError(GeplugError):
    """A configuration has errors; ``problems`` holds every one of them, not just the first."""

    def __init__(self, problems: Sequence[Problem], *, source: str = "") -> None:
        self.problems = tuple(problems)
        self.source = source
        errors = [p for p in self.problems if p.severity == "error"]
        head = f"{len(errors)} configuration error(s)" + (f" in {source}" if source else "")
        lines = [head + ":"] + [f"  - {p.render()}" for p in errors]
        super().__init__("\n".join(lines))


class ProductNotNamedError(ConfigError):
    """No product was named and several are installed (``installed`` lists them).

    The message speaks to Python callers (``initialize_system(product=...)``); a command-line
    front end catches this class and says ``--product P`` instead.
    """

    def __init__(self, problems: Sequence[Problem], *, source: str = "",
                 installed: Sequence[str] = ()) -> None:
        super().__init__(problems, source=source)
        self.installed = tuple(installed)


class GeplugWarning(UserWarning):
    """The base of every warning geplug issues (``filterwarnings`` on it catches them all)."""


class OverflowWarning(GeplugWarning):
    """An op overflowed in a run (``enable_dump_debug``): one line naming the op, the step,
    the counts and the summary file. ``warnings.simplefilter("error", OverflowWarning)``
    turns it into an exception; ``RunResult.overflows`` holds the same findings."""


class ConfigWarning(GeplugWarning):
    """A configuration accepted with a warning (``problem``): issued by ``initialize_system``
    for each warning of the check, naming the option, the value and the hint."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.render())
        self.problem = problem


class BackendError(GeplugError):
    """No backend served a request; ``reasons`` maps each backend asked to why it passed."""

    def __init__(self, message: str, *, reasons: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.reasons = dict(reasons or {})


class CompileError(GeplugError):
    """A model cannot be compiled; ``node`` names the node (or input) at fault."""

    def __init__(self, message: str, *, node: str = "", details: dict[str, Any] | None = None):
        super().__init__(message)
        self.node = node
        self.details = dict(details or {})


class AICoreError(GeplugError):
    """A (simulated) AI Core error at ``node``; ``dump_files`` lists the exception dumps."""

    def __init__(self, message: str, *, node: str, op_type: str = "",
                 dump_files: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.node = node
        self.op_type = op_type
        self.dump_files = tuple(dump_files)


class NotInitializedError(GeplugError):
    """A call needs ``initialize_system`` first (the real HCCL rank queries do too)."""


class RankTableError(GeplugError):
    """A rank table (RANK_TABLE_FILE) is invalid; ``path`` and ``field`` name the culprit."""

    def __init__(self, message: str, *, path: str = "", field: str = "", code: str = "",
                 issues: Sequence[Any] = ()) -> None:
        super().__init__(message)
        self.path = path
        self.field = field
        self.code = code
        """The real stack's error code where one exists (EI0004...), else ""."""
        self.issues = tuple(issues)
        """Every problem found in the table (``geplug.config.rank_table.TableIssue``), so a
        check can report them all at once; empty for a single-problem error."""


class RankQueryError(GeplugError, ValueError):
    """A rank query got a bad group argument; ``group`` is what was passed."""

    def __init__(self, message: str, *, group: str = "") -> None:
        super().__init__(message)
        self.group = group


class RunError(GeplugError, ValueError):
    """A compiled model cannot run as asked; ``argument`` names the bad argument (``step``).

    A ``ValueError`` too, like any bad argument value.
    """

    def __init__(self, message: str, *, argument: str = "") -> None:
        super().__init__(message)
        self.argument = argument


class DumpError(GeplugError):
    """A dump could not be written or read; ``path`` names the file."""

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class ProfilingError(GeplugError):
    """Profiling could not be collected or read; ``path`` names the file or directory."""

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class HcclError(GeplugError):
    """A collective could not run (HCCL's behaviour on hardware): a rank never joined, a link
    is down, a rank table names a wrong device IP, a bad HCCL_* setting. ``code`` is HCCL's
    public error code (EI0006 socket time-out, EI0002 notify wait time-out, EI0014 device IP
    mismatch), ``ranks`` the ranks at fault."""

    def __init__(self, message: str, *, code: str = "", ranks: Sequence[int] = (),
                 option: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.ranks = tuple(ranks)
        self.option = option
