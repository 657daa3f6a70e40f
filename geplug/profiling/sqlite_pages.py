"""Bulk rows of one numeric rowid table, written as SQLite b-tree pages (vectorised).

SQLite costs ~0.3 µs of CPU per inserted row however the rows arrive (``INSERT ... SELECT``
included): its virtual machine decodes, re-encodes and inserts each row on its own. A 1M-task
profile has 25M ``TASK_PMU_INFO`` rows (25 metrics per task), ~8 s of it. These rows are
integers and reals only, so :class:`PageAppender` encodes whole blocks of them at once with
numpy in SQLite's documented file format (https://www.sqlite.org/fileformat2.html: record
format, table b-tree leaf and interior pages, varints) and appends the pages to a database
that SQLite has written and closed; the table's empty root page becomes the root of the new
tree and the header's page count is updated. The database stays a plain SQLite file (SQLite
reads it and ``PRAGMA integrity_check`` passes on it, tested): rows get rowids 1, 2, ... in the
order given, the storage classes and integer widths SQLite itself would choose (the smallest
integer encoding; 0 and 1 as the schema-format-4 constants; reals as 8-byte IEEE floats; None
as NULL), so ``SELECT`` returns exactly what the same rows inserted by SQLite return.

Only what this needs is supported (and checked): a rowid table without indexes that is empty
when the pages are appended, with at most 13 columns of integers, reals or NULLs, and rowids
below 2**35.
"""

from __future__ import annotations

import itertools
import os
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["Column", "PageAppender", "SegmentExpander", "build_cells", "encode_ints",
           "encode_values"]

Column = tuple[np.ndarray, np.ndarray, np.ndarray]
"""One column of a block in record form: serial types (uint8, n), big-endian bodies
right-aligned in 8 bytes (uint8, n x 8) and body lengths (int64, n)."""

_LEAF, _INTERIOR = 0x0D, 0x05
_ROWID_BYTES = 5
"""Varint bytes reserved for a rowid (rowids below 2**35)."""
_LENGTH_OF_TYPE = {0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8, 7: 8, 8: 0, 9: 0}
_TYPE_OF_LENGTH = np.array([0, 1, 2, 3, 4, 0, 5, 0, 6], dtype=np.uint8)


def _int_lengths(values: np.ndarray, format4: bool) -> np.ndarray:
    """Bytes of each integer's record body (SQLite's smallest two's complement width)."""
    v = values.astype(np.int64)
    lengths = np.full(len(v), 8, dtype=np.int64)
    for size, bound in ((6, 1 << 47), (4, 1 << 31), (3, 1 << 23), (2, 1 << 15), (1, 1 << 7)):
        lengths[(v >= -bound) & (v < bound)] = size
    if format4:
        lengths[(v == 0) | (v == 1)] = 0
    return lengths


def encode_ints(values: np.ndarray, *, format4: bool = True) -> Column:
    """An int64 column in record form (see :data:`Column`)."""
    v = values.astype(np.int64)
    lengths = _int_lengths(v, format4)
    types = _TYPE_OF_LENGTH[lengths]
    if format4:
        types[v == 0] = 8
        types[v == 1] = 9
    bodies = v.astype(">i8").view(np.uint8).reshape(len(v), 8)
    return types, bodies, lengths


def _numeric(value: Any) -> Any:
    """``value`` after NUMERIC column affinity: a float holding an integer strictly inside the
    int64 range becomes that integer (NaN is stored as NULL)."""
    if isinstance(value, float):
        if value != value:
            return None
        if value.is_integer() and -(1 << 63) < value < (1 << 63) - 1:
            return int(value)
    return value


def encode_values(values: Sequence[Any], *, format4: bool = True) -> Column:
    """A column of Python ints, floats and Nones in record form, as SQLite stores them in a
    column of NUMERIC affinity."""
    values = [_numeric(v) for v in values]
    n = len(values)
    types = np.zeros(n, dtype=np.uint8)
    bodies = np.zeros((n, 8), dtype=np.uint8)
    lengths = np.zeros(n, dtype=np.int64)
    ints = [i for i, v in enumerate(values) if isinstance(v, int)]
    if ints:
        t, b, ln = encode_ints(np.array([values[i] for i in ints], dtype=np.int64),
                               format4=format4)
        types[ints], bodies[ints], lengths[ints] = t, b, ln
    for i, v in enumerate(values):
        if isinstance(v, float):
            types[i], lengths[i] = 7, 8
            bodies[i] = np.frombuffer(struct.pack(">d", v), dtype=np.uint8)
        elif v is not None and not isinstance(v, int):
            raise TypeError(f"a numeric table value must be int, float or None, not {v!r}")
    return types, bodies, lengths


