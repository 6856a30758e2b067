"""Regular expression (Python / ECMAScript syntax) -> grammar IR.

Example::

    >>> from xmask.grammar.regex import regex_to_grammar
    >>> from xmask.grammar.recognizer import Recognizer
    >>> r = Recognizer(regex_to_grammar(r"[a-z]+\\d{2,3}"))
    >>> r.accepts(b"abc12"), r.accepts(b"abc1")
    (True, False)
    >>> Recognizer(regex_to_grammar(r"^ab", search=True)).accepts(b"abxyz")
    True

The regex works on Unicode *code points*; each character, class or ``.`` becomes a UTF-8
:class:`~xmask.grammar.ir.CharClass` (or a :class:`~xmask.grammar.ir.Bytes` literal), so the
grammar matches the UTF-8 encoding of the strings the regex matches.  Quantifiers become
:class:`~xmask.grammar.ir.Repeat` nodes (never unrolled).

Supported syntax (the common subset of Python ``re`` and JavaScript ``RegExp``):

* literals; ``.`` = any code point except ``\\n`` (Python semantics: ``\\r``, U+2028 and
  U+2029 *are* matched, unlike JavaScript);
* classes ``[...]`` / ``[^...]`` with ranges and escapes.  A ``]`` right after ``[`` or
  ``[^`` is rejected because Python and JavaScript disagree on it (escape it as ``\\]``);
* shorthands (JavaScript semantics, ASCII for ``\\d`` / ``\\w`` as with Python's
  ``re.ASCII``): ``\\d`` = ``[0-9]``, ``\\w`` = ``[A-Za-z0-9_]``, ``\\s`` = the JavaScript
  white space set ``[ \\t\\n\\r\\f\\v\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f
  \\u3000\\ufeff]``, and their complements ``\\D \\W \\S`` (also inside classes);
* escapes ``\\t \\n \\r \\f \\v \\0 \\xHH \\uHHHH \\u{H...} \\UHHHHHHHH \\N{NAME} \\cX``,
  ``\\b`` (backspace) inside classes, and any escaped non-alphanumeric ASCII character
  (``\\. \\* \\/ \\- ...``) or non-ASCII character as itself.  ``\\uHHHH\\uHHHH`` surrogate
  pairs are combined into one code point; a lone surrogate is an error outside classes;
* quantifiers ``* + ? {m} {m,} {m,n}`` and their lazy forms (same language as greedy).
  A ``{`` that does not start a quantifier is a literal.  ``{,n}`` and ``{,}`` are rejected
  (Python reads a quantifier, JavaScript a literal).  Bounds above 10,000 are rejected;
* groups ``( )``, ``(?: )``, ``(?P<name> )``, ``(?<name> )``; alternation with empty
  branches;
* anchors ``^`` / ``\\A`` only at the start and ``$`` / ``\\Z`` only at the end of the
  pattern or of a top-level alternative.  ``$`` means *end of string* (JavaScript; Python's
  ``$`` also matches before a final ``\\n``, which is not replicated).

Semantics: ``search=False`` is a full match (anchors at the ends are no-ops).
``search=True`` is an unanchored search (JSON Schema ``pattern``): the language is
``[\\s\\S]* R [\\s\\S]*`` (any code points, newlines included), where a leading ``^`` removes
the prefix and a trailing ``$`` the suffix -- per top-level alternative, so ``^a|b$`` becomes
``a[\\s\\S]*|[\\s\\S]*b``.

Rejected with :class:`~xmask.errors.RegexSyntaxError` (with the 0-based ``position``):
backreferences (``\\1``, ``\\k<name>``, ``(?P=name)``), lookaround, ``\\b``/``\\B`` word
boundaries, inline flags and other ``(?...)`` extensions, possessive quantifiers,
``\\p{...}`` property classes, octal escapes, unknown letter escapes, and syntax errors.
"""

from __future__ import annotations

import unicodedata
from typing import List, Optional, Tuple

from ..errors import RegexSyntaxError
from .ir import (
    EPSILON,
    MAX_CODE_POINT,
    Bytes,
    CharClass,
    Expr,
    Grammar,
    Repeat,
    complement_ranges,
    make_choice,
    make_seq,
)

__all__ = ["MAX_REPEAT_BOUND", "regex_to_expr", "regex_to_grammar"]

MAX_REPEAT_BOUND = 10_000

