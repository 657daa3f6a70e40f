"""Property: any numeric rows appended as SQLite pages read back exactly as SQLite's own
inserts of the same rows, and the file passes SQLite's integrity check."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from geplug.profiling.sqlite_pages import PageAppender, encode_ints, encode_values

_TABLE = "CREATE TABLE t (gid INTEGER, name INTEGER, value NUMERIC)"
_INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_VALUE = st.one_of(st.none(), _INT64, st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([0.0, -0.0, 2.0**51, 2.0**52, 2.0**62, -2.0**63, 1e18]))


def _db(path: Path, page_size: int, rows: list[tuple[object, ...]] | None) -> int:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA page_size = {page_size}")
    conn.execute(_TABLE)
    if rows is not None:
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
        conn.execute("COMMIT")
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 't'").fetchone()[0]
    conn.close()
    return int(root)


def _read(path: Path) -> tuple[list[tuple[object, ...]], str]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT rowid, gid, typeof(gid), name, typeof(name), value, "
                            "typeof(value) FROM t ORDER BY rowid").fetchall()
        return rows, conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.integers(min_value=0, max_value=2**40), _INT64, _VALUE),
                     max_size=3000),
       page_size=st.sampled_from([512, 1024, 4096, 65536]),
       block=st.integers(min_value=1, max_value=1500))
def test_any_numeric_rows_read_back_as_sqlite_inserted_them(rows, page_size, block):
    with tempfile.TemporaryDirectory() as tmp:
        pages, ref = Path(tmp) / "pages.db", Path(tmp) / "sqlite.db"
        app = PageAppender(str(pages), _db(pages, page_size, None))
        for lo in range(0, len(rows), block):
            part = rows[lo:lo + block]
            app.add([encode_ints(np.array([r[0] for r in part], dtype=np.int64)),
                     encode_ints(np.array([r[1] for r in part], dtype=np.int64)),
                     encode_values([r[2] for r in part])])
        assert app.finish() == len(rows)
        _db(ref, page_size, rows)
        got, check = _read(pages)
        assert check == "ok"
        assert got == _read(ref)[0]