def _rows(column: Column, a: int, b: int) -> Column:
    """Rows ``a:b`` of a column."""
    return column[0][a:b], column[1][a:b], column[2][a:b]


def _varint(value: int) -> bytes:
    """SQLite's big-endian varint (values below 2**56)."""
    out = [value & 0x7F]
    value >>= 7
    while value:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    return bytes(reversed(out))


def build_cells(first_rowid: int, columns: Sequence[Column]) -> tuple[np.ndarray, np.ndarray]:
    """Table b-tree leaf cells of rows with rowids ``first_rowid``, +1, ...: their bytes
    concatenated (uint8) and each cell's length (int64). At most 13 columns (a payload below
    128 bytes: one-byte payload and header sizes)."""
    n = len(columns[0][0])
    k = len(columns)
    if k > 13:
        raise ValueError("at most 13 columns")
    rowid = np.arange(first_rowid, first_rowid + n, dtype=np.int64)
    if n and first_rowid + n > 1 << (7 * _ROWID_BYTES):
        raise ValueError("too many rows for the page writer")
    body = 1 + _ROWID_BYTES + 1 + k
    cells = np.zeros((n, body + 8 * k), dtype=np.uint8)
    keep = np.zeros((n, body + 8 * k), dtype=bool)
    slots = np.arange(8)
    payload = np.full(n, 1 + k, dtype=np.int64)
    for c, (types, bodies, lengths) in enumerate(columns):
        cells[:, 1 + _ROWID_BYTES + 1 + c] = types
        cells[:, body + 8 * c:body + 8 * c + 8] = bodies
        keep[:, body + 8 * c:body + 8 * c + 8] = slots >= (8 - lengths)[:, None]
        payload += lengths
    cells[:, 0] = payload  # below 128: one varint byte
    keep[:, 0] = True
    rlen = _varint_lengths(rowid)
    for s in range(_ROWID_BYTES):
        byte = (rowid >> (7 * (_ROWID_BYTES - 1 - s))) & 0x7F
        if s < _ROWID_BYTES - 1:
            byte |= 0x80
        cells[:, 1 + s] = byte
        keep[:, 1 + s] = rlen >= _ROWID_BYTES - s
    cells[:, 1 + _ROWID_BYTES] = 1 + k  # record header size (one byte per serial type)
    keep[:, 1 + _ROWID_BYTES:body] = True
    return cells[keep], 1 + rlen + payload


def _varint_lengths(values: np.ndarray) -> np.ndarray:
    """Varint bytes of each (non-negative, below 2**35) value."""
    out = np.ones(len(values), dtype=np.int64)
    for g in range(1, _ROWID_BYTES):
        out += values >= (1 << (7 * g))
    return out


