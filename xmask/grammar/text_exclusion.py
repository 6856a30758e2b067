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

from .code_point_dfa import Dfa, dfa_from_step, dfa_minimize, dfa_product
from .dfa_expr import dfa_from_expr, dfa_to_expr
from .ir import EPSILON, MAX_CODE_POINT, SURROGATES, CharClass, Choice, Expr, Repeat, RuleRef, Seq
from .rule_sink import RuleSink

__all__ = ["automaton_rules", "avoid_dfa", "contains_any", "exclude_words", "expr_avoiding", "until_first"]

_UNIVERSE = ((0, SURROGATES[0] - 1), (SURROGATES[1] + 1, MAX_CODE_POINT))


def contains_any(text: str, words: Sequence[str]) -> bool:
    """True when ``text`` contains one of ``words``."""
    return any(w in text for w in words)


def _alphabet(words: Sequence[str]):
    """Intervals over which a step of a word automaton is constant: the symbols of the words
    one by one, and the gaps between them."""
    cuts = sorted({ord(c) for w in words for c in w})
    out = []
    cur = 0
    for cp in cuts + [MAX_CODE_POINT + 1]:
        for lo, hi in _UNIVERSE:
            a, b = max(lo, cur), min(hi, cp - 1)
            if a <= b:
                out.append((a, b))
        if cp <= MAX_CODE_POINT:
            out.append((cp, cp))
        cur = cp + 1
    return out


def _longest_suffix(s: str, prefixes) -> str:
    for i in range(len(s) + 1):
        if s[i:] in prefixes:
            return s[i:]
    return ""


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
        return _longest_suffix(s, prefixes)

    return dfa_from_step("", step, lambda p: True, _alphabet(words), max_states=len(prefixes) + 1)


def until_first(word: str) -> Dfa:
    """The texts that contain ``word`` once, at their end (a raw value and the tag closing
    it), as one automaton: its states know where the value stops.

    Example::

        >>> d = until_first("</p>")
        >>> d.matches("a < b</p>"), d.matches("a</p>b</p>"), d.matches("a")
        (True, False, False)
    """
    if not word:
        raise ValueError("the closing word is empty")
    prefixes = {word[:i] for i in range(len(word))}
    end = ("end",)

    def step(p, cp: int):
        if p is end:
            return None
        s = p + chr(cp)
        return end if s.endswith(word) else _longest_suffix(s, prefixes)

    return dfa_from_step("", step, lambda p: p is end, _alphabet([word]), max_states=len(word) + 2)


def automaton_rules(d: Dfa, sink: RuleSink, hint: str) -> Optional[Expr]:
    """``d`` as one rule per live state, ``state ::= loop* (class next | ... | "")``: every
    return to a state is a reference to its rule (no state is copied into its predecessors),
    the shape that keeps the compiled automaton of dense texts (any text but a closing tag)
    small.  None for the empty language."""
    d = dfa_minimize(d)
    live = {q for q in range(d.n_states) if d.accept[q]}
    grew = True
    while grew:  # the states that reach an accepting one (automata here have a few dozen)
        grew = False
        for q in range(d.n_states):
            if q not in live and any(t in live for _, _, t in d.edges[q]):
                live.add(q)
                grew = True
    if 0 not in live:
        return None
    names = {q: sink.fresh(f"{hint}_s{q}") for q in sorted(live)}
    for q in sorted(live):
        by_target = {}
        loop = []
        for lo, hi, t in d.edges[q]:
            if t not in live:
                continue
            (loop if t == q else by_target.setdefault(t, [])).append((lo, hi))
        alts = [Seq((CharClass(tuple(rs)), RuleRef(names[t]))) for t, rs in sorted(by_target.items())]
        if d.accept[q]:
            alts.append(EPSILON)
        body = alts[0] if len(alts) == 1 else Choice(tuple(alts)) if alts else CharClass(())
        if loop:
            body = Seq((Repeat(CharClass(tuple(loop)), 0, None), body))
        sink.define(names[q], body)
    return RuleRef(names[0])


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
