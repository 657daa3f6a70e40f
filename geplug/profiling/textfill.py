"""Vectorised filling of %-templates: the export's text rows built as byte arrays by numpy.

The export formats every per-task line from a %-template (its static cells baked in) and a
row of integers (times, ids). Filling those templates with Python's ``%`` converts each integer
in Python, ~60-200 ns a value, and a 1M-task export has ~34M of them. A compiled model's task
table is static, so consecutive steps use the **same sequence of templates**: this module cuts
a block of rows into segments (steps), finds runs of consecutive segments with the same
template sequence, and renders each run at once - a byte skeleton of one segment (the
templates' literal text with room for every number) tiled over the run's segments, and every
number's digits written into it by numpy (three digits at a time from a lookup table). Where a
number is narrower in some segment than in others of its run (a counter gaining a digit), the
spare leading positions are filled with a byte that never occurs in UTF-8 and removed in one
pass. Short runs (a step whose durations differ from its neighbours' templates) and anything the
vectorised path does not cover (a negative value, an unknown conversion) are filled by ``%``
itself, so the text is always exactly what ``%`` gives (tested against it).

Supported conversions: ``%d`` (non-negative), ``%0Nd`` (``N`` < 10), ``%.0s`` (consumes a value,
prints nothing) and ``%%``.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Any, NamedTuple

import numpy as np

__all__ = ["BlockFormatter", "Pieces", "percent_fill", "write_pieces"]

_CONV = re.compile(r"%(%|d|0([1-9])d|\.0s)")
_TAB = np.frombuffer(b"".join(b"%03d\0" % i for i in range(1000)), dtype=np.uint32)
"""The three ASCII digits of 0..999 in the first three bytes of a 4-byte word (one word per
lookup: numpy's take is fast on a flat table of words)."""
_POW10 = np.array([10 ** p for p in range(1, 19)], dtype=np.int64)
_FILL = 0xFF
"""Marks a spare digit position (never a byte of UTF-8 text)."""
PIECE_BYTES = 1 << 20
"""About the most text rendered at once by numpy (bounds the arrays held at a time)."""
MIN_RUN_SEGMENTS = 3
"""Runs with fewer segments than this are filled by ``%`` (a new skeleton costs more)."""
MIN_RUN_ROWS = 48
"""Runs with fewer rows than this are filled by ``%``."""
_SPEC_CAP = 256
"""Skeletons kept (the cache is emptied when it is full: bounded memory for varying runs)."""


Pieces = Iterable[Any]
"""Encoded text in order: ``bytes`` or buffers of numpy byte arrays, produced lazily (each
piece is written before the next is rendered: bounded memory) and written without copies."""


def write_pieces(fh: IO[str], pieces: Pieces) -> None:
    """Append ``pieces`` to the text handle ``fh``: to its binary buffer after flushing its
    text layer (no decode / encode round trip), or decoded when it has no buffer or where the
    text layer would translate ``\\n`` (not on POSIX)."""
    buffer = getattr(fh, "buffer", None)
    if buffer is None or os.linesep != "\n":
        fh.write(b"".join(pieces).decode("utf-8"))
        return
    fh.flush()
    for piece in pieces:
        buffer.write(piece)


def percent_fill(templates: Sequence[str], idx: np.ndarray, vals: np.ndarray) -> str:
    """Row ``i`` is ``templates[idx[i]]`` filled with ``vals[i]`` (Python's ``%``)."""
    rows = idx.tolist()
    if not rows:
        return ""
    fmt = "".join([templates[i] for i in rows])
    return fmt % tuple(vals.ravel().tolist())


class _Parsed:
    """One template cut into its literal parts (UTF-8) and its conversions."""

    __slots__ = ("lits", "minw")

    def __init__(self, lits: list[bytes], minw: list[int]) -> None:
        self.lits = lits
        self.minw = minw
        """Per value: 0 (prints nothing), 1 (``%d``) or N (``%0Nd``)."""


def _parse(template: str) -> _Parsed | None:
    lits: list[bytes] = []
    minw: list[int] = []
    pos = 0
    text: list[str] = []
    for m in _CONV.finditer(template):
        text.append(template[pos:m.start()])
        pos = m.end()
        conv = m.group(1)
        if conv == "%":
            text.append("%")
            continue
        lits.append("".join(text).encode("utf-8"))
        text = []
        minw.append(0 if conv == ".0s" else int(m.group(2)) if m.group(2) else 1)
    rest = template[pos:]
    if "%" in rest:
        return None
    text.append(rest)
    lits.append("".join(text).encode("utf-8"))
    if any(_FILL in lit for lit in lits):
        return None
    return _Parsed(lits, minw)


class _Spec:
    """The rendering of one segment shape: skeleton and where each digit goes."""

    __slots__ = ("byte_chunk", "byte_off", "cols", "div", "fld", "skel", "src", "var_cols",
                 "var_field", "var_offset", "var_width")

    def __init__(self, skel: np.ndarray, fld: np.ndarray, div: np.ndarray, cols: np.ndarray,
                 src: np.ndarray, var: list[tuple[int, int, int]]) -> None:
        self.skel = skel
        self.fld = fld
        self.div = div
        self.cols = cols
        self.src = src
        self.byte_chunk = src // 4
        """The chunk of each digit byte, and its byte in the chunk's word."""
        self.byte_off = src % 4
        # every digit position of a number whose width varies in the run: its column in the
        # skeleton, the number's value column and room, and the digit's offset in it
        as_int: Any = np.intp
        self.var_cols = np.array([p + j for p, wd, _ in var for j in range(wd)], dtype=as_int)
        self.var_field = np.array([c for _, wd, c in var for _ in range(wd)], dtype=as_int)
        self.var_width = np.array([wd for _, wd, _ in var for _ in range(wd)], dtype=np.int64)
        self.var_offset = np.array([j for _, wd, _ in var for j in range(wd)], dtype=np.int64)


_EMPTY = np.zeros(0, dtype=np.intp)


class _Plan(NamedTuple):
    """One run's skeleton (its fixed digits written in) and its moving 3-digit chunks: the
    value column and divisor of each, the skeleton column of each digit byte and the byte
    of the chunk words it takes."""

    skel: np.ndarray
    fld: np.ndarray
    div: np.ndarray
    cols: np.ndarray
    src: np.ndarray


class BlockFormatter:
    """Fills rows of a growing list of %-templates (see the module docstring).

    ``templates`` is kept by reference: callers append to it, and new entries are parsed on
    the next :meth:`fill`. Every template consumes the same number of values per row.
    """

    def __init__(self, templates: list[str]) -> None:
        self.templates = templates
        self._parsed: list[_Parsed | None] = []
        self._minw = np.zeros((0, 0), dtype=np.int64)
        self._specs: dict[bytes, _Spec] = {}
        self._plans: dict[bytes, tuple[np.ndarray, ...]] = {}
        self._colmin = np.zeros(0, dtype=np.int64)

    def _sync(self, k: int) -> None:
        """Parse the templates added since the last call (rows of a template that cannot be
        rendered here, or that takes another number of values, go through ``%``)."""
        if self._minw.shape[1] != k:
            self._parsed = []
            self._minw = np.zeros((0, k), dtype=np.int64)
        have = len(self._parsed)
        if have == len(self.templates):
            return
        new = [_parse(t) for t in self.templates[have:]]
        rows = np.full((len(new), k), -1, dtype=np.int64)
        for i, p in enumerate(new):
            if p is not None and len(p.minw) == k:
                rows[i] = p.minw
        self._parsed.extend(new)
        self._minw = np.concatenate((self._minw, rows))
        self._colmin = np.where(self._minw > 0, self._minw, 99).min(axis=0)

    def put(self, i: int, template: str) -> None:
        """Set template ``i`` (the list grows with empty templates as needed)."""
        if i < len(self.templates) and self.templates[i] == template:
            return
        while len(self.templates) <= i:
            self.templates.append("")
        self.templates[i] = template
        if i < len(self._parsed):  # parsed already: parse again, forget baked skeletons
            self._parsed = self._parsed[:i]
            self._minw = self._minw[:i]
            self._specs.clear()
            self._plans.clear()

    def fill(self, idx: np.ndarray, vals: np.ndarray, starts: np.ndarray | None = None) -> str:
        """Rows ``templates[idx[i]] % vals[i]`` joined; ``starts``: the first row of each
        segment (ascending, from 0; None: every row is a segment)."""
        return b"".join(self.pieces(idx, vals, starts)).decode("utf-8")

    def pieces(self, idx: np.ndarray, vals: np.ndarray,
               starts: np.ndarray | None = None) -> Iterator[Any]:
        """:meth:`fill`'s text, UTF-8 encoded, as pieces in order (each at most about
        :data:`PIECE_BYTES` when rendered by numpy)."""
        n = len(idx)
        if not n:
            return
        vals = np.ascontiguousarray(vals, dtype=np.int64).reshape(n, -1)
        k = vals.shape[1]
        self._sync(k)
        minw = self._minw[idx]
        if n < MIN_RUN_ROWS or k == 0 or bool((minw < 0).any()) or int(vals.min()) < 0:
            yield percent_fill(self.templates, idx, vals).encode("utf-8")
            return
        table = self._width_table(vals)
        if table is not None:
            # every number's width follows from its template alone in this block (the
            # usual case): no per-value widths, and equal template runs have equal widths
            for a, seg, count in self._runs(idx, starts, n):
                b = a + seg * count
                if count < MIN_RUN_SEGMENTS or b - a < MIN_RUN_ROWS:
                    yield percent_fill(self.templates, idx[a:b], vals[a:b]).encode("utf-8")
                else:
                    seg_idx = idx[a:a + seg]
                    yield from self._render(seg_idx, vals[a:b], None, seg, count,
                                            table[seg_idx].ravel())
            return
        width = self._widths(vals, minw, self._colmin)
        for a, seg, count in self._runs(idx, starts, n):
            b = a + seg * count
            if count < MIN_RUN_SEGMENTS or b - a < MIN_RUN_ROWS:
                yield percent_fill(self.templates, idx[a:b], vals[a:b]).encode("utf-8")
                continue
            seg_idx = idx[a:a + seg]
            w = width[a:b].reshape(count, seg * k)
            change = np.flatnonzero((w[1:] != w[:-1]).any(axis=1)) + 1
            if len(change) * MIN_RUN_SEGMENTS * 4 <= count:
                # widths change at a few steps only (a counter gaining a digit): render
                # each stretch of equal widths, or by % when it is short
                edges = [0, *change.tolist(), count]
                for s0, s1 in itertools.pairwise(edges):
                    r0, r1 = a + s0 * seg, a + s1 * seg
                    if s1 - s0 < MIN_RUN_SEGMENTS or r1 - r0 < MIN_RUN_ROWS:
                        yield percent_fill(self.templates, idx[r0:r1],
                                           vals[r0:r1]).encode("utf-8")
                    else:
                        yield from self._render(seg_idx, vals[r0:r1], None, seg, s1 - s0,
                                                w[s0])
            else:
                yield from self._render(seg_idx, vals[a:b], w, seg, count)

    def _width_table(self, vals: np.ndarray) -> np.ndarray | None:
        """Printed widths per template and value column when no number's width varies
        inside the block beyond what zero padding hides; else None."""
        lo, hi = vals.min(axis=0), vals.max(axis=0)
        nd_lo = np.searchsorted(_POW10, lo, side="right")
        nd_hi = np.searchsorted(_POW10, hi, side="right") + 1
        if bool(((nd_lo + 1 != nd_hi) & (nd_hi > self._colmin)).any()):
            return None
        return np.where(self._minw == 0, 0, np.maximum(self._minw, nd_hi))

    @staticmethod
    def _widths(vals: np.ndarray, minw: np.ndarray, colmin: np.ndarray) -> np.ndarray:
        """Printed width of every value (0 where the template prints nothing); ``colmin``:
        per value column, the narrowest zero-padded width any template gives it."""
        lo, hi = vals.min(axis=0), vals.max(axis=0)
        nd_lo = (np.searchsorted(_POW10, lo, side="right") + 1).tolist()
        nd_hi = (np.searchsorted(_POW10, hi, side="right") + 1).tolist()
        nd = np.empty(vals.shape, dtype=np.int64)
        nd[:] = nd_hi
        for c, (a, b) in enumerate(zip(nd_lo, nd_hi, strict=True)):
            if a != b and b > colmin[c]:  # digits that change inside the block and
                # show (not hidden by zero padding): count per value
                col = vals[:, c]
                digits = np.full(len(col), a, dtype=np.int64)
                for p in range(a, b):
                    digits += col >= 10 ** p
                nd[:, c] = digits
        return np.where(minw == 0, 0, np.maximum(minw, nd))

    @staticmethod
    def _runs(idx: np.ndarray, starts: np.ndarray | None,
              n: int) -> list[tuple[int, int, int]]:
        """(first row, segment length, segments) of each run of consecutive segments with
        the same length and template sequence."""
        if starts is None or len(starts) <= 1:
            if starts is not None and len(starts) == 1:
                return [(0, n, 1)]
            cut = np.flatnonzero(idx[1:] != idx[:-1]) + 1
            edges = [0, *cut.tolist(), n]
            return [(a, 1, b - a) for a, b in itertools.pairwise(edges)]
        bounds = np.append(starts, n)
        lens = np.diff(bounds)
        runs: list[tuple[int, int, int]] = []
        cut = np.flatnonzero(lens[1:] != lens[:-1]) + 1
        for s0, s1 in itertools.pairwise([0, *cut.tolist(), len(lens)]):
            seg, a, m = int(lens[s0]), int(bounds[s0]), s1 - s0
            if m == 1:
                runs.append((a, seg, 1))
                continue
            segs = idx[a:a + m * seg].reshape(m, seg)
            brk = np.flatnonzero((segs[1:] != segs[:-1]).any(axis=1)) + 1
            for t0, t1 in itertools.pairwise([0, *brk.tolist(), m]):
                runs.append((a + t0 * seg, seg, t1 - t0))
        return runs

    def _render(self, seg_idx: np.ndarray, vals: np.ndarray, w: np.ndarray | None, seg: int,
                count: int, same: np.ndarray | None = None) -> Iterator[Any]:
        """``count`` segments of the template sequence ``seg_idx``, a slice of about
        :data:`PIECE_BYTES` at a time; ``w``: the printed width of every value, (count,
        seg * values), or None with ``same``: the widths, equal in every segment."""
        k = vals.shape[1]
        if w is None:
            assert same is not None
            wmax = same
            var = np.zeros(len(same), dtype=bool)
        else:
            wmax = w.max(axis=0)
            var = wmax != w.min(axis=0)
        key = seg_idx.tobytes() + wmax.astype(np.int8).tobytes() + var.tobytes()
        spec = self._specs.get(key)
        if spec is None:
            if len(self._specs) >= _SPEC_CAP:
                self._specs.clear()
                self._plans.clear()
            spec = self._specs[key] = self._spec(seg_idx.tolist(), wmax.tolist(),
                                                 var.tolist(), k)
        v_all = vals.reshape(count, seg * k)
        plan = self._plan(spec, key, v_all)
        step = max(1, PIECE_BYTES // max(1, len(spec.skel)))
        for lo in range(0, count, step):
            yield self._slice(spec, plan, v_all[lo:lo + step],
                              None if w is None else w[lo:lo + step])

    def _plan(self, spec: _Spec, key: bytes, v: np.ndarray) -> _Plan:
        """The run's skeleton with every 3-digit chunk that is the same in all its segments
        (a duration, the high digits of a timestamp) written in, and where the others go."""
        if not len(spec.fld):
            return _Plan(spec.skel, *(_EMPTY,) * 4)
        lo = v.min(axis=0)[spec.fld]
        hi = v.max(axis=0)[spec.fld]
        fixed = lo // spec.div == hi // spec.div
        pkey = key + fixed.tobytes()
        parts = self._plans.get(pkey)
        if parts is None:
            if len(self._plans) >= _SPEC_CAP:
                self._plans.clear()
            moving = ~fixed
            b_fixed = fixed[spec.byte_chunk]
            b_moving = ~b_fixed
            rank_f = np.cumsum(fixed) - 1
            rank_m = np.cumsum(moving) - 1
            parts = self._plans[pkey] = (
                np.flatnonzero(fixed), spec.cols[b_fixed],
                rank_f[spec.byte_chunk[b_fixed]] * 4 + spec.byte_off[b_fixed],
                spec.fld[moving], spec.div[moving], spec.cols[b_moving],
                rank_m[spec.byte_chunk[b_moving]] * 4 + spec.byte_off[b_moving])
        f_chunks, f_cols, f_src, m_fld, m_div, m_cols, m_src = parts
        skel = spec.skel
        if len(f_chunks):
            skel = skel.copy()
            words = _TAB[lo[f_chunks] // spec.div[f_chunks] % 1000].view(np.uint8)
            skel[f_cols] = words[f_src]
        return _Plan(skel, m_fld, m_div, m_cols, m_src)

    @staticmethod
    def _slice(spec: _Spec, plan: _Plan, v: np.ndarray, w: np.ndarray | None) -> Any:
        """Segments ``v`` (values) with widths ``w`` of one run, as one buffer."""
        count = len(v)
        out = np.empty((count, len(plan.skel)), dtype=np.uint8)
        out[:] = plan.skel
        if len(plan.fld):
            digits = np.ascontiguousarray(_TAB[v[:, plan.fld] // plan.div % 1000]).view(
                np.uint8)
            out[:, plan.cols] = digits[:, plan.src]
        if w is None or not len(spec.var_cols):
            return out.reshape(-1).data
        # blank the spare leading digits of narrower numbers, then drop the blanks
        pad = spec.var_width - w[:, spec.var_field]
        blank = spec.var_offset < pad
        cols = out[:, spec.var_cols]
        cols[blank] = _FILL
        out[:, spec.var_cols] = cols
        flat = out.ravel()
        return flat[flat != _FILL].data

    def _spec(self, seg_idx: list[int], wmax: list[int], var: list[bool], k: int) -> _Spec:
        """The skeleton of one segment shape and, for every number, its 3-digit chunks (value
        column, divisor) and the skeleton column and chunk byte of each digit."""
        parsed = [self._parsed[t] for t in seg_idx]
        parts: list[bytes] = []
        lit_len: list[int] = []
        for r, p in enumerate(parsed):
            assert p is not None
            for lit, wd in zip(p.lits, wmax[r * k:(r + 1) * k], strict=False):
                parts.append(lit)
                parts.append(b"0" * wd)
            parts.append(p.lits[k])
            lit_len.extend(len(lit) for lit in p.lits)
        skel = np.frombuffer(b"".join(parts), dtype=np.uint8)
        rows = len(parsed)
        width = np.array(wmax, dtype=np.int64)
        seq = np.empty((rows, 2 * k + 1), dtype=np.int64)
        seq[:, 0::2] = np.array(lit_len, dtype=np.int64).reshape(rows, k + 1)
        seq[:, 1::2] = width.reshape(rows, k)
        flat = seq.ravel()
        starts = (np.cumsum(flat) - flat).reshape(rows, 2 * k + 1)[:, 1::2].ravel()
        assert int(flat.sum()) == len(skel)
        field = np.flatnonzero(width > 0)
        w = width[field]
        pos = starts[field]
        nch = (w + 2) // 3
        lead = w - 3 * (nch - 1)  # digits shown by each number's first chunk (1-3)
        chunk_field = np.repeat(np.arange(len(field)), nch)
        j = np.arange(len(chunk_field)) - np.repeat(np.cumsum(nch) - nch, nch)
        div = 1000 ** (nch[chunk_field] - 1 - j)
        shown = np.where(j == 0, lead[chunk_field], 3)
        start = np.where(j == 0, 0, lead[chunk_field] + 3 * (j - 1))
        byte_chunk = np.repeat(np.arange(len(chunk_field)), shown)
        b = np.arange(len(byte_chunk)) - np.repeat(np.cumsum(shown) - shown, shown)
        src = byte_chunk * 4 + (3 - shown[byte_chunk]) + b
        cols = (pos[chunk_field] + start)[byte_chunk] + b
        is_var = np.array(var, dtype=bool)[field]
        varying = list(zip(pos[is_var].tolist(), w[is_var].tolist(), field[is_var].tolist(),
                           strict=True))
        as_int: Any = np.intp
        return _Spec(skel, field[chunk_field].astype(as_int), div.astype(np.int64),
                     cols.astype(as_int), src.astype(as_int), varying)
