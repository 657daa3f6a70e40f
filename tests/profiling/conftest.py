"""Fixtures of the profiling tests (helpers live in ``prof_helpers``)."""

from __future__ import annotations

from prof_helpers import manager

__all__ = ["manager"]
