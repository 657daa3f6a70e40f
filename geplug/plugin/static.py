"""Look at a plugin that is not loaded (disabled or skipped) without importing any of its code.

Used only to explain a miss: when a product or a backend is asked for and the plugin that
would provide it is installed but disabled by ``GEPLUG_DISABLE_PLUGINS`` (or was skipped), the
error says so instead of "unknown product" / "install geplug-simulator". The look is static:
the package directory is found with :func:`importlib.util.find_spec` on the top-level package
(which runs nothing), its ``*.toml`` declarations are parsed for their product names and SoC
strings, and the hooks module's source is searched for ``@hookimpl ... def geplug_<hook>``.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import attrs

from geplug.limits import MAX_DECLARATION_BYTES, check_depth, read_bytes

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = ["StaticInfo", "inspect_target"]

_HOOKIMPL_RE = re.compile(
    r"^[ \t]*@[\w.]*hookimpl\b[^\n]*\n(?:[ \t]*@[^\n]*\n)*[ \t]*def[ \t]+(geplug_[a-z_]+)",
    re.MULTILINE)
"""A ``@hookimpl``-decorated (possibly among other decorators) ``def geplug_*``."""


@attrs.frozen(kw_only=True)
class StaticInfo:
    """What the files of a not-loaded plugin show."""

    products: tuple[str, ...] = ()
    """Product names its ``capabilities*.toml`` files declare."""
    soc_versions: tuple[str, ...] = ()
    """SoC version strings those declarations list."""
    hooks: frozenset[str] | None = None
    """``geplug_*`` functions its hooks module defines; ``None`` when its source is unreadable."""


def inspect_target(target: str) -> StaticInfo:
    """The :class:`StaticInfo` of an entry-point target (``package.module[:attr]``).

    Never raises and never imports the plugin: an unreadable package gives an empty record.
    """
    module = target.split(":", 1)[0].strip()
    parts = module.split(".")
    try:
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        return StaticInfo()
    if spec is None:
        return StaticInfo()
    roots = [Path(p) for p in (spec.submodule_search_locations or ())]
    products: list[str] = []
    socs: list[str] = []
    for root in roots:
        for path in sorted(root.glob("*.toml")):
            name, listed = _declared(path)
            if name:
                products.append(name)
                socs.extend(listed)
    source = _module_source(spec.origin, roots, parts[1:])
    hooks = None if source is None else frozenset(_HOOKIMPL_RE.findall(source))
    return StaticInfo(products=tuple(products), soc_versions=tuple(socs), hooks=hooks)


def _declared(path: Path) -> tuple[str, list[str]]:
    """(product name, SoC strings) of a declaration file; ("", []) for any other TOML."""
    try:
        data = read_bytes(str(path), limit=MAX_DECLARATION_BYTES, what="declaration",
                          fail=_Unreadable)
        raw = tomllib.loads(data.decode("utf-8"))
    except (_Unreadable, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError,
            MemoryError, ValueError):
        return "", []  # only an explanation is at stake: the loader reports the file itself
    if check_depth(raw) is not None:
        return "", []
    product = raw.get("product")
    if "schema_version" not in raw or not isinstance(product, dict):
        return "", []
    name = product.get("name")
    socs = product.get("soc_versions")
    listed = [s for s in socs if isinstance(s, str)] if isinstance(socs, list) else []
    return (name, listed) if isinstance(name, str) else ("", [])


class _Unreadable(Exception):
    """A declaration that cannot be read (the reason is not needed here)."""


def _module_source(origin: str | None, roots: list[Path], rest: list[str]) -> str | None:
    """The source text of the module ``rest`` below the package (the package itself if none)."""
    candidates: list[Path] = []
    if not rest:
        if origin:
            candidates.append(Path(origin))
    else:
        for root in roots:
            candidates += [root.joinpath(*rest).with_suffix(".py"),
                           root.joinpath(*rest, "__init__.py")]
    for path in candidates:
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    return None
