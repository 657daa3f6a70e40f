"""Guards around every call into third-party plugin code: output and interrupts.

Two things a plugin can do to a run that are not exceptions of the ordinary kind:

- **print**: ``geplug products --json`` (and every ``--format json``) writes a document to
  stdout; a plugin printing there would corrupt it. :func:`plugin_output` sends whatever a
  plugin writes to ``sys.stdout`` to ``sys.stderr`` instead, per thread (a collector thread's
  plugin call does not divert the main thread's output).
- **raise SystemExit / KeyboardInterrupt**: a plugin calling ``sys.exit()`` at import or in a
  hook must not end the user's command, but a real Ctrl-C must still stop it.
  :func:`install_interrupt_counter` wraps Python's default SIGINT handler with one that counts
  the signals received and then behaves exactly as before; :func:`is_plugin_fault` tells a
  ``KeyboardInterrupt`` raised by a plugin (no signal arrived during the call) from a real one.
  Where SIGINT is ignored (a background job of a non-interactive shell: ``nohup``, CI
  runners), no Ctrl-C can raise one, so every ``KeyboardInterrupt`` is a plugin's.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any, TextIO

__all__ = [
    "enter_plugin_output",
    "exit_plugin_output",
    "install_interrupt_counter",
    "interrupt_count",
    "is_plugin_fault",
    "plugin_output",
]

_depths: dict[int, int] = {}
"""Thread id -> how many plugin calls it is inside (a dict: cheaper than threading.local on
the per-event path)."""
_interrupts = 0
_installed = False
_get_ident = threading.get_ident


class _Router:
    """Stands in for ``sys.stdout``: writes go to stderr in a thread inside a plugin call."""

    def __init__(self, target: TextIO) -> None:
        self._target = target

    def _stream(self) -> TextIO:
        return sys.stderr if threading.get_ident() in _depths else self._target

    def write(self, text: str) -> int:
        return self._stream().write(text)

    def writelines(self, lines: Any) -> None:
        self._stream().writelines(lines)

    def flush(self) -> None:
        self._stream().flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)


def enter_plugin_output() -> None:
    """From now on (until :func:`exit_plugin_output`), what this thread prints to
    ``sys.stdout`` goes to ``sys.stderr``. The cheap form of :func:`plugin_output` for the
    per-event loops (no generator per call)."""
    if sys.stdout.__class__ is not _Router and sys.stdout is not None:
        sys.stdout = _Router(sys.stdout)
    tid = _get_ident()
    _depths[tid] = _depths.get(tid, 0) + 1


def exit_plugin_output() -> None:
    """Undo one :func:`enter_plugin_output`."""
    tid = _get_ident()
    depth = _depths[tid] - 1
    if depth:
        _depths[tid] = depth
    else:
        del _depths[tid]


@contextlib.contextmanager
def plugin_output() -> Iterator[None]:
    """While inside, what this thread prints to ``sys.stdout`` goes to ``sys.stderr``."""
    enter_plugin_output()
    try:
        yield
    finally:
        exit_plugin_output()


def _counting_handler(signum: int, frame: Any) -> None:
    global _interrupts
    _interrupts += 1
    signal.default_int_handler(signum, frame)


def install_interrupt_counter() -> None:
    """Count SIGINTs (then raise ``KeyboardInterrupt`` as Python's own handler does).

    Only in the main thread and only when Python's default handler is in place (a program
    that installed its own keeps it; plugins' interrupts are then all treated as real).
    """
    global _installed
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _counting_handler)
            _installed = True
    except (ValueError, OSError):  # no signal support here: interrupts count as real
        return


def interrupt_count() -> int:
    """SIGINTs received since :func:`install_interrupt_counter`."""
    return _interrupts


def is_plugin_fault(exc: BaseException, interrupts_before: int) -> bool:
    """Whether ``exc``, raised out of plugin code, is the plugin's fault (not a real stop).

    Every ``Exception`` and ``SystemExit`` is; a ``KeyboardInterrupt`` is when no SIGINT was
    counted since ``interrupts_before`` (and the counter is installed) or when SIGINT is
    ignored in this process; anything else (``GeneratorExit``, a real interrupt) is not.
    """
    if isinstance(exc, (Exception, SystemExit)):
        return True
    if isinstance(exc, KeyboardInterrupt):
        return (_installed and _interrupts == interrupts_before) or _sigint_ignored()
    return False


def _sigint_ignored() -> bool:
    """Whether SIGINT is ignored in this process (then no signal raises KeyboardInterrupt)."""
    try:
        return signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    except (ValueError, OSError):  # no signal support here
        return False
