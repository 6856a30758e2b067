"""Lark's terminal building blocks: ``/regex/flags`` literals, case-insensitive literals and
the ``%import common.*`` terminals, as grammar IR.

Example::

    >>> from xmask.grammar.recognizer import Recognizer
    >>> from xmask.grammar.ir import Grammar
    >>> g = Grammar({"root": lark_regex("ab+c", "i")})
    >>> Recognizer(g).accepts(b"aBbC"), Recognizer(g).accepts(b"ac")
    (True, False)
    >>> Recognizer(Grammar({"root": common_terminal("SIGNED_NUMBER")})).accepts(b"-1.5e3")
    True

Regex semantics are those of :mod:`xmask.grammar.regex` (Python syntax, ASCII ``\\d`` /
``\\w``), with Lark's flags:

* ``i``: case-insensitive, by simple case mapping: a character also matches every character
  with the same lower- or upper-case form (``k`` matches ``K`` and the Kelvin sign U+212A, as
  in Python); a negated class excludes the case variants of its members (``[^a]`` refuses
  ``A``);
* ``s``: ``.`` also matches ``\\n``;
* ``u``: no effect (patterns are Unicode already); ``m``: no effect, because anchors are
  refused (below);
* ``x`` (verbose) and ``l`` (locale) raise ``GrammarSyntaxError``.

Anchors ``^`` / ``$`` / ``\\A`` / ``\\Z`` raise ``GrammarSyntaxError``: in Lark a terminal is
matched in the middle of the text, where ``^`` means "start of the whole input" (or, with
``m``, of a line), which a context-free grammar of the terminal cannot express.
"""

from __future__ import annotations

import bisect
from functools import lru_cache
from typing import Dict, List, Optional, Tuple

from .ir import (Bytes, CharClass, Choice, Expr, Repeat, Seq, TokenSet, make_choice, make_seq,
                 merge_ranges, node_kind)
from .regex import regex_to_expr

__all__ = ["COMMON_TERMINALS", "common_terminal", "fold_case", "lark_regex", "LarkRegexError"]

_SUPPORTED_FLAGS = frozenset("imsu")


class LarkRegexError(ValueError):
    """A regex literal that cannot be honoured exactly; ``offset`` is the 0-based position in
    the pattern (None: the flags).  The Lark parser turns it into a ``GrammarSyntaxError``."""

    def __init__(self, message: str, offset: Optional[int] = None):
        super().__init__(message)
        self.offset = offset


def lark_regex(pattern: str, flags: str = "") -> Expr:
    """The IR of Lark's ``/pattern/flags`` (full match of one terminal occurrence).

    Raises :class:`LarkRegexError` for unsupported flags and anchors, and the regex module's
    ``RegexSyntaxError`` for malformed patterns.

    Example::

        >>> lark_regex("a.", "s")
        Seq(items=(Bytes(data=b'a'), CharClass(ranges=((0, 1114111),), negated=False, byte_level=False)))
    """
    for f in flags:
        if f not in _SUPPORTED_FLAGS:
            raise LarkRegexError(f"regex flag '{f}' is not supported (supported: i, m, s, u)")
    _check_no_anchor(pattern)
    if "s" in flags:
        pattern = _dot_all(pattern)
    expr = regex_to_expr(pattern)
    return fold_case(expr) if "i" in flags else expr


def _scan(pattern: str):
    """Yield ``(index, char, in_class)`` for the unescaped characters of ``pattern`` outside
    escapes (an escape's two characters are skipped)."""
    i, n, depth = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\":
            yield i, pattern[i:i + 2], depth
            i += 2
            continue
        if depth:
            if c == "]":
                depth = False
        elif c == "[":
            yield i, c, False
            depth = True
            i += 1
            if i < n and pattern[i] == "^":
                i += 1  # negation, not an anchor
            continue
        yield i, c, depth
        i += 1


def _check_no_anchor(pattern: str) -> None:
    for i, c, in_class in _scan(pattern):
        if not in_class and c in ("^", "$", "\\A", "\\Z", "\\z", "\\b", "\\B"):
            raise LarkRegexError(
                f"anchor {c!r} is not supported in a Lark regex (a terminal is matched in the "
                "middle of the text, where an anchor cannot be expressed by the grammar)", i)


def _dot_all(pattern: str) -> str:
    out: List[str] = []
    last = 0
    for i, c, in_class in _scan(pattern):
        if c == "." and not in_class:
            out.append(pattern[last:i])
            out.append(r"[\s\S]")
            last = i + 1
    out.append(pattern[last:])
    return "".join(out)


# ---------------------------------------------------------------------------- case folding

