"""A lower bound of the length of the strings of a code-point expression, without automata.

A JSON schema often puts ``minLength: 1`` beside a ``format`` or ``pattern`` whose strings are
never that short anyway.  Knowing the shortest length of the format's expression lets the
converter drop such a bound (same language, and no length automaton to intersect with).

Example::

    >>> from xmask.grammar.ir import Bytes, CharClass, Choice, Repeat, Seq
    >>> digit = CharClass(((0x30, 0x39),))
    >>> min_code_points(Seq((Repeat(digit, 2, None), Choice((Bytes(b"-"), Bytes("\u00e9t\u00e9".encode()))))))
    3
"""

from __future__ import annotations

from typing import Dict

from .ir import Bytes, CharClass, Choice, Expr, Repeat, Seq, node_kind
from .string_format import format_expr

__all__ = ["min_code_points", "format_min_code_points"]


def min_code_points(expr: Expr) -> int:
    """A lower bound of the number of code points of every string ``expr`` matches (exact
    for literals, classes, sequences, choices and repeats; 0 for anything else, such as a
    rule reference)."""
    try:
        return _min(expr, {})
    except RecursionError:
        return 0


def _min(e: Expr, memo: Dict[int, int]) -> int:
    hit = memo.get(id(e))
    if hit is not None:
        return hit
    t = node_kind(e)
    if t is Bytes:
        try:
            n = len(e.data.decode("utf-8"))
        except UnicodeDecodeError:
            n = 0
    elif t is CharClass:
        n = 0 if e.byte_level else 1  # (an empty class matches nothing: any bound holds)
    elif t is Seq:
        n = sum(_min(x, memo) for x in e.items)
    elif t is Choice:
        n = min((_min(x, memo) for x in e.items), default=0)
    elif t is Repeat:
        n = e.min * _min(e.item, memo) if e.min else 0
    else:
        n = 0
    memo[id(e)] = n
    return n


_FORMATS: Dict[str, int] = {}


def format_min_code_points(name: str) -> int:
    """:func:`min_code_points` of string format ``name`` (a known one: see
    :data:`~xmask.grammar.string_format.KNOWN_FORMATS`), memoized.

    Example::

        >>> format_min_code_points("date"), format_min_code_points("uri-reference")
        (10, 0)
    """
    n = _FORMATS.get(name)
    if n is None:
        e = format_expr(name)
        if e is None:
            raise ValueError(f"unknown format {name!r}")
        n = _FORMATS[name] = min_code_points(e)
    return n
