"""Deterministic automata over Unicode code points and the operations on them.

A :class:`Dfa` reads code points (the JSON Schema converter's patterns, key sets, length
limits and number texts are all languages of characters, not bytes; the compiler lowers the
emitted IR to bytes later).  Its edges are sorted, disjoint code point intervals, so an
automaton over all of Unicode stays small.

* build: :func:`dfa_explore` (from a successor function), :func:`dfa_from_step` (from a
  step function), :func:`dfa_literals` (a word list), :func:`dfa_word_complement`
  (everything but a word list);
* combine: :func:`dfa_product` (and / or / difference), :func:`dfa_complement`,
  :func:`dfa_with_length` (restrict the length);
* :func:`dfa_minimize`: the canonical minimal automaton (what every operation returns, but
  the two explorations);
* helpers for code building its own automata: :func:`merge_edges`, :func:`split_points`.

Conversions from and to IR expressions are in :mod:`.dfa_expr`.

Example::

    >>> ab = dfa_literals(["a", "ab"])
    >>> not_a = dfa_complement(dfa_literals(["a"]))
    >>> d = dfa_product(ab, not_a, "and")
    >>> [d.matches(w) for w in ("a", "ab", "b")], d.n_states
    ([False, True, False], 3)
"""

from __future__ import annotations

from typing import Callable, Dict, Hashable, List, Optional, Sequence, Tuple

from .. import _deadline as deadline
from ..errors import GrammarLimitError
from ._cp_minimize import minimize_edges
from .cp_minimize_reference import minimize_reference
from .edge_runs import merge_edges
from .ir import MAX_CODE_POINT, complement_ranges, merge_ranges

__all__ = [
    "Dfa",
    "DfaContent",
    "MAX_DFA_STATES",
    "MEMO_MAX_STATES",
    "UNICODE_SCALARS",
    "dfa_complement",
    "dfa_explore",
    "dfa_from_step",
    "dfa_literals",
    "dfa_minimize",
    "dfa_product",
    "dfa_with_length",
    "dfa_word_complement",
    "memo_fits",
    "memo_put",
    "merge_edges",
    "split_points",
    "word_classes",
]

#: Cap on states of any DFA built here (GrammarLimitError beyond).
MAX_DFA_STATES = 20_000

#: Every Unicode scalar value (code points without the surrogates), as ``(lo, hi)`` ranges.
UNICODE_SCALARS = ((0, 0xD7FF), (0xE000, MAX_CODE_POINT))


class Dfa:
    """A DFA over code points: ``edges[q]`` is a sorted tuple of disjoint ``(lo, hi, target)``;
    missing symbols go to an implicit dead state.  State 0 is the start state."""

    __slots__ = ("edges", "accept", "minimal", "_content")

    def __init__(self, edges: List[Tuple[Tuple[int, int, int], ...]], accept: List[bool],
                 minimal: bool = False):
        self.edges = edges
        self.accept = accept
        # set only by dfa_minimize: its output is canonical (minimizing it again is the identity)
        self.minimal = minimal
        self._content = None

    def content_key(self) -> "DfaContent":
        """A hashable value equal for automata with the same edges and accepting states
        (computed once: automata are never modified once built), for memos of pure
        functions of automata.

        Example::

            >>> a, b = Dfa([((97, 97, 1),), ()], [False, True]), Dfa([[(97, 97, 1)], []], [0, 1])
            >>> a.content_key() == b.content_key()
            True
        """
        k = self._content
        if k is None:
            k = self._content = DfaContent((
                tuple(es if type(es) is tuple else tuple(es) for es in self.edges),
                tuple(map(bool, self.accept))))
        return k

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


class DfaContent:
    """The edges and accepting flags of an automaton, hashed once (see :meth:`Dfa.content_key`)."""

    __slots__ = ("data", "_hash")

    def __init__(self, data: tuple):
        self.data = data
        self._hash = hash(data)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return self is other or (type(other) is DfaContent and self._hash == other._hash
                                 and self.data == other.data)


