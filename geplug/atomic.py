"""Write a file completely or not at all: a unique temporary name beside it, then ``os.replace``.

The one helper the CLI commands and the demo use for files they write (the dump and profiling
writers have their own, which add collision handling and storage accounting).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import BinaryIO

__all__ = ["write_atomic"]


def write_atomic(path: str | os.PathLike[str], write: Callable[[BinaryIO], object]) -> None:
    """Call ``write(fh)`` on a temporary file in ``path``'s directory, then rename it to ``path``.

    The temporary name is unique (``mkstemp``), so threads and processes never share one; the
    final file gets the permissions a plain ``open`` would give. On any error the temporary
    file is removed and the exception propagates; an existing ``path`` is left untouched.
    """
    target = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp",
                               dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a plain file obeys the umask
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
