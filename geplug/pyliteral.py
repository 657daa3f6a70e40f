"""A reader of Python literals in text a user gave, without Python's compiler.

Two readers take Python literal syntax from a user's file: the ``custom_op.parameter_map[...]``
lines of a TF snippet (:func:`geplug.config.parse_tf.parse_tf_snippet`) and the header of a
``.npy`` input (:mod:`geplug.npy`). ``ast.literal_eval`` compiles the text, so hostile text
reaches the compiler: an invalid escape sequence (``"C:\\dir"``) is a ``DeprecationWarning``
(a ``SyntaxWarning`` from Python 3.12) printed on the user's terminal or, under
``-W error``, an exception; a NUL byte, deep nesting or a huge literal make other errors. This
reader accepts the literal forms those inputs use and nothing else, and every mistake is one
:class:`LiteralError` saying what and where:

- strings and bytes with the prefixes ``r``, ``b``, ``u``, ``rb``/``br`` (any case), single,
  double or triple quotes, Python's escape sequences, adjacent literals joined;
- integers (decimal, ``0x``/``0o``/``0b``, underscores) with an optional sign, at most
  :data:`MAX_INT_DIGITS` digits; floats (``1.5``, ``1e-3``, ``inf`` is not a literal);
- ``True``, ``False``, ``None``; tuples, lists and dicts of these, nested at most
  :data:`geplug.limits.MAX_DEPTH` levels.

An invalid escape sequence is an error here (Python keeps the backslash and warns; the value
the user meant is ambiguous, so geplug asks for ``\\\\`` or a raw string).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from geplug.limits import MAX_DEPTH, escape_controls

__all__ = ["MAX_INT_DIGITS", "LiteralError", "literal"]

MAX_INT_DIGITS = 4300
"""Longest integer literal (Python's own limit for int/str conversion)."""

_TOKEN = re.compile(r"""
    (?P<space>[ \t\f\r\n]+|\\\r?\n)
  | (?P<string>(?P<prefix>[rRbBuU]|[bB][rR]|[rR][bB])?(?P<quote>'''|\"\"\"|'|\"))
  | (?P<number>(?:0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+)
               |(?:(?:[0-9](?:_?[0-9])*)?\.[0-9](?:_?[0-9])*|[0-9](?:_?[0-9])*\.?)
                (?:[eE][+-]?[0-9](?:_?[0-9])*)?)
  | (?P<name>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<punct>[-+()\[\]{},:])
""", re.VERBOSE)

_SIMPLE_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "f": "\f",
                   "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\n": ""}
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|[0-7]{1,3}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}"
                     r"|N\{[^}\n]{1,100}\}|\r?\n|.|$)", re.DOTALL)


class LiteralError(ValueError):
    """The text is not a literal this reader accepts; the message says what and where."""


def _shown(text: str) -> str:
    return escape_controls(text if len(text) <= 40 else text[:40] + "...")