@lru_cache(maxsize=1)
def _case_table() -> Tuple[List[int], Dict[int, Tuple[int, ...]]]:
    """Sorted list of the code points with case variants, and each one's variants (itself
    included): the classes of "same lower- or upper-case form", as Python's ``re.I``."""
    groups: Dict[int, set] = {}
    for cp in range(0x1F000):  # every cased letter lies below U+1F000
        ch = chr(cp)
        for other in (ch.lower(), ch.upper()):
            if len(other) == 1 and other != ch:
                a, b = groups.setdefault(cp, {cp}), groups.setdefault(ord(other), {ord(other)})
                if a is not b:
                    a |= b
                    for member in b:
                        groups[member] = a
    variants = {cp: tuple(sorted(g)) for cp, g in groups.items()}
    return sorted(variants), variants


def _fold_ranges(ranges) -> Tuple[Tuple[int, int], ...]:
    keys, variants = _case_table()
    extra = []
    for lo, hi in ranges:
        for k in keys[bisect.bisect_left(keys, lo):bisect.bisect_right(keys, hi)]:
            extra.extend((v, v) for v in variants[k])
    return merge_ranges(tuple(ranges) + tuple(extra))


def fold_case(expr: Expr) -> Expr:
    """``expr`` made case-insensitive (see the module docstring); ``TokenSet`` leaves are kept.

    Example::

        >>> fold_case(Bytes(b"a1"))
        Seq(items=(CharClass(ranges=((65, 65), (97, 97)), negated=False, byte_level=False), Bytes(data=b'1')))
    """
    t = node_kind(expr)
    if t is Bytes:
        _, variants = _case_table()
        items: List[Expr] = []
        for ch in expr.data.decode("utf-8"):
            v = variants.get(ord(ch))
            items.append(Bytes(ch.encode("utf-8")) if v is None
                         else CharClass(tuple((c, c) for c in v)))
        return make_seq(items)
    if t is CharClass:
        if expr.byte_level:
            raise ValueError("byte-level classes have no case")
        return CharClass(_fold_ranges(expr.ranges), negated=expr.negated)
    if t is Seq:
        return make_seq([fold_case(x) for x in expr.items])
    if t is Choice:
        return make_choice([fold_case(x) for x in expr.items])
    if t is Repeat:
        return Repeat(fold_case(expr.item), expr.min, expr.max)
    if t is TokenSet:
        return expr
    raise TypeError(f"cannot fold the case of {expr!r}")


# ---------------------------------------------------------------------------- common.lark

# Lark's common terminals, written from their documented meaning (as regexes over code
# points).  ESCAPED_STRING is exact to Lark's definition: no raw newline inside, a backslash
# escapes any character but a newline, and the closing quote is the first unescaped one.
_COMMON_REGEX = {
    "DIGIT": r"[0-9]",
    "HEXDIGIT": r"[0-9a-fA-F]",
    "INT": r"[0-9]+",
    "SIGNED_INT": r"[+-]?[0-9]+",
    "DECIMAL": r"[0-9]+\.[0-9]*|\.[0-9]+",
    "_EXP": r"[eE][+-]?[0-9]+",
    "FLOAT": r"[0-9]+[eE][+-]?[0-9]+|(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?",
    "SIGNED_FLOAT": r"[+-]?(?:[0-9]+[eE][+-]?[0-9]+|(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)",
    "NUMBER": r"[0-9]+(?:[eE][+-]?[0-9]+)?|(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?",
    "SIGNED_NUMBER": r"[+-]?(?:[0-9]+(?:[eE][+-]?[0-9]+)?|(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)",
    "ESCAPED_STRING": r'"(?:[^"\\\n]|\\[^\n])*"',
    "LCASE_LETTER": r"[a-z]",
    "UCASE_LETTER": r"[A-Z]",
    "LETTER": r"[A-Za-z]",
    "WORD": r"[A-Za-z]+",
    "CNAME": r"[_A-Za-z][_A-Za-z0-9]*",
    "WS_INLINE": r"[ \t]+",
    "WS": r"[ \t\f\r\n]+",
    "CR": r"\r",
    "LF": r"\n",
    "NEWLINE": r"(?:\r?\n)+",
    "SH_COMMENT": r"#[^\n]*",
    "CPP_COMMENT": r"//[^\n]*",
    "C_COMMENT": r"/\*(?:[^*]|\*+[^*/])*\*+/",  # "/*", the shortest run up to "*/"
    "SQL_COMMENT": r"--[^\n]*",
}

COMMON_TERMINALS = tuple(sorted(_COMMON_REGEX))


def common_terminal(name: str) -> Expr:
    """The IR of terminal ``name`` of Lark's ``common`` module; ``KeyError`` if it has none.

    Example::

        >>> common_terminal("INT")
        Repeat(item=CharClass(ranges=((48, 57),), negated=False, byte_level=False), min=1, max=None)
    """
    return regex_to_expr(_COMMON_REGEX[name])
