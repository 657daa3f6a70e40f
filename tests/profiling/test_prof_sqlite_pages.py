"""Rows appended as SQLite pages read back exactly as the same rows inserted by SQLite."""

from __future__ import annotations

import sqlite3

import numpy as np

from geplug.profiling.sqlite_pages import (
    PageAppender,
    SegmentExpander,
    encode_ints,
    encode_values,
)

_TABLE = "CREATE TABLE t (gid INTEGER, name INTEGER, value NUMERIC)"


def _empty_db(path: str) -> int:
    """A database with small pages (deep trees from few rows), another table with an index,
    and the empty table ``t``; returns t's root page."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA page_size = 512")
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("BEGIN")
    conn.execute("CREATE TABLE other (x INTEGER, y TEXT)")
    conn.executemany("INSERT INTO other VALUES (?, ?)", [(i, "v" * (i % 40)) for i in range(300)])
    conn.execute("CREATE INDEX other_x ON other (x)")
    conn.execute(_TABLE)
    conn.execute("COMMIT")
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 't'").fetchone()[0]
    conn.close()
    return int(root)


def _read(path: str) -> tuple[list[tuple[object, ...]], str]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT rowid, gid, typeof(gid), name, value, typeof(value) "
                            "FROM t ORDER BY rowid").fetchall()
        check = conn.execute("PRAGMA integrity_check").fetchone()[0]
        return rows, check
    finally:
        conn.close()


def _by_sqlite(path: str, rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute(_TABLE)
    conn.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
    conn.commit()
    conn.close()
    return _read(path)[0]


VALUES = [0, 1, -1, 2, 127, 128, -128, -129, 32767, 32768, -32769, 8388607, 8388608,
          2**31 - 1, 2**31, -2**31 - 1, 2**47 - 1, 2**47, 2**62, -2**63, 0.5, -2.25, 1e300,
          None, 3, 7]


def test_appended_rows_equal_the_rows_sqlite_inserts(tmp_path):
    n = 20_000  # rowids past 127 and 16383; a three-level tree at 512-byte pages
    gid = np.arange(n, dtype=np.int64) * 37 - 5
    name = np.arange(n, dtype=np.int64) % 5
    value = [VALUES[i % len(VALUES)] for i in range(n)]
    path = str(tmp_path / "pages.db")
    app = PageAppender(path, _empty_db(path))
    for lo in range(0, n, 6_001):  # blocks ending mid-page
        hi = min(n, lo + 6_001)
        app.add([encode_ints(gid[lo:hi]), encode_ints(name[lo:hi]),
                 encode_values(value[lo:hi])])
    assert app.finish() == n
    got, check = _read(path)
    want = _by_sqlite(str(tmp_path / "sqlite.db"),
                      list(zip(gid.tolist(), name.tolist(), value, strict=True)))
    assert check == "ok"
    assert got == want


def test_segments_of_templates_equal_their_expanded_rows(tmp_path):
    # template 0: 3 tasks x 2 metrics; template 1: 1 task x 3 metrics; ids from 0 (0 and 1
    # are constants in the record) past 127 and 32767
    template = np.array([0] * 6 + [1] * 3, dtype=np.int64)
    offset = np.array([0, 0, 1, 1, 2, 2, 0, 0, 0], dtype=np.int64)
    names = np.array([4, 5, 4, 5, 4, 5, 6, 7, 8], dtype=np.int64)
    values = [1.5, 2, 0, 3.25, 1, 300000, None, 9, -4.0]
    seg_t, gid0, gid = [], [], 0
    for s in range(13_000):
        t = 1 if s % 97 == 3 else 0
        seg_t.append(t)
        gid0.append(gid)
        gid += 3 if t == 0 else 1
    rows_of = [[(int(offset[j]), int(names[j]), values[j]) for j in range(9) if template[j] == t]
               for t in (0, 1)]
    expected = [(g0 + off, name, value) for g0, t in zip(gid0, seg_t, strict=True)
                for off, name, value in rows_of[t]]
    path = str(tmp_path / "pages.db")
    app = PageAppender(path, _empty_db(path))
    SegmentExpander(app, template, offset, [encode_ints(names), encode_values(values)],
                    block_rows=5_000).add(np.array(gid0), np.array(seg_t))
    app.finish()
    got, check = _read(path)
    assert check == "ok"
    assert got == _by_sqlite(str(tmp_path / "sqlite.db"), expected)
    assert len(got) > 70_000
