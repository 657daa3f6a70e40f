"""Built-in dump support: data, overflow and exception dump writers, the reader and tools.

Modules: ``policy`` (which steps are dumped), ``schema`` (the DumpData protobuf), ``encode`` /
``fileio`` / ``layout`` / ``naming`` (the file format and tree), one writer per module
(``data_writer``, ``overflow``, ``exception``, ``stats``), ``opdebug`` (the overflow record
both ways), ``plugin`` (the ``geplug_dump``
hook), ``reader`` and ``compare``. See docs/dump.md.
"""

from __future__ import annotations

from geplug.dump.policy import parse_dump_step, wants_tensors

__all__ = ["parse_dump_step", "wants_tensors"]
