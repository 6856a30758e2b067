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

from typing import Optional, Sequence

from .ir import Expr, MAX_CODE_POINT, SURROGATES
from .number_range import Dfa, RuleSink, dfa_from_expr, dfa_from_step, dfa_product, dfa_to_expr

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
    prefixes = {w[:i] for w in words for i in range(len(w) + 1)}

    def step(p: str, cp: int) -> Optional[str]:
        s = p + chr(cp)
        if any(s.endswith(w) for w in words):
            return None
        for i in range(len(s) + 1):
            if s[i:] in prefixes:
                return s[i:]
        return ""

    # the step is constant between the symbols that occur in the words
    cuts = sorted({ord(c) for w in words for c in w})
    alphabet = []
    cur = 0
    for cp in cuts + [MAX_CODE_POINT + 1]:
        for lo, hi in _UNIVERSE:
            a, b = max(lo, cur), min(hi, cp - 1)
            if a <= b:
                alphabet.append((a, b))
        if cp <= MAX_CODE_POINT:
            alphabet.append((cp, cp))
        cur = cp + 1
    return dfa_from_step("", step, lambda p: True, alphabet, max_states=len(prefixes) + 1)


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