class PageAppender:
    """Appends one numeric table's rows to a closed SQLite database (see the module doc).

    Usage: ``app = PageAppender(path, root)``, :meth:`add` blocks of rows (or
    :meth:`add_cells` of cells numbered from :attr:`rowid` + 1), then :meth:`finish` (or
    :meth:`abort`, which truncates the pages written: the database is then as SQLite wrote
    it)."""

    def __init__(self, path: str, root: int) -> None:
        self.path = path
        self.root = root
        self.fh = open(path, "r+b")  # closed by finish / abort
        try:
            header = self.fh.read(100)
            if header[:16] != b"SQLite format 3\x00":
                raise ValueError(f"{path!r} is not an SQLite database")
            size = struct.unpack(">H", header[16:18])[0]
            self.page_size = 65536 if size == 1 else size
            self.usable = self.page_size - header[20]
            self.format4 = header[44] >= 4
            if header[52:56] != bytes(4):
                raise ValueError(f"{path!r} uses auto_vacuum (pointer-map pages)")
            self.fh.seek(0, os.SEEK_END)
            self.pages = self.fh.tell() // self.page_size
            self.fh.seek((root - 1) * self.page_size + (100 if root == 1 else 0))
            head = self.fh.read(8)
            if root < 2 or head[0] != _LEAF or head[3:5] != b"\x00\x00":
                raise ValueError(f"table root page {root} of {path!r} is not an empty leaf")
        except BaseException:
            self.fh.close()
            raise
        self.start_pages = self.pages
        self.lock_page = (1 << 30) // self.page_size + 1
        """The page holding the lock bytes, which SQLite never uses."""
        self.rowid = 0
        """Rows added so far (the last rowid)."""
        self._cells = np.zeros(0, dtype=np.uint8)
        self._lengths = np.zeros(0, dtype=np.int64)
        self._first = 1
        """Rowid of the first pending cell."""
        self._leaves: list[tuple[int, int]] = []
        """(page number, largest rowid) per written leaf."""
        self._at = -1
        """File position after the last write (sequential writes skip the seek)."""

    def _new_page(self) -> int:
        self.pages += 1
        if self.pages == self.lock_page:
            self._write(self.pages, bytes(self.page_size))
            self.pages += 1
        return self.pages

    def _write(self, page: int, data: bytes) -> None:
        pos = (page - 1) * self.page_size
        if pos != self._at:
            self.fh.seek(pos)
        self.fh.write(data)
        self._at = pos + len(data)

    def add(self, columns: Sequence[Column]) -> None:
        """One block of rows (every column the same length), rowids continuing."""
        if len(columns[0][0]):
            self.add_cells(*build_cells(self.rowid + 1, columns))

    def add_cells(self, cells: np.ndarray, lengths: np.ndarray) -> None:
        """Cells (see :func:`build_cells`) of the next ``len(lengths)`` rowids."""
        self.rowid += len(lengths)
        self._cells = np.concatenate((self._cells, cells)) if len(self._cells) else cells
        self._lengths = (np.concatenate((self._lengths, lengths)) if len(self._lengths)
                         else lengths)
        self._flush(final=False)

    def _flush(self, *, final: bool) -> None:
        """Write every full leaf page of the pending cells (and the last one when final)."""
        room = self.usable - 8
        lengths = self._lengths
        n = len(lengths)
        need = np.cumsum(lengths + 2)
        ends: list[int] = []
        start = base = 0
        while start < n:  # greedy: as many cells as fit, in order
            end = int(np.searchsorted(need, base + room, side="right"))
            if end >= n and not final:
                break
            if end <= start:
                raise ValueError("a row does not fit in one page")
            ends.append(end)
            base = int(need[end - 1])
            start = end
        if not ends:
            return
        done = ends[-1]
        starts = np.array([0, *ends[:-1]], dtype=np.int64)
        stops = np.array(ends, dtype=np.int64)
        at = np.concatenate(([0], np.cumsum(lengths[:done])))  # byte offset of each cell
        content = self.usable - (at[stops] - at[starts])
        page_of = np.repeat(np.arange(len(ends)), stops - starts)
        pointers = (content[page_of] + at[:done] - at[starts][page_of]).astype(">u2").tobytes()
        data = self._cells[:int(at[done])].tobytes()
        for p, (a, b) in enumerate(zip(starts.tolist(), ends, strict=True)):
            c = int(content[p])
            head = struct.pack(">BHHHB", _LEAF, 0, b - a, c, 0)
            gap = c - 8 - 2 * (b - a)
            page = b"".join((head, pointers[2 * a:2 * b], bytes(gap),
                             data[at[a]:at[b]], bytes(self.page_size - self.usable)))
            number = self._new_page()
            self._write(number, page)
            self._leaves.append((number, self._first + b - 1))
        self._cells = self._cells[int(at[done]):]
        self._lengths = lengths[done:]
        self._first += done

    def finish(self) -> int:
        """Write the last leaf, the interior pages and the root; update the header. Returns the
        number of rows."""
        try:
            self._flush(final=True)
            level = self._leaves
            if not level:
                self.fh.close()
                return 0
            root_off = 100 if self.root == 1 else 0
            while len(level) > 1:
                level = self._interior_level(level, root_off)
            (top, _), = level
            if top != self.root:  # move the single top page into the root page
                self.fh.seek((top - 1) * self.page_size)
                self._at = -1
                data = self.fh.read(self.page_size)
                if root_off:
                    raise ValueError("page 1 cannot be a table root here")
                self._write(self.root, data)
                # the moved page stays allocated in the file: it must be used, so it is
                # only ever the last page written; drop it from the file
                if top == self.pages:
                    self.pages -= 1
                    self.fh.truncate(self.pages * self.page_size)
                else:
                    raise AssertionError("the top page is the last page")
            self.fh.flush()
            self.fh.seek(24)
            counter = struct.unpack(">I", self.fh.read(4))[0] + 1
            self.fh.seek(24)
            self.fh.write(struct.pack(">II", counter, self.pages))
            self.fh.seek(92)
            self.fh.write(struct.pack(">I", counter))
            self.fh.close()
        except BaseException:
            self.fh.close()
            raise
        return self.rowid

    def _interior_level(self, children: list[tuple[int, int]],
                        root_off: int) -> list[tuple[int, int]]:
        """Interior pages over ``children`` (page, largest rowid); returns the new level."""
        room = self.usable - 12
        groups: list[list[tuple[int, int]]] = []
        group: list[tuple[int, int]] = []
        used = 0
        for child in children:
            cell = 4 + len(_varint(child[1])) + 2
            if group and used + cell > room:
                groups.append(group)
                group, used = [], 0
            group.append(child)
            used += cell
        groups.append(group)
        if len(groups) > 1 and len(groups[-1]) < 2:
            groups[-1].insert(0, groups[-2].pop())
        out = []
        for group in groups:
            cells = [struct.pack(">I", page) + _varint(key) for page, key in group[:-1]]
            size = sum(len(c) for c in cells)
            content = self.usable - size
            page = bytearray(self.page_size)
            page[0:12] = struct.pack(">BHHHBI", _INTERIOR, 0, len(cells), content, 0,
                                     group[-1][0])
            at = content
            pointers = []
            for c in cells:
                pointers.append(struct.pack(">H", at))
                page[at:at + len(c)] = c
                at += len(c)
            page[12:12 + 2 * len(cells)] = b"".join(pointers)
            number = self._new_page()
            self._write(number, bytes(page))
            out.append((number, group[-1][1]))
        return out

    def abort(self) -> None:
        """Stop: drop the pages written so far (the database stays as SQLite wrote it)."""
        try:
            self.fh.truncate(self.start_pages * self.page_size)
        finally:
            self.fh.close()