# Pure functions of automata, memoized by content across calls (the same key automata, pattern
# products and literal sets recur between the objects of a schema and across a server's
# schemas).  Bounded: emptied when full; automata above MEMO_MAX_STATES are not kept.
MEMO_MAX_STATES = 4096
_MEMO_SIZE = 1024
_MINIMIZED: Dict[DfaContent, "Dfa"] = {}
_PRODUCTS: Dict[tuple, "Dfa"] = {}


def memo_fits(n_states: int) -> bool:
    """Whether results for an automaton of ``n_states`` states are memoized (tests turn the
    memos off by setting ``MEMO_MAX_STATES`` below zero)."""
    return n_states <= MEMO_MAX_STATES


def memo_put(memo: dict, key, value) -> None:
    """``memo[key] = value``, emptying ``memo`` first when it holds ``_MEMO_SIZE`` entries."""
    if len(memo) >= _MEMO_SIZE:
        memo.clear()
    memo[key] = value


_DENSE_MINIMIZE_CELLS = 16_000_000  # int32 cells (64 MB) for the minimizer's transition table


def dfa_from_step(start: Hashable, step: Callable, accepting: Callable,
                  alphabet: Sequence[Tuple[int, int]], max_states: int = MAX_DFA_STATES) -> Dfa:
    """Explore the automaton ``step(state, code_point) -> state | None`` from ``start``.

    ``step`` must be constant over each ``alphabet`` interval (it is called with the
    interval's low end).  ``None`` is the dead state.

    Example::

        >>> even_as = dfa_from_step(0, lambda n, cp: 1 - n, lambda n: n == 0, [(97, 97)])
        >>> [even_as.matches("a" * k) for k in range(4)]
        [True, False, True, False]
    """
    def moves(key):
        for lo, hi in alphabet:
            nxt = step(key, lo)
            if nxt is not None:
                yield lo, hi, nxt

    return dfa_explore(start, moves, accepting, max_states)


def dfa_explore(start: Hashable, moves: Callable, accepting: Callable,
                max_states: int = MAX_DFA_STATES, what: str = "automaton", fuse: bool = True) -> Dfa:
    """The DFA of the states reachable from ``start`` (hashable keys, numbered in discovery
    order), where ``moves(state)`` yields its edges ``(lo, hi, next state)`` in code point
    order and ``accepting(state)`` says whether it accepts; ``GrammarLimitError`` ("``what``
    exceeds ...") beyond ``max_states`` states.  ``fuse``: merge adjacent edges (not needed
    before minimizing).  Not minimized.

    Example::

        >>> d = dfa_explore(0, lambda n: [(97, 97, n + 1)] if n < 2 else [], lambda n: n == 2)
        >>> d.n_states, d.matches("aa"), d.matches("a")
        (3, True, False)
    """
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
        edges.append(merge_edges(out) if fuse else tuple(out))
        i += 1
    return Dfa(edges, [bool(accepting(k)) for k in keys])