_DIGIT = ((0x30, 0x39),)
_WORD = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
_SPACE = (
    (0x09, 0x0D),
    (0x20, 0x20),
    (0xA0, 0xA0),
    (0x1680, 0x1680),
    (0x2000, 0x200A),
    (0x2028, 0x2029),
    (0x202F, 0x202F),
    (0x205F, 0x205F),
    (0x3000, 0x3000),
    (0xFEFF, 0xFEFF),
)
_UNIVERSE = ((0, MAX_CODE_POINT),)
_SHORTHANDS = {"d": _DIGIT, "w": _WORD, "s": _SPACE}
_CONTROL_ESCAPES = {"t": 0x09, "n": 0x0A, "r": 0x0D, "f": 0x0C, "v": 0x0B}
_HEX = frozenset("0123456789abcdefABCDEF")
_DIGITS = frozenset("0123456789")

_ANY = CharClass((), negated=True)  # any code point (the search prefix / suffix)
_DOT = CharClass(((0x0A, 0x0A),), negated=True)


def regex_to_expr(pattern: str, *, search: bool = False) -> Expr:
    """The IR expression of the strings (as UTF-8) matched by ``pattern``.

    ``search=False``: the regex must match the whole string; ``search=True``: it may match
    anywhere (``^`` / ``$`` anchor the ends).  See the module docstring for the syntax.

    Example::

        >>> regex_to_expr("ab?")
        Seq(items=(Bytes(data=b'a'), Repeat(item=Bytes(data=b'b'), min=0, max=1)))
    """
    if not isinstance(pattern, str):
        raise TypeError(f"regex pattern must be a str, not {type(pattern).__name__}")
    branches = _Parser(pattern).parse()
    if not search:
        return make_choice([body for _, body, _ in branches])
    free = Repeat(_ANY, 0, None)
    if all(b[0] == branches[0][0] and b[2] == branches[0][2] for b in branches):
        start, end = branches[0][0], branches[0][2]
        body = make_choice([body for _, body, _ in branches])
        return make_seq(([] if start else [free]) + [body] + ([] if end else [free]))
    return make_choice(
        [make_seq(([] if s else [free]) + [body] + ([] if e else [free])) for s, body, e in branches]
    )


def regex_to_grammar(pattern: str, *, search: bool = False, root_rule_name: str = "root") -> Grammar:
    """A one-rule :class:`Grammar` for ``pattern`` (see :func:`regex_to_expr`).

    Example::

        >>> print(regex_to_grammar("(?:yes|no)!*"))
        root ::= ("yes" | "no") "!"*
    """
    return Grammar({root_rule_name: regex_to_expr(pattern, search=search)}, root=root_rule_name)


# ---------------------------------------------------------------------------- IR helpers

def _char(cp: int) -> Expr:
    return Bytes(chr(cp).encode("utf-8"))


def _class(ranges, negated: bool) -> Expr:
    cls = CharClass(tuple(ranges), negated=negated)
    if not negated and len(cls.ranges) == 1 and cls.ranges[0][0] == cls.ranges[0][1]:
        cp = cls.ranges[0][0]
        if not 0xD800 <= cp <= 0xDFFF:
            return _char(cp)
    return cls


def _repeat(item: Expr, lo: int, hi: Optional[int]) -> Expr:
    if hi == 0 or item == EPSILON:
        return EPSILON
    if lo == 1 and hi == 1:
        return item
    if (isinstance(item, Repeat) and hi is None and lo <= 1 and item.min <= 1
            and (item.max is None or item.min == 0)):
        # (x*)* (x+)* (x?)* (x*)+ (x+)+ (x?)+  ->  x* or x+
        return Repeat(item.item, item.min * lo, None)
    if isinstance(item, Repeat) and lo == 0 and hi == 1 and item.min <= 1:
        # (x*)? (x+)? (x?)?  ->  x* / x?
        return Repeat(item.item, 0, item.max)
    return Repeat(item, lo, hi)


def _is_surrogate(cp: int) -> bool:
    return 0xD800 <= cp <= 0xDFFF


# ---------------------------------------------------------------------------- parser