_DUMMY_IDS = {0: None, 1: 1 << 6, 2: 1 << 14, 3: 1 << 22, 4: 1 << 30, 6: 1 << 46, 8: 1 << 62}
"""An id of each body length (1..8 bytes): fills the id slot of a layout image."""


class SegmentExpander:
    """Rows as *segments* of *templates*, appended through a :class:`PageAppender`.

    A template is a list of rows whose first column is an id offset and whose other columns
    are fixed; a segment (first id, template) stands for the template's rows with the first
    column = first id + offset. Consecutive segments of one template whose rowids and ids keep
    their encoded widths share one byte image of their cells: the image is copied per segment
    and only the rowid and id bytes are written (a few numpy passes per block, no per-row
    record building). Other segments (ids 0 or 1, widths changing inside) go through
    :func:`build_cells`."""

    def __init__(self, app: PageAppender, template: np.ndarray, offsets: np.ndarray,
                 fixed: Sequence[Column], *, block_rows: int = 1 << 18) -> None:
        """``template`` (int64, ascending) and ``offsets`` (int64): each template row's
        template number and id offset; ``fixed``: the other columns of the template rows."""
        self.app = app
        self.offsets = offsets
        self.fixed = fixed
        self.block_rows = block_rows
        top = int(template[-1]) + 1 if len(template) else 0
        self.first = np.searchsorted(template, np.arange(top + 1)).astype(np.int64)
        self.count = np.diff(self.first)
        self._layouts: dict[tuple[int, int, int], tuple[Any, ...]] = {}

    def rows_of(self, templates: np.ndarray) -> np.ndarray:
        """Rows each segment of ``templates`` stands for (0 for a template without rows)."""
        top = len(self.count)
        known = templates < top
        return np.where(known, self.count[np.where(known, templates, 0)] if top else 0, 0)

    def add(self, gid0: np.ndarray, templates: np.ndarray) -> None:
        """Segments (first id, template), in order."""
        rows = self.rows_of(templates)
        keep = rows > 0
        gid0, templates, rows = gid0[keep], templates[keep], rows[keep]
        if not len(rows):
            return
        first_row = self.app.rowid + 1 + np.cumsum(rows) - rows
        last_row = first_row + rows - 1
        lo_off = np.minimum.reduceat(self.offsets, self.first[:-1])[templates] \
            if len(self.offsets) else rows * 0
        hi_off = np.maximum.reduceat(self.offsets, self.first[:-1])[templates] \
            if len(self.offsets) else rows * 0
        r = _varint_lengths(first_row)
        g = _int_lengths(gid0 + lo_off, self.app.format4)
        regular = ((r == _varint_lengths(last_row)) &
                   (g == _int_lengths(gid0 + hi_off, self.app.format4)) & (gid0 + lo_off > 1))
        key = (templates << 8) | (r << 4) | g
        key = np.where(regular, key, -1)
        cuts = np.flatnonzero((key[1:] != key[:-1]) | (key[1:] < 0)) + 1
        bounds = [0, *cuts.tolist(), len(key)]
        for lo, hi in itertools.pairwise(bounds):
            if key[lo] < 0:
                for i in range(lo, hi):
                    self._irregular(int(gid0[i]), int(templates[i]))
            else:
                step = max(1, self.block_rows // int(rows[lo]))
                for a in range(lo, hi, step):
                    b = min(hi, a + step)
                    self._regular(gid0[a:b], int(templates[lo]), int(r[lo]), int(g[lo]))

    def _irregular(self, gid0: int, template: int) -> None:
        a, b = int(self.first[template]), int(self.first[template + 1])
        ids = encode_ints(gid0 + self.offsets[a:b], format4=self.app.format4)
        self.app.add([ids, *(_rows(col, a, b) for col in self.fixed)])

    def _layout(self, template: int, r: int, g: int) -> tuple[Any, ...]:
        """The cell image of one segment (rowid and id bytes left as in the dummies) and the
        positions of its rowid and id bytes."""
        got = self._layouts.get((template, r, g))
        if got is None:
            a, b = int(self.first[template]), int(self.first[template + 1])
            n = b - a
            dummy = _DUMMY_IDS[g]
            ids = encode_ints(np.full(n, dummy, dtype=np.int64), format4=self.app.format4)
            cols = [ids, *(_rows(col, a, b) for col in self.fixed)]
            cells, lengths = build_cells(1 << (7 * (r - 1)), cols)
            if not (_varint_lengths(np.array([(1 << (7 * (r - 1))) + n - 1]))[0] == r):
                raise AssertionError("a layout's dummy rowids keep their width")
            starts = np.cumsum(lengths) - lengths
            rowid_at = starts[:, None] + 1 + np.arange(r)
            id_at = starts[:, None] + 1 + r + 1 + len(cols) + np.arange(g)
            got = self._layouts[(template, r, g)] = (cells, lengths, rowid_at, id_at,
                                                     self.offsets[a:b])
            if len(self._layouts) > 4096:
                self._layouts.clear()
                self._layouts[(template, r, g)] = got
        return got

    def _regular(self, gid0: np.ndarray, template: int, r: int, g: int) -> None:
        cells, lengths, rowid_at, id_at, offsets = self._layout(template, r, g)
        s, n = len(gid0), len(lengths)
        buf = np.empty((s, len(cells)), dtype=np.uint8)
        buf[:] = cells
        rowid = self.app.rowid + 1 + np.arange(s * n, dtype=np.int64)
        word = rowid & 0x7F  # the varint as one big-endian word: 7 bits a byte, high bits set
        for k in range(1, r):
            word |= (((rowid >> (7 * k)) & 0x7F) | 0x80) << (8 * k)
        buf[:, rowid_at.reshape(-1)] = word.astype(">u8").view(np.uint8).reshape(
            s * n, 8)[:, 8 - r:].reshape(s, n * r)
        if g:
            ids = (gid0[:, None] + offsets[None, :]).astype(">i8")
            buf[:, id_at.reshape(-1)] = ids.view(np.uint8).reshape(s * n, 8)[:, 8 - g:].reshape(
                s, n * g)
        self.app.add_cells(buf.reshape(-1), np.tile(lengths, s))
