"""Numeric ranges -> grammar IR, and the small DFA toolkit the JSON Schema converter shares.

JSON number text (RFC 8259)::

    number  = "-"? int frac? exp?      int = "0" | [1-9][0-9]*
    frac    = "." [0-9]+               exp = [eE] [+-]? [0-9]+

The functions here build the IR of exactly the JSON number texts whose *value* satisfies a
constraint (bounds, ``multipleOf``).  They are built as deterministic automata from a small
step function (a value comparator that reads the text left to right), minimized, and
emitted as IR.  This keeps every construction obviously exact:

* :func:`integer_expr` -- integer syntax ``-?(0|[1-9][0-9]*)`` (``-0`` is the value 0)
  with value in ``[lo, hi]`` (either side may be open) and optionally a multiple of ``k``
  (a DFA of remainders mod ``k`` over the digits).
* :func:`number_expr` -- full number syntax with value in a (possibly exclusive) decimal
  interval, optionally ``multipleOf`` a decimal.  Exponent forms:

  - a side-only bound at zero (e.g. ``minimum: 0`` or ``exclusiveMaximum: 0``), or no bound:
    every spelling is accepted, exponents included;
  - other bounds: plain forms (``12``, ``-0.5``, ``3.250``) exactly, plus *normalized
    scientific* forms ``d(.ddd)?e[+-]?N`` with one nonzero leading digit (what Python's
    ``json.dumps``/``repr`` writes, e.g. ``1e-05``, ``1.5e+20``) and zero forms
    ``0(.0*)?eN``, exactly.  Non-normalized exponent forms such as ``0.5e1`` or ``15e-1``
    are rejected (documented restriction: a sound subset; never an out-of-range value);
  - with ``multipleOf``: exponent forms are rejected (plain forms are exact).

DFA toolkit (code-point alphabet, used by the schema converter for regex intersections,
key complements and length limits): :class:`Dfa`, :func:`dfa_from_step`,
:func:`dfa_from_expr`, :func:`dfa_product`, :func:`dfa_complement`, :func:`dfa_minimize`,
:func:`dfa_with_length`, :func:`dfa_to_expr`, :class:`RuleSink`.

Example::

    >>> from xmask.grammar.recognizer import Recognizer
    >>> g = integer_grammar(-5, 123)
    >>> r = Recognizer(g)
    >>> [r.accepts(s) for s in (b"-5", b"-6", b"0", b"123", b"124", b"007")]
    [True, False, True, True, False, False]
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Callable, Dict, Hashable, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import _deadline as deadline
from .._graph import strongly_connected_components
from ..compiler._partition import refine_round
from ..errors import GrammarLimitError
from .ebnf import make_choice, make_seq
from .ir import (
    EPSILON,
    MAX_CODE_POINT,
    Bytes,
    CharClass,
    Choice,
    Expr,
    Grammar,
    Repeat,
    RuleRef,
    Seq,
    merge_ranges,
)

__all__ = [
    "Dfa",
    "MAX_DFA_STATES",
    "MAX_NUMBER_DIGITS",
    "MAX_MULTIPLE_OF_STATES",
    "RuleSink",
    "dfa_complement",
    "dfa_from_expr",
    "dfa_from_step",
    "dfa_minimize",
    "dfa_product",
    "dfa_to_expr",
    "dfa_with_length",
    "dfa_word_complement",
    "integer_expr",
    "integer_grammar",
    "number_expr",
    "number_grammar",
    "to_fraction",
]

#: Cap on states of any DFA built here (GrammarLimitError beyond).
MAX_DFA_STATES = 20_000
#: Cap on NFA states while converting an expression to a DFA.
MAX_NFA_STATES = 100_000
#: Cap on the digits of a numeric bound (e.g. 1e400 has 401 digits).
MAX_NUMBER_DIGITS = 400
#: Cap on the modulus of a ``multipleOf`` remainder automaton.
MAX_MULTIPLE_OF_STATES = 10_000

Number = Union[int, float, Decimal, Fraction, str]

_UNIVERSE = ((0, 0xD7FF), (0xE000, MAX_CODE_POINT))


# ============================================================================ rule sink

class RuleSink:
    """Collects the extra rules an emitted expression needs (``fresh`` + ``define``)."""

    def __init__(self, rules: Optional[Dict[str, Expr]] = None, prefix: str = "r",
                 max_rules: Optional[int] = None):
        self.rules: Dict[str, Expr] = {} if rules is None else rules
        self._used = set(self.rules)
        self._next: Dict[str, int] = {}
        self.prefix = prefix
        self.max_rules = max_rules

    def fresh(self, hint: str) -> str:
        if self.max_rules is not None and len(self._used) >= self.max_rules:
            # checked per rule: one schema location can emit very many (e.g. DFA emission)
            raise GrammarLimitError(f"JSON Schema grammar exceeds {self.max_rules} rules "
                                    "(CompileLimits.max_schema_rules)")
        base = _clean_name(hint) or self.prefix
        name, i = base, self._next.get(base, 1)
        while name in self._used:  # resumes where the last probe for this base stopped
            i += 1
            name = f"{base}_{i}"
        self._next[base] = i
        self._used.add(name)
        return name

    def define(self, name: str, expr: Expr) -> None:
        self.rules[name] = expr


_NAME_JUNK = re.compile(r"[^A-Za-z0-9_-]+")


def _clean_name(hint: str) -> str:
    s = _CLEAN_NAMES.get(hint)
    if s is None:
        if len(_CLEAN_NAMES) >= 4096:
            _CLEAN_NAMES.clear()  # bounded (hints repeat: state and member names)
        s = _CLEAN_NAMES[hint] = _clean_name_uncached(hint)
    return s


_CLEAN_NAMES: Dict[str, str] = {}


def _clean_name_uncached(hint: str) -> str:
    s = _NAME_JUNK.sub("_", hint).strip("_-")
    s = re.sub(r"__+", "_", s)
    if s and not (s[0].isalpha() or s[0] == "_"):
        s = "r_" + s
    return s[:60]


# ============================================================================ DFA toolkit

class Dfa:
    """A DFA over code points: ``edges[q]`` is a sorted tuple of disjoint ``(lo, hi, target)``;
    missing symbols go to an implicit dead state.  State 0 is the start state."""

    __slots__ = ("edges", "accept", "minimal")

    def __init__(self, edges: List[Tuple[Tuple[int, int, int], ...]], accept: List[bool],
                 minimal: bool = False):
        self.edges = edges
        self.accept = accept
        # set only by dfa_minimize: its output is canonical (minimizing it again is the identity)
        self.minimal = minimal

    @property
    def n_states(self) -> int:
        return len(self.accept)

    def step(self, q: int, cp: int) -> int:
        for lo, hi, t in self.edges[q]:
            if lo <= cp <= hi:
                return t
            if lo > cp:
                break
        return -1

    def matches(self, text: str) -> bool:
        q = 0
        for ch in text:
            q = self.step(q, ord(ch))
            if q < 0:
                return False
        return self.accept[q]

    def is_empty(self) -> bool:
        return not any(self.accept[q] for q in self._reachable())

    def _reachable(self) -> List[int]:
        seen, stack = {0}, [0]
        while stack:
            q = stack.pop()
            for _, _, t in self.edges[q]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return sorted(seen)

    def length_bounds(self) -> Tuple[Optional[int], Optional[int]]:
        """(shortest, longest) accepted length; longest is None when unbounded; (None, None)
        when the language is empty."""
        live = self._live()
        if 0 not in live:
            return None, None
        # shortest: BFS
        dist = {0: 0}
        frontier = [0]
        shortest = None
        while frontier and shortest is None:
            nxt = []
            for q in frontier:
                if self.accept[q]:
                    shortest = dist[q]
                    break
                for _, _, t in self.edges[q]:
                    if t in live and t not in dist:
                        dist[t] = dist[q] + 1
                        nxt.append(t)
            frontier = nxt
        # longest: DAG longest path over live states, None on a cycle
        order: List[int] = []
        state: Dict[int, int] = {}
        stack = [(0, 0)]
        while stack:
            q, i = stack.pop()
            if i == 0:
                if state.get(q) == 1:
                    return shortest, None
                if state.get(q) == 2:
                    continue
                state[q] = 1
            succ = [t for _, _, t in self.edges[q] if t in live]
            if i < len(succ):
                stack.append((q, i + 1))
                t = succ[i]
                if state.get(t) == 1:
                    return shortest, None
                if state.get(t) != 2:
                    stack.append((t, 0))
            else:
                state[q] = 2
                order.append(q)
        longest: Dict[int, int] = {}
        for q in order:  # successors first
            best = 0 if self.accept[q] else -1
            for _, _, t in self.edges[q]:
                if t in longest and longest[t] >= 0:
                    best = max(best, longest[t] + 1)
            longest[q] = best
        return shortest, longest[0]

    def _live(self) -> set:
        """States that can reach an accepting state."""
        rev: Dict[int, List[int]] = {}
        for q, es in enumerate(self.edges):
            for _, _, t in es:
                rev.setdefault(t, []).append(q)
        live = {q for q, a in enumerate(self.accept) if a}
        stack = list(live)
        while stack:
            q = stack.pop()
            for p in rev.get(q, ()):
                if p not in live:
                    live.add(p)
                    stack.append(p)
        return live


_DENSE_MINIMIZE_CELLS = 16_000_000  # int32 cells (64 MB) for the minimizer's transition table


def _merge_edges(pairs) -> Tuple[Tuple[int, int, int], ...]:
    """Sort and fuse adjacent ``(lo, hi, target)`` intervals with the same target."""
    out: List[Tuple[int, int, int]] = []
    for lo, hi, t in sorted(pairs):
        if out and out[-1][2] == t and out[-1][1] + 1 == lo:
            out[-1] = (out[-1][0], hi, t)
        else:
            out.append((lo, hi, t))
    return tuple(out)


def dfa_from_step(start: Hashable, step: Callable, accepting: Callable,
                  alphabet: Sequence[Tuple[int, int]], max_states: int = MAX_DFA_STATES) -> Dfa:
    """Explore the automaton ``step(state, code_point) -> state | None`` from ``start``.

    ``step`` must be constant over each ``alphabet`` interval (it is called with the
    interval's low end).  ``None`` is the dead state.
    """
    def moves(key):
        for lo, hi in alphabet:
            nxt = step(key, lo)
            if nxt is not None:
                yield lo, hi, nxt

    return _explore(start, moves, accepting, max_states)


def _explore(start: Hashable, moves: Callable, accepting: Callable, max_states: int,
             what: str = "automaton", fuse: bool = True) -> Dfa:
    """The ``what`` of the states reachable from ``start``, where ``moves(state)`` yields its
    edges ``(lo, hi, next state)`` in code point order; GrammarLimitError beyond
    ``max_states`` states.  ``fuse``: merge adjacent edges (not needed before minimizing)."""
    ids: Dict[Hashable, int] = {start: 0}
    keys = [start]
    edges: List[Tuple[Tuple[int, int, int], ...]] = []
    i = 0
    while i < len(keys):
        if not i & 255:
            deadline.check()
        out = []
        for lo, hi, nxt in moves(keys[i]):
            t = ids.get(nxt)
            if t is None:
                if len(keys) >= max_states:
                    raise GrammarLimitError(f"{what} exceeds {max_states} states")
                t = ids[nxt] = len(keys)
                keys.append(nxt)
            out.append((lo, hi, t))
        edges.append(_merge_edges(out) if fuse else tuple(out))
        i += 1
    return Dfa(edges, [bool(accepting(k)) for k in keys])


def _split_points(interval_lists) -> List[Tuple[int, int]]:
    cuts = set()
    for ranges in interval_lists:
        for lo, hi in ranges:
            cuts.add(lo)
            cuts.add(hi + 1)
    pts = sorted(cuts)
    return [(pts[i], pts[i + 1] - 1) for i in range(len(pts) - 1)]


def dfa_product(a: Dfa, b: Dfa, mode: str = "and", max_states: int = MAX_DFA_STATES) -> Dfa:
    """Product automaton; ``mode`` is ``"and"``, ``"or"`` or ``"diff"`` (a and not b).

    The edges of a pair of states come from one merge walk over both sorted edge lists; the
    minimized result does not depend on how the pairs are explored, only which are reachable
    (their number is what ``max_states`` caps)."""
    need_a = mode != "or"  # intervals a does not cover lead nowhere ("and", "diff")
    need_b = mode == "and"

    def moves(key):
        p, q = key
        ea = a.edges[p] if p >= 0 else ()
        eb = b.edges[q] if q >= 0 else ()
        # walk the union of cut points of ea and eb in code point order
        ia = ib = 0
        na, nb = len(ea), len(eb)
        pos = min(ea[0][0] if na else 1 << 30, eb[0][0] if nb else 1 << 30)
        while ia < na or ib < nb:
            # the interval starting at pos: its end and the targets on each side
            if ia < na and ea[ia][1] < pos:
                ia += 1
                continue
            if ib < nb and eb[ib][1] < pos:
                ib += 1
                continue
            end = 1 << 30
            ta = tb = -1
            if ia < na:
                lo, hi, t = ea[ia]
                if lo <= pos:
                    ta, end = t, hi
                else:
                    end = lo - 1
            if ib < nb:
                lo, hi, t = eb[ib]
                if lo <= pos:
                    tb = t
                    end = min(end, hi)
                else:
                    end = min(end, lo - 1)
            if not ((need_a and ta < 0) or (need_b and tb < 0) or (ta < 0 and tb < 0)):
                yield pos, end, (ta, tb)
            pos = end + 1
            if ia < na and ea[ia][1] < pos:
                ia += 1
            if ib < nb and eb[ib][1] < pos:
                ib += 1
            nxt = min(ea[ia][0] if ia < na else 1 << 30, eb[ib][0] if ib < nb else 1 << 30)
            pos = max(pos, nxt)

    def acc(p, q):
        fa = p >= 0 and a.accept[p]
        fb = q >= 0 and b.accept[q]
        if mode == "and":
            return fa and fb
        if mode == "or":
            return fa or fb
        return fa and not fb

    return dfa_minimize(_explore((0, 0), moves, lambda k: acc(*k), max_states, "automaton product",
                                 fuse=False))


def dfa_complement(a: Dfa, universe=_UNIVERSE) -> Dfa:
    """Strings over ``universe`` (default: all Unicode scalar values) not accepted by ``a``."""
    n = a.n_states
    sink = n
    edges = []
    for q in range(n + 1):
        own = a.edges[q] if q < n else ()
        out = list(own)
        covered = [(lo, hi) for lo, hi, _ in own]
        for lo, hi in _subtract(universe, covered):
            out.append((lo, hi, sink))
        edges.append(_merge_edges(out))
    accept = [not x for x in a.accept] + [True]
    return dfa_minimize(Dfa(edges, accept))


def _subtract(universe, ranges) -> List[Tuple[int, int]]:
    out = []
    rs = merge_ranges(ranges)
    for ulo, uhi in universe:
        cur = ulo
        for lo, hi in rs:
            if hi < cur or lo > uhi:
                continue
            if lo > cur:
                out.append((cur, lo - 1))
            cur = max(cur, hi + 1)
        if cur <= uhi:
            out.append((cur, uhi))
    return out


def dfa_minimize(a: Dfa) -> Dfa:
    """Remove unreachable and dead states and merge equivalent ones.

    The result is canonical (states numbered in BFS order from the start, edges fused), so
    minimizing it again returns it unchanged: it is flagged ``minimal`` and returned as is.
    """
    if a.minimal:
        return a
    a_edges = a.edges
    # reachable states, in discovery order, and their predecessors (for liveness)
    seen = {0}
    stack = [0]
    preds: Dict[int, List[int]] = {}
    while stack:
        q = stack.pop()
        for _, _, t in a_edges[q]:
            pl = preds.get(t)
            if pl is None:
                preds[t] = [q]
            else:
                pl.append(q)
            if t not in seen:
                seen.add(t)
                stack.append(t)
    a_accept = a.accept
    live = {q for q in seen if a_accept[q]}
    stack = list(live)
    while stack:
        for p in preds.get(stack.pop(), ()):
            if p not in live:
                live.add(p)
                stack.append(p)
    if 0 not in live:
        return Dfa([()], [False], minimal=True)
    keep = sorted(live)  # (live states were all reached from the start)
    index = {q: i for i, q in enumerate(keep)}
    edges = [[(lo, hi, index[t]) for lo, hi, t in a_edges[q] if t in index] for q in keep]
    accept = [a_accept[q] for q in keep]
    block = _acyclic_blocks(edges, accept)
    if block is None:
        block = _moore_blocks(edges, accept)
    return _canonical(edges, accept, block)


def _canonical(edges, accept, block) -> Dfa:
    """The DFA of the blocks of a trimmed DFA (``block[q]``: the class of state q), states
    numbered in BFS order from the start (the edges of each state in code point order) and
    edges fused: the canonical form every minimal DFA is returned in."""
    order = {block[0]: 0}
    queue = [0]
    rep: Dict[int, int] = {block[0]: 0}
    head = 0
    while head < len(queue):
        q = queue[head]
        head += 1
        for _, _, t in edges[q]:
            bt = block[t]
            if bt not in order:
                order[bt] = len(order)
                rep[bt] = t
                queue.append(t)
    new_edges: List[tuple] = [()] * len(order)
    new_accept = [False] * len(order)
    for b, q in rep.items():
        new_edges[order[b]] = _merge_edges((lo, hi, order[block[t]]) for lo, hi, t in edges[q])
        new_accept[order[b]] = accept[q]
    return Dfa(new_edges, new_accept, minimal=True)


def _acyclic_blocks(edges, accept) -> Optional[List[int]]:
    """Equivalence blocks of a trimmed DFA whose only cycles are self-loops (tries, key
    complements, bounded lengths), in one pass; None when there is a longer cycle.

    States are classified successors first.  A state joins a block when its signature
    (acceptance and fused edges with targets replaced by their blocks) equals the block's, an
    edge into the block itself (a self-loop, or an edge to a member: a state can equal a
    successor, e.g. ``a -> a*``) counting as "same block".  The relation "q and the block" is
    then closed under transitions, so it is exactly language equivalence.
    """
    n = len(accept)
    order = _order_if_acyclic([[t for _, _, t in es] for es in edges])
    if order is None:
        return None
    block = [-1] * n
    sigs: Dict[tuple, int] = {}
    uses: List[frozenset] = []  # per block: the other blocks its signature names
    for q in order:  # successors first
        es = edges[q]
        acc = accept[q]
        sig = (acc, _merge_edges([(lo, hi, -1 if t == q else block[t]) for lo, hi, t in es]))
        b = sigs.get(sig)
        if b is None:
            succ = {block[t] for _, _, t in es if t != q}
            for c in succ:
                # q can equal its successor's block c only if both name the same other blocks
                if uses[c] != succ - {c}:
                    continue
                alt = (acc, _merge_edges([(lo, hi, -1 if t == q or block[t] == c else block[t])
                                          for lo, hi, t in es]))
                if sigs.get(alt) == c:
                    b = c
                    break
            else:
                b = sigs[sig] = len(sigs)
                uses.append(frozenset(succ))
        block[q] = b
    return block


def _moore_blocks(edges, accept) -> List[int]:
    """Equivalence blocks of a trimmed DFA (Moore refinement until stable).

    Rounds run in the Cython kernel over a dense ``states x symbol-classes`` table (a
    pattern x length product needs as many rounds as its length); a table too large for memory
    falls back to hashing each state's merged edge signature in Python.  Both are exact.
    """
    n = len(accept)
    cuts = sorted({x for es in edges for lo, hi, _ in es for x in (lo, hi + 1)})
    width = max(len(cuts) - 1, 1)
    block = np.asarray(accept, dtype=np.int64)
    n_blocks = len(set(accept))
    if n * width <= _DENSE_MINIMIZE_CELLS:
        col = {c: i for i, c in enumerate(cuts)}
        table = np.full((n, width), -1, dtype=np.int32)
        for q, es in enumerate(edges):
            row = table[q]
            for lo, hi, t in es:
                row[col[lo]:col[hi + 1]] = t
        while True:
            new_block = refine_round(block, table)
            m = int(new_block.max()) + 1 if n else 0
            if m == n_blocks:
                return new_block.tolist()
            block, n_blocks = new_block, m
    blk = block.tolist()
    while True:
        sigs: Dict[tuple, int] = {}
        new_blk = []
        for q in range(n):
            sig = (blk[q], _merge_edges((lo, hi, blk[t]) for lo, hi, t in edges[q]))
            b = sigs.get(sig)
            if b is None:
                b = sigs[sig] = len(sigs)
            new_blk.append(b)
        if len(sigs) == n_blocks:
            return new_blk
        blk, n_blocks = new_blk, len(sigs)


def dfa_with_length(a: Dfa, min_len: int, max_len: Optional[int],
                    max_states: int = MAX_DFA_STATES) -> Dfa:
    """Strings of ``a`` whose length (in code points) lies in ``[min_len, max_len]``.

    The product of ``a`` with a length counter (saturating at ``max_len``, or at ``min_len``
    when unbounded), explored along ``a``'s own edges; ``max_states`` caps its reachable
    states."""
    cap = max_len if max_len is not None else min_len
    a_edges = a.edges
    ids = {(0, 0): 0}
    keys = [(0, 0)]
    edges = []
    i = 0
    while i < len(keys):  # (_explore's loop, inlined: this one runs up to max_states times)
        if not i & 255:
            deadline.check()
        q, n = keys[i]
        out = []
        if max_len is None or n < max_len:
            n2 = n + 1 if n < cap else cap
            for lo, hi, t in a_edges[q]:
                s = ids.get((t, n2))
                if s is None:
                    if len(keys) >= max_states:
                        raise GrammarLimitError(f"automaton exceeds {max_states} states")
                    s = ids[(t, n2)] = len(keys)
                    keys.append((t, n2))
                out.append((lo, hi, s))
        edges.append(tuple(out))
        i += 1
    accept = a.accept
    return dfa_minimize(Dfa(edges, [accept[q] and n >= min_len for q, n in keys]))


def dfa_literals(words: Sequence[str]) -> Dfa:
    """The DFA (a trie) accepting exactly ``words``."""
    trie, accept = _trie(words)
    edges = [_merge_edges((cp, cp, t) for cp, t in d.items()) for d in trie]
    return dfa_minimize(Dfa(edges, accept))


def _trie(words: Sequence[str]) -> Tuple[List[Dict[int, int]], List[bool]]:
    """(children: code point -> node, per node; whether a word ends there); node 0 is the
    root and every child has a larger number than its parent."""
    trie: List[Dict[int, int]] = [{}]
    is_word = [False]
    for w in words:
        q = 0
        for ch in w:
            cp = ord(ch)
            nxt = trie[q].get(cp)
            if nxt is None:
                nxt = trie[q][cp] = len(trie)
                trie.append({})
                is_word.append(False)
            q = nxt
        is_word[q] = True
    return trie, is_word


def dfa_word_complement(words: Sequence[str], alphabet: Sequence[Tuple[int, int]]) -> Dfa:
    """The minimal DFA of the strings over ``alphabet`` (sorted, disjoint ``(lo, hi)``
    ranges) that are not in ``words``, every character of which must lie in
    ``alphabet``; built directly, in the canonical form of :func:`dfa_minimize`.

    Equal to ``dfa_minimize`` of ``dfa_complement(dfa_literals(words))`` restricted to
    ``alphabet``: the states are the trie nodes merged by their sets of word endings (two
    nodes are equivalent iff those are equal, as the sets are finite) plus one state
    accepting everything; all are live and pairwise different, so nothing else merges.

    Example::

        >>> d = dfa_word_complement(["ab"], [(97, 98)])
        >>> [d.matches(w) for w in ("", "a", "ab", "abb", "b")]
        [True, True, False, True, True]
    """
    children, is_word = _trie(words)
    # trie nodes -> classes, children first (a child has a larger id than its parent); per
    # class, the sorted (code point, class) children and the word flag of its first node
    n = len(children)
    cls = [0] * n
    sigs: Dict[tuple, int] = {}
    class_kids: List[tuple] = []
    class_word: List[bool] = []
    for q in range(n - 1, -1, -1):
        ch = children[q]
        if len(ch) == 1:
            ks = tuple((cp, cls[t]) for cp, t in ch.items())
        else:
            ks = tuple(sorted([(cp, cls[t]) for cp, t in ch.items()]))
        sig = (is_word[q], ks)
        c = sigs.get(sig)
        if c is None:
            c = sigs[sig] = len(sigs)
            class_kids.append(ks)
            class_word.append(is_word[q])
        cls[q] = c
    # states in BFS order from the root (edges in code point order, fused), as _canonical
    # numbers them; class ``univ`` accepts everything
    univ = len(sigs)
    ids = {cls[0]: 0}
    queue = [cls[0]]
    edges: List[tuple] = []
    accept: List[bool] = []
    head = 0
    while head < len(queue):
        c = queue[head]
        head += 1
        out: List[Tuple[int, int, int]] = []
        if c == univ:
            ks: tuple = ()
            accept.append(True)
        else:
            ks = class_kids[c]
            accept.append(not class_word[c])
        i, nk = 0, len(ks)
        for lo, hi in alphabet:
            pos = lo
            while pos <= hi:
                if i < nk and ks[i][0] <= hi:
                    cp, t = ks[i]
                    if cp < pos:
                        raise ValueError(f"character {chr(cp)!r} of a word is outside the alphabet")
                    if cp > pos:  # a gap: to the accept-all state
                        t, cp = univ, cp - 1
                    else:
                        i += 1
                else:
                    t, cp = univ, hi
                tid = ids.get(t)
                if tid is None:
                    tid = ids[t] = len(queue)
                    queue.append(t)
                if out and out[-1][2] == tid and out[-1][1] + 1 == pos:
                    out[-1] = (out[-1][0], cp, tid)
                else:
                    out.append((pos, cp, tid))
                pos = cp + 1
        if i < nk:
            raise ValueError(f"character {chr(ks[i][0])!r} of a word is outside the alphabet")
        edges.append(tuple(out))
    return Dfa(edges, accept, minimal=True)


# ---------------------------------------------------------------------------- expr -> DFA

class _Nfa:
    __slots__ = ("eps", "sym")

    def __init__(self):
        self.eps: List[List[int]] = []
        self.sym: List[List[Tuple[Tuple[Tuple[int, int], ...], int]]] = []

    def new(self) -> int:
        if len(self.eps) >= MAX_NFA_STATES:
            raise GrammarLimitError(f"regular expression expands to more than {MAX_NFA_STATES} states")
        self.eps.append([])
        self.sym.append([])
        return len(self.eps) - 1

    def build(self, e: Expr, s: int) -> int:
        if isinstance(e, Bytes):
            text = e.data.decode("utf-8")
            for ch in text:
                t = self.new()
                self.sym[s].append((((ord(ch), ord(ch)),), t))
                s = t
            return s
        if isinstance(e, CharClass):
            if e.byte_level:
                raise ValueError("byte-level character classes have no code point meaning")
            t = self.new()
            rs = e.positive_ranges()
            if rs:
                self.sym[s].append((rs, t))
            return t
        if isinstance(e, Seq):
            for item in e.items:
                s = self.build(item, s)
            return s
        if isinstance(e, Choice):
            end = self.new()
            for item in e.items:
                b = self.new()
                self.eps[s].append(b)
                self.eps[self.build(item, b)].append(end)
            return end
        if isinstance(e, Repeat):
            for _ in range(e.min):
                s = self.build(e.item, s)
            if e.max is None:
                loop = self.new()
                self.eps[s].append(loop)
                self.eps[self.build(e.item, loop)].append(loop)
                return loop
            end = self.new()
            for _ in range(e.max - e.min):
                self.eps[s].append(end)
                s = self.build(e.item, s)
            self.eps[s].append(end)
            return end
        raise ValueError(f"cannot build an automaton for {type(e).__name__}")


def dfa_from_expr(expr: Expr, max_states: int = MAX_DFA_STATES) -> Dfa:
    """Subset construction over code points for an expression without rule references."""
    nfa = _Nfa()
    start = nfa.new()
    end = nfa.build(expr, start)

    def closure(states) -> frozenset:
        seen = set(states)
        stack = list(states)
        while stack:
            q = stack.pop()
            for t in nfa.eps[q]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return frozenset(seen)

    s0 = closure([start])
    ids = {s0: 0}
    keys = [s0]
    edges = []
    i = 0
    while i < len(keys):
        cur = keys[i]
        moves = [(rs, t) for q in cur for rs, t in nfa.sym[q]]
        out = []
        if moves:
            for lo, hi in _split_points([rs for rs, _ in moves]):
                targets = [t for rs, t in moves if _in_ranges(lo, rs)]
                if not targets:
                    continue
                nxt = closure(targets)
                t = ids.get(nxt)
                if t is None:
                    if len(keys) >= max_states:
                        raise GrammarLimitError(f"regular expression DFA exceeds {max_states} states")
                    t = ids[nxt] = len(keys)
                    keys.append(nxt)
                out.append((lo, hi, t))
        edges.append(_merge_edges(out))
        i += 1
    return dfa_minimize(Dfa(edges, [end in k for k in keys]))


def _in_ranges(cp: int, ranges) -> bool:
    for lo, hi in ranges:
        if lo <= cp <= hi:
            return True
    return False


# ---------------------------------------------------------------------------- DFA -> IR

def dfa_to_expr(a: Dfa, sink: Optional[RuleSink], hint: str = "dfa",
                label: Optional[Callable[[Tuple[Tuple[int, int], ...]], Expr]] = None) -> Optional[Expr]:
    """Emit a (minimized) DFA as IR.  Returns None for the empty language.

    ``label`` maps a code point set to the expression of one symbol (default: a
    :class:`CharClass`).  States on cycles other than self-loops, and states with several
    predecessors whose expansion is large, become rules in ``sink`` (a ``ValueError`` if
    ``sink`` is None and a rule is needed).
    """
    a = dfa_minimize(a)
    if not a.accept[0] and not a.edges[0]:
        return None
    if label is None:
        # the default labels are shared by every call (the same character classes recur)
        label, memo_lab, memo_size = _plain_label, _PLAIN_LABELS, _PLAIN_SIZES
        if len(memo_lab) > 8192:
            memo_lab.clear()
            memo_size.clear()
    else:
        memo_lab, memo_size = {}, {}
    n = a.n_states
    # group edges by target
    grouped: List[List[Tuple[int, Tuple[Tuple[int, int], ...]]]] = []
    indeg = [0] * n
    for q in range(n):
        by_t: Dict[int, List[Tuple[int, int]]] = {}
        for lo, hi, t in a.edges[q]:
            by_t.setdefault(t, []).append((lo, hi))
        grouped.append([(t, tuple(rs)) for t, rs in by_t.items()])
        for t in by_t:
            if t != q:
                indeg[t] += 1
    order = _acyclic_order(n, grouped)
    if order is None:
        cyc = _cyclic_states(n, grouped)
        order = _topo_order(n, grouped, cyc)
    else:
        cyc = set()  # (the usual case: key tries, bounded strings)
    size: Dict[int, int] = {}
    needs_rule = [False] * n
    for q in cyc:
        needs_rule[q] = True
    # sizes bottom-up (acyclic part), deciding rules for shared big states
    def lab_size(rs) -> int:
        sz = memo_size.get(rs)
        if sz is None:
            e = memo_lab.get(rs)
            if e is None:
                e = memo_lab[rs] = label(rs)
            sz = memo_size[rs] = _expr_size(e)
        return sz

    for q in order:
        s = 1
        for t, rs in grouped[q]:
            ls = lab_size(rs)
            if t == q or needs_rule[t]:
                s += 1 + ls
            else:
                s += ls + size[t]
        size[q] = s
        if indeg[q] > 1 and s > 12 and q != 0:
            needs_rule[q] = True
    names: Dict[int, str] = {}
    for q in range(n):
        if needs_rule[q] and q != 0:
            if sink is None:
                raise ValueError("this automaton needs rules; pass a RuleSink")
            names[q] = sink.fresh(f"{hint}_s{q}")
    memo: Dict[int, Expr] = {}

    def lab(rs):
        e = memo_lab.get(rs)
        if e is None:
            e = memo_lab[rs] = label(rs)
        return e

    def body(q: int) -> Expr:
        loop = None
        alts = []
        for t, rs in grouped[q]:
            if t == q:
                loop = Repeat(lab(rs), 0, None)
            else:
                alts.append(make_seq([lab(rs), ref(t)]))
        if a.accept[q]:
            alts.append(EPSILON)
        rest = make_choice(alts) if alts else None
        if rest is None:
            # only a self-loop and not accepting: cannot happen in a minimized, live DFA
            rest = EPSILON
        return make_seq([loop, rest]) if loop is not None else rest

    def ref(t: int) -> Expr:
        if t in names:
            return RuleRef(names[t])
        e = memo.get(t)
        if e is None:
            e = memo[t] = body(t)
        return e

    for q in order:  # build acyclic inline parts bottom-up (no deep recursion)
        if q not in names and q != 0:
            ref(q)
    for q, name in names.items():
        sink.define(name, body(q))
    if 0 in cyc:
        name0 = sink.fresh(f"{hint}_s0") if sink is not None else None
        if name0 is None:
            raise ValueError("this automaton needs rules; pass a RuleSink")
        sink.define(name0, body(0))
        return RuleRef(name0)
    return body(0)


def _expr_size(e: Expr, cap: int = 10_000) -> int:
    """Node count of an expression (saturating at ``cap``)."""
    n = 0
    stack = [e]
    while stack and n < cap:
        x = stack.pop()
        n += 1
        if isinstance(x, (Seq, Choice)):
            stack.extend(x.items)
        elif isinstance(x, Repeat):
            stack.append(x.item)
    return n


_PLAIN_LABELS: Dict[tuple, Expr] = {}
_PLAIN_SIZES: Dict[tuple, int] = {}


def _plain_label(ranges) -> Expr:
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1] and not 0xD800 <= ranges[0][0] <= 0xDFFF:
        return Bytes(chr(ranges[0][0]).encode("utf-8"))
    return CharClass(tuple(ranges))


def _cyclic_states(n: int, grouped) -> set:
    """States on a cycle of length >= 2 (self-loops are emitted as repeats)."""
    succ = [[t for t, _ in grouped[q] if t != q] for q in range(n)]
    out: set = set()
    for comp in strongly_connected_components(range(n), succ.__getitem__):
        if len(comp) > 1:
            out.update(comp)
    return out


def _acyclic_order(n: int, grouped) -> Optional[List[int]]:
    """Successors-first order of the states when the only cycles are self-loops (the order
    :func:`_topo_order` gives then); None when there is a longer cycle."""
    return _order_if_acyclic([[t for t, _ in g] for g in grouped])


def _order_if_acyclic(succ: List[List[int]]) -> Optional[List[int]]:
    """Successors-first (DFS post-) order of the nodes ``0..len(succ)-1`` of a graph whose only
    cycles are self-loops; None when it has a longer cycle."""
    order: List[int] = []
    state = [0] * len(succ)  # 0 new, 1 on the DFS path, 2 done
    for root in range(len(succ)):
        if state[root]:
            continue
        state[root] = 1
        stack = [(root, iter(succ[root]))]
        while stack:
            q, it = stack[-1]
            for t in it:
                if t == q:
                    continue
                st = state[t]
                if st == 1:
                    return None
                if st == 0:
                    state[t] = 1
                    stack.append((t, iter(succ[t])))
                    break
            else:
                stack.pop()
                state[q] = 2
                order.append(q)
    return order


def _topo_order(n: int, grouped, cyc: set) -> List[int]:
    """Successors-first order; edges into cyclic states are cut."""
    order: List[int] = []
    done = set()
    for root in range(n):
        if root in done:
            continue
        stack = [(root, 0)]
        while stack:
            q, i = stack.pop()
            if i == 0 and q in done:
                continue
            succ = [t for t, _ in grouped[q] if t != q and t not in cyc]
            if i < len(succ):
                stack.append((q, i + 1))
                if succ[i] not in done:
                    stack.append((succ[i], 0))
            else:
                if q not in done:
                    done.add(q)
                    order.append(q)
    return order


# ============================================================================ numbers

def to_fraction(x: Number) -> Fraction:
    """Exact value of a schema number: floats use their shortest repr (``0.1`` is 1/10)."""
    if isinstance(x, bool):
        raise TypeError("a boolean is not a number")
    if isinstance(x, int):
        return Fraction(x)
    if isinstance(x, Fraction):
        return x
    if isinstance(x, float):
        if x != x or x in (float("inf"), float("-inf")):
            raise ValueError(f"not a finite number: {x!r}")
        return Fraction(Decimal(repr(x)))
    if isinstance(x, Decimal):
        if not x.is_finite():
            raise ValueError(f"not a finite number: {x!r}")
        return Fraction(x)
    if isinstance(x, str):
        try:
            d = Decimal(x)
        except InvalidOperation:
            raise ValueError(f"not a number: {x!r}") from None
        return to_fraction(d)
    raise TypeError(f"not a number: {x!r}")


def _decimal_digits(x: Fraction) -> Tuple[str, str]:
    """``x >= 0`` with a finite decimal expansion -> (integer digits, fraction digits without
    trailing zeros).  Raises ValueError when the expansion is infinite (e.g. 1/3)."""
    if x < 0:
        raise ValueError("negative")
    num, den = x.numerator, x.denominator
    k = 0
    d = den
    for p in (2, 5):
        while d % p == 0:
            d //= p
    if d != 1:
        raise ValueError(f"{x} has no finite decimal expansion")
    while den != 1 and (10 ** k) % den != 0:
        k += 1
    scaled = num * (10 ** k // den)
    s = str(scaled).rjust(k + 1, "0")
    ip, fp = (s[:-k], s[-k:]) if k else (s, "")
    fp = fp.rstrip("0")
    if len(ip) + len(fp) > MAX_NUMBER_DIGITS:
        raise GrammarLimitError(f"numeric bound {x} has more than {MAX_NUMBER_DIGITS} digits")
    return ip, fp


_DIGIT_ALPHABET = [(c, c) for c in b"0123456789.-+eE"]


class _Cmp:
    """Online comparison of an unsigned decimal text with a fixed bound ``b`` (>= 0).

    State: (phase, n, lex) -- phase 0: integer part, ``n`` digits read (capped at
    ``len(bi) + 1``), ``lex`` the lexicographic comparison with ``bi[:n]``; phase 1: fraction,
    ``n`` fraction digits read (capped at ``len(bf)``), ``lex`` the running comparison with
    the bound's fraction padded with zeros (once nonzero it is final).
    """

    __slots__ = ("bi", "bf")

    def __init__(self, b: Fraction):
        self.bi, self.bf = _decimal_digits(b)

    def start(self):
        return (0, 0, 0)

    def int_digit(self, st, d: str):
        _, n, lex = st
        bi = self.bi
        if n < len(bi) and lex == 0:
            lex = (d > bi[n]) - (d < bi[n])
        return (0, min(n + 1, len(bi) + 1), lex)

    def end_int(self, st):
        """Comparison of the integer part with the bound's integer part."""
        _, n, lex = st
        if n < len(self.bi):
            return -1
        if n > len(self.bi):
            return 1
        return lex

    def to_frac(self, st):
        c = self.end_int(st)
        return (1, 0, c)

    def frac_digit(self, st, d: str):
        _, n, lex = st
        if lex != 0:
            return st
        bf = self.bf
        bd = bf[n] if n < len(bf) else "0"
        lex = (d > bd) - (d < bd)
        return (1, min(n + 1, len(bf)), lex)

    def final(self, st) -> int:
        phase, n, lex = st
        if phase == 0:
            c = self.end_int(st)
            if c != 0:
                return c
            return -1 if self.bf else 0
        if lex != 0:
            return lex
        return -1 if n < len(self.bf) else 0


def _check_cmp(c: int, bound_kind: str, exclusive: bool) -> bool:
    if bound_kind == "lo":
        return c > 0 or (c == 0 and not exclusive)
    return c < 0 or (c == 0 and not exclusive)


def _magnitude_plain_dfa(lo: Optional[Fraction], lo_excl: bool, hi: Optional[Fraction],
                         hi_excl: bool, *, int_only: bool, mult: Optional[Fraction],
                         single_digit_int: bool = False, nonint: bool = False,
                         not_mults: Sequence[Fraction] = ()) -> Dfa:
    """Unsigned ``(0|[1-9][0-9]*)(\\.[0-9]+)?`` (``int_only``: no fraction;
    ``single_digit_int``: integer part one digit 1-9) with value in the interval, a multiple
    of ``mult`` (if given), not a multiple of any of ``not_mults``, and (``nonint``) not an
    integer.  Memoized process-wide (a pure function; the same bounds recur across schemas)."""
    key = (lo, lo_excl, hi, hi_excl, int_only, mult, single_digit_int, nonint, tuple(not_mults))
    d = _MAGNITUDE_DFAS.get(key)
    if d is None:
        if len(_MAGNITUDE_DFAS) >= 1024:
            _MAGNITUDE_DFAS.clear()
        d = _MAGNITUDE_DFAS[key] = _magnitude_plain_dfa_uncached(
            lo, lo_excl, hi, hi_excl, int_only=int_only, mult=mult,
            single_digit_int=single_digit_int, nonint=nonint, not_mults=not_mults)
    return d


_MAGNITUDE_DFAS: Dict[tuple, Dfa] = {}


def _magnitude_plain_dfa_uncached(lo: Optional[Fraction], lo_excl: bool, hi: Optional[Fraction],
                                  hi_excl: bool, *, int_only: bool, mult: Optional[Fraction],
                                  single_digit_int: bool = False, nonint: bool = False,
                                  not_mults: Sequence[Fraction] = ()) -> Dfa:
    clo = _Cmp(lo) if lo is not None else None
    chi = _Cmp(hi) if hi is not None else None
    mods = ([(mult, True)] if mult is not None else []) + [(f, False) for f in not_mults]
    # a value is a multiple of p/q  <=>  value * 10^k is a multiple of p * 10^k / q, for any k
    # with q | 10^k; one common k for all constraints
    k = 0
    for f, _ in mods:
        while (10 ** k) % f.denominator != 0:
            k += 1
            if k > 30:
                raise GrammarLimitError(f"multipleOf {f} has no finite decimal expansion")
    moduli = tuple(f.numerator * (10 ** k // f.denominator) for f, _ in mods)
    wants = tuple(w for _, w in mods)
    size = 1
    for mo in moduli:
        size *= mo
    if size > MAX_MULTIPLE_OF_STATES:
        raise GrammarLimitError(f"multipleOf needs {size} remainder states (limit {MAX_MULTIPLE_OF_STATES})")
    any_want = any(wants)
    zeros = tuple(0 for _ in moduli)

    # state: (phase, cmp_lo, cmp_hi, rems, fpos, extra, nz)
    #   phase 0 start, 1 after a leading '0', 2 in integer digits, 3 after '.', 4 in fraction
    #   rems: integer part mod each modulus in phases 1-2, (value*10^k so far) mod in 3-4
    #   fpos: fraction digits read (capped at k); extra: a nonzero digit beyond the k-th
    #   fraction digit (the value*10^k is then not an integer); nz: a nonzero fraction digit
    def step(st, cp):
        ch = chr(cp)
        phase, cl, chh, rems, fpos, extra, nz = st
        if "0" <= ch <= "9":
            d = cp - 48
            if phase == 0:
                if single_digit_int and d == 0:
                    return None
                return (1 if d == 0 else 2,
                        clo.int_digit(clo.start(), ch) if clo else None,
                        chi.int_digit(chi.start(), ch) if chi else None,
                        tuple(d % mo for mo in moduli), 0, False, False)
            if phase == 1 or (phase == 2 and single_digit_int):
                return None
            if phase == 2:
                return (2, clo.int_digit(cl, ch) if clo else None,
                        chi.int_digit(chh, ch) if chi else None,
                        tuple((r * 10 + d) % mo for r, mo in zip(rems, moduli)), 0, False, False)
            if phase in (3, 4):
                if moduli:
                    if fpos < k:
                        rems = tuple((r + d * 10 ** (k - 1 - fpos)) % mo for r, mo in zip(rems, moduli))
                        fpos += 1
                    elif d != 0:
                        if any_want:
                            return None
                        extra = True
                return (4, clo.frac_digit(cl, ch) if clo else None,
                        chi.frac_digit(chh, ch) if chi else None, rems, fpos, extra,
                        (nz or d != 0) if nonint else False)
            return None
        if ch == "." and phase in (1, 2) and not int_only:
            return (3, clo.to_frac(cl) if clo else None, chi.to_frac(chh) if chi else None,
                    tuple((r * 10 ** k) % mo for r, mo in zip(rems, moduli)), 0, False, False)
        return None

    def accepting(st):
        phase, cl, chh, rems, fpos, extra, nz = st
        if phase not in (1, 2, 4) or (nonint and not nz):
            return False
        if phase != 4:
            rems = tuple((r * 10 ** k) % mo for r, mo in zip(rems, moduli))
        for r, want in zip(rems, wants):
            if want and r != 0:
                return False
            if not want and r == 0 and not extra:
                return False
        if clo is not None and not _check_cmp(clo.final(cl), "lo", lo_excl):
            return False
        if chi is not None and not _check_cmp(chi.final(chh), "hi", hi_excl):
            return False
        return True

    alphabet = [(c, c) for c in b"0123456789."]
    return dfa_minimize(dfa_from_step((0, None, None, zeros, 0, False, False), step, accepting, alphabet))


_DIGIT = CharClass(((0x30, 0x39),))
_NONZERO = CharClass(((0x31, 0x39),))
_DIGITS = Repeat(_DIGIT, 1, None)
_UINT = make_choice([Bytes(b"0"), make_seq([_NONZERO, Repeat(_DIGIT, 0, None)])])
_FRAC = make_seq([Bytes(b"."), _DIGITS])
_EXP = make_seq([CharClass(((0x45, 0x45), (0x65, 0x65))), Repeat(CharClass(((0x2B, 0x2B), (0x2D, 0x2D))), 0, 1), _DIGITS])
_EXP_MARK = CharClass(((0x45, 0x45), (0x65, 0x65)))


def _exp_int_dfa(lo: Optional[int], hi: Optional[int]) -> Dfa:
    """Exponent text ``[+-]?[0-9]+`` (leading zeros allowed) with value in ``[lo, hi]``."""
    clo = _Cmp(Fraction(abs(lo))) if lo is not None else None
    chi = _Cmp(Fraction(abs(hi))) if hi is not None else None

    # state: (phase, neg, cl, ch, nonzero) ; phase 0 start, 1 after sign, 2 digits
    def step(st, cp):
        ch = chr(cp)
        phase, neg, cl, chh, nz = st
        if ch in "+-" and phase == 0:
            return (1, ch == "-", cl, chh, nz)
        if ch.isdigit():
            if not nz and ch == "0":
                return (2, neg, cl, chh, False)  # leading zeros do not count
            cl2 = clo.int_digit(cl if nz else clo.start(), ch) if clo else None
            ch2 = chi.int_digit(chh if nz else chi.start(), ch) if chi else None
            return (2, neg, cl2, ch2, True)
        return None

    def value_cmp(cmp_obj, cstate, nz, neg, bound) -> int:
        """Sign of (value - bound)."""
        if not nz:
            return (0 > bound) - (0 < bound)
        if neg:
            return -1 if bound >= 0 else -cmp_obj.end_int(cstate)
        return 1 if bound <= 0 else cmp_obj.end_int(cstate)

    def accepting(st):
        phase, neg, cl, chh, nz = st
        if phase != 2:
            return False
        if lo is not None and value_cmp(clo, cl, nz, neg, lo) < 0:
            return False
        if hi is not None and value_cmp(chi, chh, nz, neg, hi) > 0:
            return False
        return True

    start = (0, False, clo.start() if clo else None, chi.start() if chi else None, False)
    alphabet = [(c, c) for c in b"0123456789+-"]
    return dfa_minimize(dfa_from_step(start, step, accepting, alphabet))


def _ceil_log10(x: Fraction) -> int:
    """Smallest E with 10^E >= x (x > 0)."""
    e = len(str(x.numerator)) - len(str(x.denominator))
    while Fraction(10) ** e < x:
        e += 1
    while Fraction(10) ** (e - 1) >= x:
        e -= 1
    return e


def _floor_log10(x: Fraction) -> int:
    """Largest E with 10^E <= x (x > 0)."""
    e = len(str(x.numerator)) - len(str(x.denominator))
    while Fraction(10) ** e > x:
        e -= 1
    while Fraction(10) ** (e + 1) <= x:
        e += 1
    return e


def _positive_part(lo: Optional[Fraction], lo_excl: bool, hi: Optional[Fraction], hi_excl: bool,
                   *, integer: bool, mult: Optional[Fraction], sink: Optional[RuleSink], hint: str,
                   exponents: bool, nonint: bool = False, not_mults=()) -> Optional[Expr]:
    """Unsigned texts with value in the interval, where ``lo >= 0`` and the value 0 is excluded
    (the caller handles zero spellings).  ``lo = 0`` means (0, ...]."""
    if lo is None or lo < 0:
        lo, lo_excl = Fraction(0), True
    if lo == 0:
        lo_excl = True
    if hi is not None and (hi < lo or (hi == lo and (hi_excl or lo_excl))):
        return None
    if integer:
        ilo = _int_lo(lo, lo_excl)
        ihi = _int_hi(hi, hi_excl) if hi is not None else None
        if ihi is not None and ihi < ilo:
            return None
        d = _magnitude_plain_dfa(Fraction(ilo), False, None if ihi is None else Fraction(ihi), False,
                                 int_only=True, mult=mult, not_mults=not_mults)
        return dfa_to_expr(d, sink, hint)
    if hi is None and lo == 0 and mult is None and exponents and not nonint and not not_mults:
        # every nonzero unsigned number, exponent forms included
        nz = make_seq([_NONZERO, Repeat(_DIGIT, 0, None)])
        zero_int_nonzero_frac = make_seq([Bytes(b"0."), Repeat(Bytes(b"0"), 0, None), _NONZERO, Repeat(_DIGIT, 0, None)])
        nonzero_int = make_seq([nz, Repeat(_FRAC, 0, 1)])
        return make_seq([make_choice([nonzero_int, zero_int_nonzero_frac]), Repeat(_EXP, 0, 1)])
    d = _magnitude_plain_dfa(lo, lo_excl, hi, hi_excl, int_only=False, mult=mult, nonint=nonint,
                             not_mults=not_mults)
    plain = dfa_to_expr(d, sink, hint)
    if not exponents or mult is not None or nonint or not_mults:
        return plain
    # normalized scientific forms  m e E  with m in [1, 10): value in [10^E, 10^(E+1))
    alts = [plain] if plain is not None else []
    # decades fully inside the interval: E1 <= E <= E2 (None = unbounded)
    e1 = None if lo == 0 else (_ceil_log10_strict(lo) if lo_excl else _ceil_log10(lo))
    e2 = None if hi is None else _floor_log10(hi) - 1
    if e1 is None or e2 is None or e1 <= e2:
        mant = make_seq([_NONZERO, Repeat(_FRAC, 0, 1)])
        eexpr = dfa_to_expr(_exp_int_dfa(e1, e2), sink, hint + "_exp")
        if eexpr is not None:
            alts.append(make_seq([mant, _EXP_MARK, eexpr]))
    partial = set()
    if lo != 0:
        partial.add(_floor_log10(lo))
    if hi is not None:
        partial.add(_floor_log10(hi))
    for e in sorted(partial):
        if (e1 is None or e >= e1) and (e2 is None or e <= e2):
            continue  # a full decade, already covered
        scale = Fraction(10) ** e
        mlo, mlo_x = Fraction(1), False
        mhi, mhi_x = Fraction(10), True
        if lo / scale > mlo or (lo / scale == mlo and lo_excl):
            mlo, mlo_x = lo / scale, lo_excl
        if hi is not None and (hi / scale < mhi or (hi / scale == mhi and hi_excl)):
            mhi, mhi_x = hi / scale, hi_excl
        if mhi < mlo or (mhi == mlo and (mlo_x or mhi_x)):
            continue
        md = _magnitude_plain_dfa(mlo, mlo_x, mhi, mhi_x, int_only=False, mult=None,
                                  single_digit_int=True)
        mexpr = dfa_to_expr(md, sink, hint + "_mant")
        if mexpr is None:
            continue
        eexpr = dfa_to_expr(_exp_int_dfa(e, e), sink, hint + "_exp")
        alts.append(make_seq([mexpr, _EXP_MARK, eexpr]))
    return make_choice(alts) if alts else None


def _ceil_log10_strict(x: Fraction) -> int:
    """Smallest E with 10^E > x."""
    e = _ceil_log10(x)
    if Fraction(10) ** e == x:
        e += 1
    return e


def _int_lo(lo: Fraction, excl: bool) -> int:
    n = -((-lo.numerator) // lo.denominator)  # ceil
    if excl and Fraction(n) == lo:
        n += 1
    return n


def _int_hi(hi: Fraction, excl: bool) -> int:
    n = hi.numerator // hi.denominator  # floor
    if excl and Fraction(n) == hi:
        n -= 1
    return n


def number_expr(lo: Optional[Number] = None, hi: Optional[Number] = None, *,
                lo_exclusive: bool = False, hi_exclusive: bool = False,
                multiple_of: Optional[Number] = None, integer: bool = False,
                non_integer: bool = False, not_multiple_of: Sequence[Number] = (),
                sink: Optional[RuleSink] = None, hint: str = "num") -> Optional[Expr]:
    """JSON number texts with value in the interval (and a multiple of ``multiple_of``).

    ``integer=True`` uses integer syntax only (``-?(0|[1-9][0-9]*)``); ``non_integer=True``
    accepts only non-integer values, in plain spelling (``-?int.frac`` with a nonzero
    fraction digit; exponent forms are rejected).  ``not_multiple_of``: values that are not
    multiples of any of these (plain spellings only).  Returns None when no value qualifies.
    See the module docstring for which exponent forms are accepted.
    """
    if integer and non_integer:
        return None
    flo = to_fraction(lo) if lo is not None else None
    fhi = to_fraction(hi) if hi is not None else None
    mult = to_fraction(multiple_of) if multiple_of is not None else None
    if mult is not None and mult <= 0:
        raise ValueError("multipleOf must be > 0")
    if mult is not None and integer and mult.denominator != 1:
        # an integer n is a multiple of p/q (reduced)  <=>  p divides n*q  <=>  p divides n
        mult = Fraction(mult.numerator)
    if mult is not None and mult == 1 and integer:
        mult = None
    not_mults = []
    for x in not_multiple_of:
        f = to_fraction(x)
        if f <= 0:
            raise ValueError("multipleOf must be > 0")
        if integer and f.denominator != 1:
            f = Fraction(f.numerator)
        if integer and f == 1:
            return None  # every integer is a multiple of 1
        not_mults.append(f)
    if flo is not None and fhi is not None:
        if fhi < flo or (fhi == flo and (lo_exclusive or hi_exclusive)):
            return None
    if integer:
        if flo is not None:
            flo, lo_exclusive = Fraction(_int_lo(flo, lo_exclusive)), False
        if fhi is not None:
            fhi, hi_exclusive = Fraction(_int_hi(fhi, hi_exclusive)), False
        if flo is not None and fhi is not None and fhi < flo:
            return None
    exponents = not integer and mult is None and not non_integer and not not_mults
    unbounded = flo is None and fhi is None
    if unbounded and mult is None and not non_integer and not not_mults:
        if integer:
            return make_seq([Repeat(Bytes(b"-"), 0, 1), _UINT])
        return make_seq([Repeat(Bytes(b"-"), 0, 1), _UINT, Repeat(_FRAC, 0, 1), Repeat(_EXP, 0, 1)])
    alts = []
    # zero
    zero_ok = ((flo is None or flo < 0 or (flo == 0 and not lo_exclusive))
               and (fhi is None or fhi > 0 or (fhi == 0 and not hi_exclusive)))
    if zero_ok and not non_integer and not not_mults:
        if integer:
            alts.append(make_seq([Repeat(Bytes(b"-"), 0, 1), Bytes(b"0")]))
        else:
            zfrac = Repeat(make_seq([Bytes(b"."), Repeat(Bytes(b"0"), 1, None)]), 0, 1)
            z = [Repeat(Bytes(b"-"), 0, 1), Bytes(b"0"), zfrac]
            if exponents:
                z.append(Repeat(_EXP, 0, 1))
            alts.append(make_seq(z))
    # positive values
    if fhi is None or fhi > 0:
        pos = _positive_part(flo, lo_exclusive, fhi, hi_exclusive, integer=integer, mult=mult,
                             sink=sink, hint=hint + "_pos", exponents=exponents, nonint=non_integer,
                             not_mults=not_mults)
        if pos is not None:
            alts.append(pos)
    # negative values: magnitude in [-hi, -lo]
    if flo is None or flo < 0:
        nlo = -fhi if fhi is not None else None
        nhi = -flo if flo is not None else None
        neg = _positive_part(nlo, hi_exclusive, nhi, lo_exclusive, integer=integer, mult=mult,
                             sink=sink, hint=hint + "_neg", exponents=exponents, nonint=non_integer,
                             not_mults=not_mults)
        if neg is not None:
            alts.append(make_seq([Bytes(b"-"), neg]))
    if not alts:
        return None
    return make_choice(alts)


def integer_expr(lo: Optional[int] = None, hi: Optional[int] = None, *,
                 multiple_of: Optional[Number] = None, sink: Optional[RuleSink] = None,
                 hint: str = "int") -> Optional[Expr]:
    """JSON integer texts with value in ``[lo, hi]`` (inclusive; None = open side)."""
    return number_expr(lo, hi, multiple_of=multiple_of, integer=True, sink=sink, hint=hint)


def number_grammar(*args, **kwargs) -> Grammar:
    """:func:`number_expr` as a standalone grammar (root ``root``; a never-matching grammar
    when no value qualifies)."""
    sink = RuleSink(prefix="num")
    sink.fresh("root")
    e = number_expr(*args, sink=sink, **kwargs)
    if e is None:
        e = CharClass(())
    rules = {"root": e}
    rules.update(sink.rules)
    return Grammar(rules, root="root")


def integer_grammar(lo: Optional[int] = None, hi: Optional[int] = None, **kwargs) -> Grammar:
    """:func:`integer_expr` as a standalone grammar."""
    return number_grammar(lo, hi, integer=True, **kwargs)
