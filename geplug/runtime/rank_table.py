"""Moved to :mod:`geplug.config.rank_table` (a rank table is configuration input); this
name stays importable."""

from geplug.config.rank_table import (
    MAX_TABLE_BYTES,
    Table,
    TableIssue,
    TableRank,
    read_rank_table,
)

__all__ = ["MAX_TABLE_BYTES", "Table", "TableIssue", "TableRank", "read_rank_table"]