class _Frame:
    """An open group (or the whole pattern): finished branches plus the current one."""

    __slots__ = ("anchor_end", "anchor_start", "branches", "items", "last", "start")

    def __init__(self, start: int):
        self.start = start  # position of '(' (-1 for the top level)
        self.branches: List[Tuple[bool, Expr, bool]] = []
        self.items: List[Expr] = []
        # what precedes the current position: "atom" (quantifiable), "quant" (a quantifier,
        # `lazy` after its lazy '?'), or None (start of a branch / an anchor)
        self.last: Optional[str] = None
        self.anchor_start = False
        self.anchor_end = False

    def end_branch(self) -> None:
        self.branches.append((self.anchor_start, make_seq(self.items), self.anchor_end))
        self.items = []
        self.last = None
        self.anchor_start = self.anchor_end = False


class _Parser:
    def __init__(self, pattern: str):
        self.p = pattern
        self.n = len(pattern)
        self.names: set = set()

    def error(self, message: str, pos: int) -> RegexSyntaxError:
        return RegexSyntaxError(message, self.p, pos)

    # ------------------------------------------------------------------ structure
    def parse(self) -> List[Tuple[bool, Expr, bool]]:
        p, n = self.p, self.n
        stack = [_Frame(-1)]
        i = 0
        while i < n:
            f = stack[-1]
            c = p[i]
            if c == "(":
                stack.append(_Frame(i))
                i = self.open_group(i)
                continue
            if c == ")":
                if len(stack) == 1:
                    raise self.error("unbalanced parenthesis: ')' without a matching '('", i)
                f.end_branch()
                stack.pop()
                parent = stack[-1]
                parent.items.append(make_choice([body for _, body, _ in f.branches]))
                parent.last = "atom"
                i += 1
                continue
            if c == "|":
                f.end_branch()
                i += 1
                continue
            if c == "^" or (c == "\\" and p[i + 1 : i + 2] == "A"):
                j = i + (1 if c == "^" else 2)
                if len(stack) > 1 or f.items or f.anchor_start:
                    raise self.error(
                        f"'{p[i:j]}' is only supported at the start of the pattern or of a "
                        "top-level alternative", i)
                f.anchor_start = True
                f.last = None
                i = j
                continue
            if c == "$" or (c == "\\" and p[i + 1 : i + 2] == "Z"):
                j = i + (1 if c == "$" else 2)
                if len(stack) > 1 or (j < n and p[j] != "|"):
                    raise self.error(
                        f"'{p[i:j]}' is only supported at the end of the pattern or of a "
                        "top-level alternative", i)
                f.anchor_end = True
                f.last = None
                i = j
                continue
            if c in "*+?":
                self.check_quantifiable(f, i, c)
                lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
                i = self.apply_quantifier(f, lo, hi, i + 1)
                continue
            if c == "{":
                q = self.parse_braces(i)
                if q is not None:
                    lo, hi, end = q
                    self.check_quantifiable(f, i, c)
                    i = self.apply_quantifier(f, lo, hi, end)
                    continue
                f.items.append(_char(0x7B))
                f.last = "atom"
                i += 1
                continue
            if c == "[":
                expr, i = self.parse_class(i)
            elif c == ".":
                expr, i = _DOT, i + 1
            elif c == "\\":
                kind, value, j = self.parse_escape(i, in_class=False)
                if kind == "set":
                    expr = value
                elif _is_surrogate(value):
                    raise self.error(f"lone surrogate U+{value:04X} cannot match UTF-8 text", i)
                else:
                    expr = _char(value)
                i = j
            else:
                cp, i = self.literal(i)
                if _is_surrogate(cp):
                    raise self.error(f"lone surrogate U+{cp:04X} cannot match UTF-8 text", i - 1)
                expr = _char(cp)
            f.items.append(expr)
            f.last = "atom"
        if len(stack) > 1:
            raise self.error("missing ')': unterminated group", stack[-1].start)
        stack[0].end_branch()
        return stack[0].branches

    def open_group(self, i: int) -> int:
        """Parse a group opener at ``i``; return the position after it."""
        p = self.p
        if p[i + 1 : i + 2] != "?":
            return i + 1
        rest = p[i + 2 : i + 4]
        if rest[:1] == ":":
            return i + 3
        if rest in ("<=", "<!") or rest[:1] in ("=", "!"):
            raise self.error("lookaround assertions are not supported", i)
        if rest[:1] == "<" or rest == "P<":
            j = i + (3 if rest[:1] == "<" else 4)
            close = p.find(">", j)
            if close < 0:
                raise self.error("missing '>' after group name", j)
            name = p[j:close]
            if not name.isidentifier():
                raise self.error(f"bad group name {name!r}", j)
            if name in self.names:
                raise self.error(f"redefinition of group name {name!r}", j)
            self.names.add(name)
            return close + 1
        if rest == "P=":
            raise self.error("backreferences are not supported", i)
        if rest[:1] == ">":
            raise self.error("atomic groups are not supported", i)
        if rest[:1] == "#":
            raise self.error("comment groups are not supported", i)
        if not rest:
            raise self.error("unexpected end of pattern after '(?'", i)
        raise self.error("unsupported group extension or inline flags '(?" + rest[:1] + "'", i)

    # ------------------------------------------------------------------ quantifiers
    def check_quantifiable(self, f: _Frame, i: int, c: str) -> None:
        if f.last == "atom":
            return
        if f.last == "quant" and c == "+":
            raise self.error("possessive quantifiers are not supported", i)
        if f.last is not None:
            raise self.error("multiple repeat", i)
        raise self.error("nothing to repeat", i)

    def apply_quantifier(self, f: _Frame, lo: int, hi: Optional[int], i: int) -> int:
        f.items[-1] = _repeat(f.items[-1], lo, hi)
        f.last = "quant"
        if i < self.n and self.p[i] == "?":  # lazy: same language
            f.last = "lazy"
            i += 1
        return i

    def parse_braces(self, i: int) -> Optional[Tuple[int, Optional[int], int]]:
        """``(min, max, end)`` if a ``{m}`` / ``{m,}`` / ``{m,n}`` quantifier starts at ``i``,
        ``None`` if the ``{`` is a literal."""
        p, n = self.p, self.n
        j = i + 1
        while j < n and p[j] in _DIGITS:
            j += 1
        lo_text = p[i + 1 : j]
        hi_text = lo_text
        comma = j < n and p[j] == ","
        if comma:
            k = j + 1
            while k < n and p[k] in _DIGITS:
                k += 1
            hi_text = p[j + 1 : k]
            j = k
        if j >= n or p[j] != "}":
            return None
        if not lo_text:
            if not comma:
                return None  # "{}"
            raise self.error(
                "'{,n}' is ambiguous (a quantifier in Python, a literal in JavaScript); "
                "write '{0,n}' or escape the '{'", i)
        lo = int(lo_text)
        hi = int(hi_text) if hi_text else None
        if lo > MAX_REPEAT_BOUND or (hi is not None and hi > MAX_REPEAT_BOUND):
            raise self.error(f"repeat bound too large (the maximum is {MAX_REPEAT_BOUND})", i)
        if hi is not None and hi < lo:
            raise self.error("min repeat greater than max repeat", i)
        return lo, hi, j + 1

    # ------------------------------------------------------------------ characters
    def literal(self, i: int) -> Tuple[int, int]:
        """A literal pattern character at ``i`` (combining a UTF-16 surrogate pair)."""
        cp = ord(self.p[i])
        if 0xD800 <= cp <= 0xDBFF and i + 1 < self.n and 0xDC00 <= ord(self.p[i + 1]) <= 0xDFFF:
            return 0x10000 + ((cp - 0xD800) << 10) + (ord(self.p[i + 1]) - 0xDC00), i + 2
        return cp, i + 1

    def hex_digits(self, start: int, j: int, width: int, what: str) -> Tuple[int, int]:
        digits = self.p[j : j + width]
        if len(digits) != width or any(d not in _HEX for d in digits):
            raise self.error(f"incomplete escape '{what}': expected {width} hex digits", start)
        return int(digits, 16), j + width

    def parse_escape(self, i: int, in_class: bool):
        """Parse an escape at ``i`` (a backslash).  Returns ``("char", code point, end)``,
        ``("set", CharClass, end)`` outside classes, or ``("ranges", ranges, end)`` inside."""
        p, n = self.p, self.n
        if i + 1 >= n:
            raise self.error("bad escape (end of pattern)", i)
        c = p[i + 1]
        low = c.lower()
        if low in _SHORTHANDS:
            ranges = _SHORTHANDS[low]
            if in_class:
                if c != low:
                    ranges = complement_ranges(ranges, _UNIVERSE)
                return "ranges", ranges, i + 2
            return "set", CharClass(ranges, negated=c != low), i + 2
        if c in _CONTROL_ESCAPES:
            return "char", _CONTROL_ESCAPES[c], i + 2
        if c == "b":
            if in_class:
                return "char", 0x08, i + 2
            raise self.error("word boundaries (\\b) are not supported", i)
        if c == "B":
            raise self.error("word boundaries (\\B) are not supported", i)
        if c == "0":
            if i + 2 < n and p[i + 2] in _DIGITS:
                raise self.error("octal escapes are not supported", i)
            return "char", 0, i + 2
        if c in "123456789":
            if in_class:
                raise self.error("octal escapes are not supported", i)
            raise self.error("backreferences are not supported", i)
        if c == "x":
            cp, j = self.hex_digits(i, i + 2, 2, "\\x")
            return "char", cp, j
        if c == "u":
            if p[i + 2 : i + 3] == "{":
                close = p.find("}", i + 3)
                digits = p[i + 3 : close] if close >= 0 else ""
                if not digits or len(digits) > 8 or any(d not in _HEX for d in digits):
                    raise self.error("bad escape '\\u{...}': expected 1 to 6 hex digits", i)
                cp = int(digits, 16)
                if cp > MAX_CODE_POINT:
                    raise self.error(f"escape '\\u{{{digits}}}' is beyond U+10FFFF", i)
                return "char", cp, close + 1
            cp, j = self.hex_digits(i, i + 2, 4, "\\u")
            if 0xD800 <= cp <= 0xDBFF and p[j : j + 2] == "\\u":
                try:
                    low_cp, k = self.hex_digits(j, j + 2, 4, "\\u")
                except RegexSyntaxError:
                    low_cp, k = 0, j
                if 0xDC00 <= low_cp <= 0xDFFF:
                    return "char", 0x10000 + ((cp - 0xD800) << 10) + (low_cp - 0xDC00), k
            return "char", cp, j
        if c == "U":
            cp, j = self.hex_digits(i, i + 2, 8, "\\U")
            if cp > MAX_CODE_POINT:
                raise self.error("escape '\\U' is beyond U+10FFFF", i)
            return "char", cp, j
        if c == "N":
            close = p.find("}", i + 3) if p[i + 2 : i + 3] == "{" else -1
            if close < 0:
                raise self.error("bad escape '\\N': expected '\\N{NAME}'", i)
            try:
                ch = unicodedata.lookup(p[i + 3 : close])
            except KeyError:
                raise self.error(f"undefined character name {p[i + 3:close]!r}", i) from None
            return "char", ord(ch), close + 1
        if c == "c":
            letter = p[i + 2 : i + 3]
            if not (letter.isascii() and letter.isalpha()):
                raise self.error("bad escape '\\c': expected a letter A-Z or a-z", i)
            return "char", ord(letter) % 32, i + 3
        if c in "pP":
            raise self.error(f"unicode property classes (\\{c}{{...}}) are not supported", i)
        if c == "k":
            raise self.error("backreferences (\\k<name>) are not supported", i)
        if c in "AZ" and in_class:
            raise self.error(f"bad escape \\{c} in a character class", i)
        if c.isascii() and c.isalnum():
            raise self.error(f"bad escape \\{c}", i)
        cp, j = self.literal(i + 1)
        return "char", cp, j

    def class_atom(self, i: int, start: int):
        """One class member at ``i``: ``("char", cp, end)`` or ``("ranges", ranges, end)``."""
        if i >= self.n:
            raise self.error("unterminated character set", start)
        if self.p[i] == "\\":
            return self.parse_escape(i, in_class=True)
        cp, j = self.literal(i)
        return "char", cp, j

    def parse_class(self, start: int) -> Tuple[Expr, int]:
        p, n = self.p, self.n
        i = start + 1
        negated = i < n and p[i] == "^"
        if negated:
            i += 1
        if i < n and p[i] == "]":
            raise self.error(
                "']' at the start of a character class is ambiguous (a literal in Python, "
                "an empty class in JavaScript); escape it as '\\]'", i)
        ranges: List[Tuple[int, int]] = []
        while True:
            if i >= n:
                raise self.error("unterminated character set", start)
            if p[i] == "]":
                i += 1
                break
            item_pos = i
            kind, value, i = self.class_atom(i, start)
            if i + 1 < n and p[i] == "-" and p[i + 1] != "]":
                hi_kind, hi_value, j = self.class_atom(i + 1, start)
                if kind != "char" or hi_kind != "char":
                    raise self.error("bad character range (a class shorthand as an endpoint)", item_pos)
                if hi_value < value:
                    raise self.error(f"bad character range {p[item_pos:j]}", item_pos)
                ranges.append((value, hi_value))
                i = j
            elif kind == "char":
                ranges.append((value, value))
            else:
                ranges.extend(value)
        return _class(ranges, negated), i
