"""Texts that never contain a set of forbidden substrings, as automata over code points.

Structural tags forbid substrings in string values (``excludes`` of a ``json_schema``
format) and XML argument styles end a raw string value at its closing tag, so the value must
never contain that tag.  Both are the same language operation: intersect the value's
automaton with :func:`avoid_dfa` (the texts containing none of the words).  Matching is on
the *emitted* text, so a word split across tokens or escapes is still caught.

Example::

    >>> d = avoid_dfa(["</p>"])
    >>> d.matches("a < b"), d.matches("x</p>y")
    (True, False)
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from .ir import Expr, MAX_CODE_POINT, SURROGATES
from .number_range import Dfa, RuleSink, dfa_from_expr, dfa_product, dfa_to_expr

__all__ = ["avoid_dfa", "exclude_words", "contains_any", "expr_avoiding"]

_UNIVERSE = ((0, SURROGATES[0] - 1), (SURROGATES[1] + 1, MAX_CODE_POINT))


def contains_any(text: str, words: Sequence[str]) -> bool:
    """True when ``text`` contains one of ``words``."""
    return any(w in text for w in words)


def avoid_dfa(words: Sequence[str]) -> Dfa:
    """The texts (any code points) containing none of ``words`` (non-empty strings).

    An Aho-Corasick automaton: a state is the longest suffix of the text read that is a
    prefix of a word; reading that completes a word goes to the dead state.
    """
    words = sorted(set(words))
    if any(not w for w in words):
        raise ValueError("an excluded word is empty")
    prefixes = sorted({w[:i] for w in words for i in range(len(w) + 1)}, key=lambda p: (len(p), p))
    ids = {p: i for i, p in enumerate(prefixes)}
    word_set = set(words)
    dead = set()
    for p in prefixes:  # a prefix that ends with a word is already a match
        if any(p.endswith(w) for w in word_set):
            dead.add(p)

    def longest_suffix(s: str) -> str:
        for i in range(len(s) + 1):
            if s[i:] in ids:
                return s[i:]
        return ""

    symbols = sorted({ord(c) for w in words for c in w})
    edges: List[Tuple[Tuple[int, int, int], ...]] = []
    for p in prefixes:
        if p in dead:
            edges.append(())
            continue
        out: List[Tuple[int, int, int]] = []
        # a symbol outside every word restarts at the empty prefix
        cur = 0
        for cp in symbols:
            nxt = longest_suffix(p + chr(cp))
            for lo, hi in _UNIVERSE:
                a, b = max(lo, cur), min(hi, cp - 1)
                if a <= b:
                    out.append((a, b, 0))
            if nxt not in dead:
                out.append((cp, cp, ids[nxt]))
            cur = cp + 1
        for lo, hi in _UNIVERSE:
            a, b = max(lo, cur), hi
            if a <= b:
                out.append((a, b, 0))
        edges.append(_fuse(out))
    accept = [p not in dead for p in prefixes]
    return Dfa(edges, accept)


def _fuse(pairs) -> Tuple[Tuple[int, int, int], ...]:
    out: List[Tuple[int, int, int]] = []
    for lo, hi, t in sorted(pairs):
        if out and out[-1][2] == t and out[-1][1] + 1 == lo:
            out[-1] = (out[-1][0], hi, t)
        else:
            out.append((lo, hi, t))
    return tuple(out)


def exclude_words(d: Dfa, words: Sequence[str]) -> Dfa:
    """``d`` without the texts that contain one of ``words`` (``d`` itself when none)."""
    if not words:
        return d
    return dfa_product(d, avoid_dfa(words), "and")


def expr_avoiding(expr: Expr, words: Sequence[str], sink: Optional[RuleSink],
                  hint: str) -> Optional[Expr]:
    """``expr`` (no rule references) restricted to texts containing none of ``words``;
    None when no text is left.  ``expr`` itself when ``words`` is empty."""
    if not words:
        return expr
    return dfa_to_expr(exclude_words(dfa_from_expr(expr), words), sink, hint)