def split_points(interval_lists) -> List[Tuple[int, int]]:
    """The coarsest sorted, disjoint intervals over which every ``(lo, hi)`` range of every
    list in ``interval_lists`` is either fully in or fully out (gaps between ranges included).

    Example::

        >>> split_points([[(0, 9)], [(5, 20)]])
        [(0, 4), (5, 9), (10, 20)]
    """
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
    (their number is what ``max_states`` caps).

    Example::

        >>> d = dfa_product(dfa_literals(["a", "b"]), dfa_literals(["b", "c"]), "diff")
        >>> [d.matches(w) for w in "abc"]
        [True, False, False]
    """
    key = None
    if memo_fits(len(a.accept)) and memo_fits(len(b.accept)):
        key = (a.content_key(), b.content_key(), mode, max_states)
        hit = _PRODUCTS.get(key)
        if hit is not None:
            return hit
    out = _dfa_product(a, b, mode, max_states)
    if key is not None:
        memo_put(_PRODUCTS, key, out)
    return out


def _dfa_product(a: Dfa, b: Dfa, mode: str, max_states: int) -> Dfa:
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

    return dfa_minimize(dfa_explore((0, 0), moves, lambda k: acc(*k), max_states, "automaton product",
                                 fuse=False))


def dfa_complement(a: Dfa, universe=UNICODE_SCALARS) -> Dfa:
    """Strings over ``universe`` (default: all Unicode scalar values) not accepted by ``a``.

    Example::

        >>> d = dfa_complement(dfa_literals(["a"]), universe=[(97, 98)])
        >>> [d.matches(w) for w in ("", "a", "b", "aa")]
        [True, False, True, True]
    """
    n = a.n_states
    sink = n
    edges = []
    for q in range(n + 1):
        own = a.edges[q] if q < n else ()
        out = list(own)
        covered = [(lo, hi) for lo, hi, _ in own]
        for lo, hi in complement_ranges(merge_ranges(covered), universe):
            out.append((lo, hi, sink))
        edges.append(merge_edges(out))
    accept = [not x for x in a.accept] + [True]
    return dfa_minimize(Dfa(edges, accept))


def dfa_minimize(a: Dfa) -> Dfa:
    """Remove unreachable and dead states and merge equivalent ones.

    The result is canonical (states numbered in BFS order from the start, edges fused), so
    minimizing it again returns it unchanged: it is flagged ``minimal`` and returned as is.

    Example::

        >>> d = Dfa([((97, 97, 1), (98, 98, 2)), (), ()], [False, True, True])
        >>> m = dfa_minimize(d)
        >>> m.n_states, m.edges[0], dfa_minimize(m) is m
        (2, ((97, 98, 1),), True)
    """
    if a.minimal:
        return a
    if not memo_fits(len(a.accept)):
        return _dfa_minimize(a)
    key = a.content_key()
    hit = _MINIMIZED.get(key)
    if hit is None:
        hit = _dfa_minimize(a)
        memo_put(_MINIMIZED, key, hit)
    return hit


# False: blocks by Moore refinement even when the one-pass (self-loops only) method applies
# (tests compare the two)
_ONE_PASS = True


def _dfa_minimize(a: Dfa) -> Dfa:
    # in C (_cp_minimize.pyx); the Python twin below takes what it does not read as an automaton
    got = minimize_edges(a.edges, a.accept, _ONE_PASS)
    if got is None:
        return _dfa_minimize_reference(a)
    return Dfa(got[0], got[1], minimal=True)


def _dfa_minimize_reference(a: Dfa) -> Dfa:
    """The Python twin of :func:`._cp_minimize.minimize_edges` (the oracle of its tests)."""
    edges, accept = minimize_reference(a.edges, a.accept, _ONE_PASS, _DENSE_MINIMIZE_CELLS)
    return Dfa(edges, accept, minimal=True)


def dfa_with_length(a: Dfa, min_len: int, max_len: Optional[int],
                    max_states: int = MAX_DFA_STATES) -> Dfa:
    """Strings of ``a`` whose length (in code points) lies in ``[min_len, max_len]``.

    The product of ``a`` with a length counter (saturating at ``max_len``, or at ``min_len``
    when unbounded), explored along ``a``'s own edges; ``max_states`` caps its reachable
    states.

    Example::

        >>> d = dfa_with_length(dfa_complement(dfa_literals([]), [(97, 97)]), 1, 2)
        >>> [d.matches("a" * k) for k in range(4)]
        [False, True, True, False]
    """
    cap = max_len if max_len is not None else min_len
    a_edges = a.edges
    if _product_size(a_edges, max_len, cap, max_states) > max_states:
        # known before exploring: the exploration below would stop at the same limit
        raise GrammarLimitError(f"automaton exceeds {max_states} states")
    ids = {(0, 0): 0}
    keys = [(0, 0)]
    edges = []
    i = 0
    while i < len(keys):  # (dfa_explore's loop, inlined: this one runs up to max_states times)
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


def _product_size(a_edges, max_len: Optional[int], cap: int, stop: int) -> int:
    """How many ``(state, count)`` pairs :func:`dfa_with_length` reaches (more than ``stop``
    once the count passes it), from the sets of states reached in exactly k steps.  Those
    sets repeat with some period, so a long length bound costs one period, not its length."""
    succ = [frozenset(t for _, _, t in es) for es in a_edges]

    def step(s):
        return frozenset().union(*[succ[q] for q in s]) if s else s

    def levels(last: int):  # (sum of the sizes of levels 0..last, level last)
        seen: Dict[frozenset, int] = {}
        sets: List[frozenset] = []
        s = frozenset((0,))
        total = 0
        for k in range(last + 1):
            j = seen.get(s)
            if j is not None:  # levels k.. repeat levels j..k-1
                period = k - j
                sizes = [len(x) for x in sets[j:]]
                full, rest = divmod(last - k + 1, period)
                return total + full * sum(sizes) + sum(sizes[:rest]), sets[j + (last - j) % period]
            seen[s] = k
            sets.append(s)
            total += len(s)
            if total > stop:
                return total, s
            if k < last:
                s = step(s)
        return total, s

    if max_len is not None:
        return levels(max_len)[0]
    total, s = levels(cap - 1) if cap else (0, None)
    if total > stop:
        return total
    # the saturated count: every state reachable from level ``cap``
    reach = set(step(s) if cap else (0,))
    stack = list(reach)
    while stack:
        for t in succ[stack.pop()]:
            if t not in reach:
                reach.add(t)
                stack.append(t)
    return total + len(reach)


def dfa_literals(words: Sequence[str]) -> Dfa:
    """The DFA (a minimized trie) accepting exactly ``words``.

    Example::

        >>> d = dfa_literals(["ab", "b"])
        >>> [d.matches(w) for w in ("ab", "b", "a")], d.n_states
        ([True, True, False], 3)
    """
    key = tuple(words)
    hit = _LITERALS.get(key)
    if hit is None:
        hit = _literals_canonical(key)
        if len(key) <= _LITERALS_MAX_WORDS:  # (large enums are not kept alive)
            if len(_LITERALS) >= 1024:
                _LITERALS.clear()
            _LITERALS[key] = hit
    return hit


def _literals_canonical(words: Sequence[str]) -> Dfa:
    """The minimal DFA of a word list straight from :func:`word_classes` (the trie's nodes
    merged by their sets of word endings are the minimal automaton's states: every node is
    live), numbered and fused as :func:`dfa_minimize` returns it: BFS from the root, each
    state's targets in code point order."""
    root, kids, is_word = word_classes(words)
    if not kids[root] and not is_word[root]:
        return Dfa([()], [False], minimal=True)  # no word
    ids = {root: 0}
    queue = [root]
    edges: List[tuple] = []
    head = 0
    while head < len(queue):
        out: List[Tuple[int, int, int]] = []
        for cp, c in kids[queue[head]]:
            t = ids.get(c)
            if t is None:
                t = ids[c] = len(queue)
                queue.append(c)
            if out and out[-1][2] == t and out[-1][1] + 1 == cp:
                out[-1] = (out[-1][0], cp, t)
            else:
                out.append((cp, cp, t))
        edges.append(tuple(out))
        head += 1
    return Dfa(edges, [is_word[c] for c in queue], minimal=True)


# word lists -> their automata (a pure function; enums and declared names recur within a schema
# and across a server's schemas).  Automata are never modified once built.
_LITERALS: Dict[tuple, Dfa] = {}
_LITERALS_MAX_WORDS = 256


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


def word_classes(words: Sequence[str]) -> Tuple[int, List[tuple], List[bool]]:
    """The trie of ``words`` with nodes merged by their sets of word endings (the states of
    :func:`dfa_word_complement` but the accept-all one): ``(root class, kids, is_word)`` where
    ``kids[c]`` is the sorted ``(code point, class)`` children of class ``c``; a class's
    children have smaller numbers than itself.

    Example::

        >>> word_classes(["ab", "b"])
        (2, [(), ((98, 0),), ((97, 1), (98, 0))], [True, False, False])
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
    return cls[0], class_kids, class_word


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
    root, class_kids, class_word = word_classes(words)
    # states in BFS order from the root (edges in code point order, fused), as _canonical
    # numbers them; class ``univ`` accepts everything
    univ = len(class_kids)
    ids = {root: 0}
    queue = [root]
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


