"""Shortest-match ("lazy") languages of regular expressions, as right-linear rules.

A lazy terminal (llguidance's and XGrammar's ``name[lazy]: /.../``, ``[stop=...]``,
``[suffix=...]`` in Lark) stops at its first possible end: its language is the strings of
``expr`` that have no proper prefix in ``expr``.  That is regular: determinize ``expr``, drop
the edges out of accepting states, and write each remaining state as a rule
``S = [class] T | ...`` (right recursion, which the engine runs as tail calls).

Example::

    >>> from xmask.grammar.ir import Grammar
    >>> from xmask.grammar.combine import RuleNamer
    >>> from xmask.grammar.regex import regex_to_expr
    >>> from xmask.grammar.recognizer import Recognizer
    >>> rules = {}
    >>> ref = shortest_match(regex_to_expr(r"[\\s\\S]*<end>"), {}, rules, RuleNamer(rules), "t")
    >>> r = Recognizer(Grammar({"root": ref, **rules}))
    >>> r.accepts(b"ab<end>"), r.accepts(b"a<end>b<end>"), r.accepts(b"<en<end>")
    (True, False, True)

Works on code points (the IR's characters); ``RuleRef`` leaves are expanded through
``definitions`` (they must not recurse).  Raises ``ValueError`` for token sets, raw-byte
classes, recursion, an empty language, or more than ``max_states`` automaton states.
"""

from __future__ import annotations

import bisect
from typing import Dict, FrozenSet, List, Tuple

from .ebnf import make_choice, make_seq
from .ir import EPSILON, Bytes, CharClass, Choice, Expr, Repeat, RuleRef, Seq, TokenSet

__all__ = ["shortest_match"]

Ranges = Tuple[Tuple[int, int], ...]


class _Nfa:
    """Thompson NFA over code-point ranges: ``eps[i]`` and ``edges[i] = [(ranges, j)]``."""

    def __init__(self, definitions: Dict[str, Expr], max_states: int):
        self.eps: List[List[int]] = []
        self.edges: List[List[Tuple[Ranges, int]]] = []
        self.definitions = definitions
        self.max_states = max_states
        self.active: List[str] = []

    def state(self) -> int:
        if len(self.eps) >= self.max_states:
            raise ValueError(f"the lazy terminal needs more than {self.max_states} automaton states")
        self.eps.append([])
        self.edges.append([])
        return len(self.eps) - 1

    def build(self, e: Expr, s: int) -> int:
        """Add ``e`` starting at state ``s``; return its end state."""
        t = type(e)
        if t is Bytes:
            try:
                text = e.data.decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError("a lazy terminal must be valid UTF-8 text") from None
            for ch in text:
                nxt = self.state()
                self.edges[s].append((((ord(ch), ord(ch)),), nxt))
                s = nxt
            return s
        if t is CharClass:
            if e.byte_level:
                raise ValueError("raw-byte classes cannot be in a lazy terminal")
            nxt = self.state()
            self.edges[s].append((e.positive_ranges(), nxt))
            return nxt
        if t is Seq:
            for item in e.items:
                s = self.build(item, s)
            return s
        if t is Choice:
            end = self.state()
            for item in e.items:
                start = self.state()
                self.eps[s].append(start)
                self.eps[self.build(item, start)].append(end)
            return end
        if t is Repeat:
            for _ in range(e.min):
                s = self.build(e.item, s)
            if e.max is None:
                loop = self.state()
                self.eps[s].append(loop)
                self.eps[self.build(e.item, loop)].append(loop)
                return loop
            end = self.state()
            for _ in range(e.max - e.min):
                self.eps[s].append(end)
                s = self.build(e.item, s)
            self.eps[s].append(end)
            return end
        if t is RuleRef:
            if e.name in self.active or e.name not in self.definitions:
                raise ValueError(f"'{e.name}' recurses or is undefined inside a lazy terminal")
            self.active.append(e.name)
            s = self.build(self.definitions[e.name], s)
            self.active.pop()
            return s
        if t is TokenSet:
            raise ValueError("special tokens cannot be in a lazy terminal")
        raise TypeError(f"not a grammar expression: {e!r}")

    def closure(self, states) -> FrozenSet[int]:
        seen = set(states)
        stack = list(states)
        while stack:
            for j in self.eps[stack.pop()]:
                if j not in seen:
                    seen.add(j)
                    stack.append(j)
        return frozenset(seen)


def shortest_match(expr: Expr, definitions: Dict[str, Expr], rules: Dict[str, Expr], namer,
                   hint: str, max_states: int = 5000) -> Expr:
    """An expression for the shortest-match language of ``expr``, adding its state rules to
    ``rules`` under names from ``namer`` (a :class:`~xmask.grammar.combine.RuleNamer`)."""
    nfa = _Nfa(definitions, max_states)
    start = nfa.state()
    final = nfa.build(expr, start)
    # elementary intervals: every edge's range set is a union of them
    cuts = sorted({b for edges in nfa.edges for ranges, _ in edges
                   for lo, hi in ranges for b in (lo, hi + 1)})
    dfa: Dict[FrozenSet[int], int] = {}
    order: List[FrozenSet[int]] = []
    trans: List[List[Tuple[Ranges, int]]] = []

    def add(subset: FrozenSet[int]) -> int:
        if subset not in dfa:
            if len(order) >= max_states:
                raise ValueError(f"the lazy terminal needs more than {max_states} states")
            dfa[subset] = len(order)
            order.append(subset)
            trans.append([])
        return dfa[subset]

    add(nfa.closure([start]))
    k = 0
    while k < len(order):
        subset = order[k]
        if final not in subset:  # accepting states end the match: no edges out
            targets: Dict[int, List[Tuple[int, int]]] = {}
            for lo, hi in zip(cuts, cuts[1:]):
                hi -= 1
                nxt = {j for s in subset for ranges, j in nfa.edges[s] if _covers(ranges, lo)}
                if nxt:
                    targets.setdefault(add(nfa.closure(nxt)), []).append((lo, hi))
            trans[k] = [(tuple(r), q) for q, r in targets.items()]
        k += 1
    accepting = {dfa[s] for s in order if final in s}
    alive = set(accepting)  # states from which an accepting one is reachable
    changed = True
    while changed:
        changed = False
        for q, edges in enumerate(trans):
            if q not in alive and any(t in alive for _, t in edges):
                alive.add(q)
                changed = True
    if 0 not in alive:
        raise ValueError("the lazy terminal matches nothing")
    if 0 in accepting:
        return EPSILON  # the empty match comes first
    names = {q: namer.fresh(f"{hint}_lazy") for q in alive if q not in accepting}
    for q in names:
        rules[names[q]] = EPSILON  # reserve the name while building
    for q, name in names.items():
        alts = []
        for ranges, t in trans[q]:
            if t not in alive:
                continue
            cls = _leaf(ranges)
            alts.append(cls if t in accepting else make_seq([cls, RuleRef(names[t])]))
        rules[name] = make_choice(alts)
    return RuleRef(names[0])


def _covers(ranges: Ranges, cp: int) -> bool:
    i = bisect.bisect_right(ranges, (cp, 0x10FFFF + 1)) - 1
    return i >= 0 and ranges[i][0] <= cp <= ranges[i][1]


def _leaf(ranges: Ranges) -> Expr:
    cls = CharClass(ranges)
    if len(cls.ranges) == 1 and cls.ranges[0][0] == cls.ranges[0][1]:
        return Bytes(chr(cls.ranges[0][0]).encode("utf-8"))
    return cls