def _unescape(body: str, *, is_bytes: bool, at: int) -> str | bytes:
    """The value of a non-raw string literal's body (between its quotes)."""
    def one(match: re.Match[str]) -> str:
        seq = match.group(1)
        head = seq[:1]
        if seq in _SIMPLE_ESCAPES or seq == "\r\n":
            return _SIMPLE_ESCAPES.get(seq, "")
        if head == "x" and len(seq) == 3:
            return chr(int(seq[1:], 16))
        if head.isdigit() and head in "01234567":
            code = int(seq, 8)
            if is_bytes and code > 0xFF:
                raise LiteralError(f"octal escape '\\{seq}' at offset {at} is larger than a "
                                   "byte")
            return chr(code)
        if not is_bytes and len(seq) in (5, 9) and head == "uU"[len(seq) == 9]:
            code = int(seq[1:], 16)
            if code > 0x10FFFF:
                raise LiteralError(f"escape '\\{seq}' at offset {at} is not a Unicode "
                                   "character")
            return chr(code)
        if not is_bytes and seq.startswith("N{"):
            try:
                return unicodedata.lookup(seq[2:-1])
            except KeyError:
                raise LiteralError(f"escape '\\{_shown(seq)}' at offset {at} names no "
                                   "Unicode character") from None
        raise LiteralError(
            f"invalid escape sequence '\\{_shown(seq)}' in the string at offset {at}; write "
            "'\\\\' for a backslash or use a raw string (r'...')")

    text = _ESCAPE.sub(one, body)
    if not is_bytes:
        return text
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        raise LiteralError(f"bytes literal at offset {at} holds a non-ASCII character"
                           ) from None


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> LiteralError:
        near = self.text[self.pos:self.pos + 20]
        return LiteralError(f"{what} at offset {self.pos}"
                            + (f" (near {_shown(near)!r})" if near else " (end of text)"))

    def skip(self) -> None:
        while self.pos < len(self.text):
            match = _TOKEN.match(self.text, self.pos)
            if match is None or match.lastgroup != "space":
                return
            self.pos = match.end()

    def peek(self) -> str:
        self.skip()
        return self.text[self.pos:self.pos + 1]

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise self.fail(f"expected {char!r}")
        self.pos += 1

    def string(self, match: re.Match[str]) -> str | bytes:
        prefix = (match.group("prefix") or "").lower()
        quote = match.group("quote")
        start = match.end()
        pos = start
        while True:
            end = self.text.find(quote, pos)
            if end < 0:
                raise self.fail("unterminated string")
            slashes = len(self.text[start:end]) - len(self.text[start:end].rstrip("\\"))
            if slashes % 2 == 0:
                break
            pos = end + 1
        body = self.text[start:end]
        if len(quote) == 1 and "\n" in body.replace("\\\n", ""):
            raise self.fail("a line break inside a one-line string")
        is_bytes = "b" in prefix
        at = self.pos
        self.pos = end + len(quote)
        if is_bytes and any(ord(c) > 0x7F for c in body):
            raise LiteralError(f"bytes literal at offset {at} holds a non-ASCII character")
        if "r" in prefix:
            return body.encode("ascii") if is_bytes else body
        return _unescape(body, is_bytes=is_bytes, at=at)

    def value(self, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise self.fail(f"literal nested deeper than {MAX_DEPTH} levels")
        self.skip()
        match = _TOKEN.match(self.text, self.pos)
        if match is None:
            raise self.fail("not a literal")
        kind = match.lastgroup
        if kind == "string":
            parts = [self.string(match)]
            while True:  # adjacent literals are one ("a" "b")
                self.skip()
                match = _TOKEN.match(self.text, self.pos)
                if match is None or match.lastgroup != "string":
                    break
                parts.append(self.string(match))
            if len({type(p) for p in parts}) > 1:
                raise self.fail("bytes and str literals joined")
            if isinstance(parts[0], bytes):
                return b"".join(p for p in parts if isinstance(p, bytes))
            return "".join(p for p in parts if isinstance(p, str))
        if kind == "number":
            value = self.number(match.group())
            self.pos = match.end()
            return value
        if kind == "name":
            word = match.group()
            if word not in ("True", "False", "None"):
                raise self.fail(f"{_shown(word)!r} is not a literal")
            self.pos = match.end()
            return {"True": True, "False": False, "None": None}[word]
        char = match.group()
        self.pos = match.end()
        if char in "+-":
            self.skip()
            number = _TOKEN.match(self.text, self.pos)
            if number is None or number.lastgroup != "number":
                raise self.fail(f"a number after {char!r}")
            self.pos = number.start()
            value = self.number(number.group())
            self.pos = number.end()
            return -value if char == "-" else value
        if char in "([":
            return self.sequence(depth, ")" if char == "(" else "]")
        if char == "{":
            return self.mapping(depth)
        self.pos = match.start()
        raise self.fail("not a literal")

    def number(self, text: str) -> int | float:
        digits = text.replace("_", "")
        if len(digits) > MAX_INT_DIGITS:
            raise self.fail(f"a number of {len(digits)} digits (at most {MAX_INT_DIGITS})")
        if digits[:2].lower() in ("0x", "0o", "0b"):
            return int(digits, 0)
        if any(c in digits for c in ".eE"):
            return float(digits)
        if len(digits) > 1 and digits[0] == "0" and digits.strip("0"):
            raise self.fail(f"leading zeros in {text!r} (write 0o{digits.lstrip('0')} for "
                            "octal)")
        return int(digits)

    def sequence(self, depth: int, close: str) -> tuple[Any, ...] | list[Any]:
        items: list[Any] = []
        trailing_comma = False
        while self.peek() != close:
            if not self.peek():
                raise self.fail(f"expected {close!r}")
            items.append(self.value(depth + 1))
            trailing_comma = self.peek() == ","
            if trailing_comma:
                self.pos += 1
            elif self.peek() != close:
                raise self.fail(f"expected ',' or {close!r}")
        self.pos += 1
        if close == "]":
            return items
        if len(items) == 1 and not trailing_comma:
            return items[0]  # (x) is x, as in Python
        return tuple(items)

    def mapping(self, depth: int) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        while self.peek() != "}":
            if not self.peek():
                raise self.fail("expected '}'")
            key = self.value(depth + 1)
            try:
                hash(key)
            except TypeError:
                raise self.fail("a list or dict as a dict key") from None
            self.expect(":")
            result[key] = self.value(depth + 1)
            if self.peek() == ",":
                self.pos += 1
            elif self.peek() != "}":
                raise self.fail("expected ',' or '}'")
        self.pos += 1
        return result


def literal(text: str) -> Any:
    """The value of the Python literal ``text`` (the forms of the module docstring), or a
    :class:`LiteralError` naming what is wrong and the offset. Never warns."""
    reader = _Reader(text.replace("\r\n", "\n").replace("\r", "\n"))  # as Python reads source
    value = reader.value(0)
    if reader.peek():
        raise reader.fail("unexpected text after the literal")
    return value
