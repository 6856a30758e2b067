"""Grammar IR -> one Thompson NFA for all rules, as flat edge arrays.

Every rule gets a contiguous range of NFA states; edges are epsilon, byte ranges or calls of
another rule (with the state the call returns to).  Edges are appended to flat int lists (one
``extend`` per edge) and turned into CSR arrays once (:meth:`NFA.csr`), the layout the Cython
determinizer reads.  Bounded repeats place copies of one minimal DFA per repeated item (see
:class:`_Copies`), held as shifted array chunks, so ``x{0,10000}`` costs 10,000 small appends.

Example::

    >>> from xmask.grammar.ir import Bytes
    >>> nfa = NFA(AutomatonLimitsLike(), dfa_of=None)
    >>> s, e = nfa.add_rule("root", Bytes(b"ab"), {})
    >>> (s, e, nfa.n)
    (0, 2, 3)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from .. import _deadline as deadline
from ..errors import GrammarLimitError
from ..grammar.ir import Bytes, CharClass, Choice, Repeat, RuleRef, Seq
from .utf8 import utf8_sequences


@dataclass(frozen=True)
class AutomatonLimitsLike:
    """The limit fields the NFA reads (``AutomatonLimits`` has them all); for doctests."""

    max_nfa_states: int = 2_000_000
    max_states: int = 200_000
    max_repeat: int = 10_000


@lru_cache(maxsize=4096)
def _utf8_paths(cls: CharClass) -> Tuple[Tuple[Tuple[int, int], ...], ...]:
    """UTF-8 byte-range paths of a code-point class (memoized: long repeats rebuild the same
    JSON-string character class thousands of times)."""
    return tuple(seq for lo, hi in cls.positive_ranges() for seq in utf8_sequences(lo, hi))


@dataclass
class NfaArrays:
    """CSR form: state ``s``'s epsilon targets are ``eps_dst[eps_off[s]:eps_off[s+1]]``; byte
    edges ``b_lo/b_hi/b_dst`` (inclusive byte ranges) and calls ``c_rule/c_dst`` likewise."""

    n: int
    eps_off: np.ndarray
    eps_dst: np.ndarray
    b_off: np.ndarray
    b_lo: np.ndarray
    b_hi: np.ndarray
    b_dst: np.ndarray
    c_off: np.ndarray
    c_rule: np.ndarray
    c_dst: np.ndarray


def _csr(n: int, src: np.ndarray, *cols: np.ndarray):
    order = np.argsort(src, kind="stable")
    off = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.bincount(src, minlength=n), out=off[1:])
    return (off,) + tuple(np.ascontiguousarray(c[order], dtype=np.int32) for c in cols)


class NFA:
    """Thompson NFA of a whole grammar; limits are per rule (the rule being added)."""

    __slots__ = ("eps", "byte", "calls", "chunks", "n", "base", "limits", "rule", "templates",
                 "size_memo", "dfa_of", "bodies", "sizes")

    def __init__(self, limits, dfa_of: Optional[Callable], templates: Optional[dict] = None,
                 inline: Tuple[dict, dict] = ({}, {})):
        self.eps: List[int] = []     # src, dst, src, dst, ...
        self.byte: List[int] = []    # src, lo, hi, dst, ...
        self.calls: List[int] = []   # src, rule, dst, ...
        self.chunks: List[tuple] = []  # (template arrays, state offset)
        self.n = 0
        self.base = 0
        self.limits = limits
        self.rule = ""
        # dfa_of(nfa, start, end) -> (trans, finals, call_src, call_rule, call_dst, byte_class)
        self.dfa_of = dfa_of
        # repeat item -> its minimal DFA as edge arrays, shared by all rules of one grammar
        self.templates = {} if templates is None else templates
        # expression id -> estimated expansion size (the expressions outlive this NFA)
        self.size_memo: Dict[int, int] = {}
        # inlined rule -> body (expanded where referenced) and its expanded size
        self.bodies, self.sizes = inline

    def add_rule(self, name: str, expr, rule_index: Dict[str, int]) -> Tuple[int, int]:
        """Add rule ``name``'s states; returns its (start, end) NFA states."""
        self.rule = name
        self.base = self.n
        s = self.new()
        return s, self.build(expr, s, rule_index)

    def new(self) -> int:
        n = self.n
        k = n - self.base
        if not k & 4095:
            deadline.check()
        if k >= self.limits.max_nfa_states:
            self._too_many()
        self.n = n + 1
        return n

    def _too_many(self):
        raise GrammarLimitError(
            f"grammar expands to more than {self.limits.max_nfa_states} NFA states "
            "(CompileLimits.max_nfa_states) "
            "(large repeat counts?)",
            rule=self.rule,
        )

    def _reserve(self, count: int) -> int:
        """``count`` fresh consecutive states (as ``count`` calls of :meth:`new`)."""
        n = self.n
        k = n - self.base
        if k + count > self.limits.max_nfa_states:
            self._too_many()
        if (k + count - 1) >> 12 != k >> 12 or not k & 4095:
            deadline.check()
        self.n = n + count
        return n

    def build(self, expr, start: int, rule_index: Dict[str, int], end: Optional[int] = None) -> int:
        """Add ``expr`` starting at ``start``; return its end state (``end`` when given).

        Passing the enclosing construct's ``end`` down to the last piece of a sequence or a
        choice's branches lets nested optionals (``a (b (c)?)?`` as pattern DFAs emit them) all
        finish at one state: otherwise every nesting level adds its own end state and an
        epsilon edge to the next, and each closure walks the whole chain (quadratic).
        """
        if isinstance(expr, Bytes):
            data = expr.data
            cur = start
            last = len(data) - 1
            byte = self.byte
            for i, b in enumerate(data):
                nxt = end if end is not None and i == last else self.new()
                byte.extend((cur, b, b, nxt))
                cur = nxt
            return self._finish(cur, end)
        if isinstance(expr, CharClass):
            if end is None:
                end = self.new()
            if expr.byte_level:
                for lo, hi in expr.positive_ranges():
                    self.byte.extend((start, lo, hi, end))
                return end
            # paths share their common suffixes (the continuation bytes), so the sub-automaton
            # is already minimal and determinization does not multiply equivalent states
            suffix_state: Dict[tuple, int] = {(): end}
            byte = self.byte
            for seq in _utf8_paths(expr):
                nxt = end
                for k in range(len(seq) - 1, 0, -1):
                    got = suffix_state.get(seq[k:])
                    if got is None:
                        got = suffix_state[seq[k:]] = self.new()
                        byte.extend((got, seq[k][0], seq[k][1], nxt))
                    nxt = got
                byte.extend((start, seq[0][0], seq[0][1], nxt))
            return end
        if isinstance(expr, Seq):
            cur = start
            last = len(expr.items) - 1
            for i, item in enumerate(expr.items):
                cur = self.build(item, cur, rule_index, end if i == last else None)
            return self._finish(cur, end)
        if isinstance(expr, Choice):
            if end is None:
                end = self.new()
            for item in expr.items:
                s = self.new()
                self.eps.extend((start, s))
                self.build(item, s, rule_index, end)
            return end
        if isinstance(expr, RuleRef):
            body = self.bodies.get(expr.name)
            if body is not None:
                return self.build(body, start, rule_index, end)
            if end is None:
                end = self.new()
            self.calls.extend((start, rule_index[expr.name], end))
            return end
        if isinstance(expr, Repeat):
            return self._finish(self._repeat(expr, start, rule_index), end)
        raise TypeError(f"unknown grammar node {expr!r}")

    def _finish(self, cur: int, end: Optional[int]) -> int:
        """``cur`` if no end was asked for, else ``end`` (joined by an epsilon edge if apart)."""
        if end is None:
            return cur
        if cur != end:
            self.eps.extend((cur, end))
        return end

    def _repeat(self, expr: Repeat, start: int, rule_index) -> int:
        expr = flatten_repeat(expr, self.limits.max_repeat)
        lo, hi = expr.min, expr.max
        bound = hi if hi is not None else lo
        if bound > self.limits.max_repeat:
            raise GrammarLimitError(
                f"repeat count {bound} exceeds the limit {self.limits.max_repeat} "
                "(CompileLimits.max_repeat)", rule=self.rule
            )
        # Nested bounded repeats multiply ((a{0,100}){0,100} is 10,000 copies of "a"): check
        # the product before building any of it, not when the NFA has already grown.
        cap = self.limits.max_nfa_states
        size = rule_size(expr, self.sizes, cap + 1, self.size_memo)
        built = self.n - self.base
        if built + size > cap:
            raise GrammarLimitError(
                f"a repeat expands to {'more than' if size > cap else 'about'} {min(size, cap)} "
                f"NFA states, which with {built} already built passes the limit {cap} "
                "(CompileLimits.max_nfa_states) (nested repeat counts multiply)", rule=self.rule)
        copies = _Copies(self, expr.item, rule_index, lo + (hi - lo if hi is not None else 0))
        cur = start
        for _ in range(lo):
            cur = copies.place(cur)
        if hi is None:
            # star: loop state with an epsilon back edge
            loop = self.new()
            self.eps.extend((cur, loop))
            body_end = self.build(expr.item, loop, rule_index)
            self.eps.extend((body_end, loop))
            return loop
        end = self.new()
        for _ in range(hi - lo):
            self.eps.extend((cur, end))
            cur = copies.place(cur)
        self.eps.extend((cur, end))
        return end

    def arrays(self) -> NfaArrays:
        """The NFA in CSR form (edges in insertion order within each state)."""
        eps = [np.asarray(self.eps, dtype=np.int32).reshape(-1, 2)]
        byte = [np.asarray(self.byte, dtype=np.int32).reshape(-1, 4)]
        calls = [np.asarray(self.calls, dtype=np.int32).reshape(-1, 3)]
        for (t_eps, t_byte, t_calls), base in self.chunks:
            eps.append(t_eps + base)
            byte.append(t_byte + np.array([base, 0, 0, base], dtype=np.int32))
            calls.append(t_calls + np.array([base, 0, base], dtype=np.int32))
        e = np.concatenate(eps) if len(eps) > 1 else eps[0]
        b = np.concatenate(byte) if len(byte) > 1 else byte[0]
        c = np.concatenate(calls) if len(calls) > 1 else calls[0]
        n = self.n
        eps_off, eps_dst = _csr(n, e[:, 0], e[:, 1])
        b_off, b_lo, b_hi, b_dst = _csr(n, b[:, 0], b[:, 1], b[:, 2], b[:, 3])
        c_off, c_rule, c_dst = _csr(n, c[:, 0], c[:, 1], c[:, 2])
        return NfaArrays(n, eps_off, eps_dst, b_off, b_lo, b_hi, b_dst, c_off, c_rule, c_dst)


def byte_classes(arrays: NfaArrays) -> np.ndarray:
    """Global byte equivalence classes: bytes no edge distinguishes share one (uint8[256],
    classes numbered by their first byte)."""
    cuts = np.zeros(257, dtype=bool)
    cuts[0] = True
    cuts[arrays.b_lo] = True
    cuts[arrays.b_hi + 1] = True
    return (np.cumsum(cuts[:256]) - 1).astype(np.uint8)


def flatten_repeat(expr: Repeat, max_repeat: int) -> Repeat:
    """``(x{a,b}){c,d}`` as ``x{ac,bd}`` when the two mean the same, i.e. when the counts the
    nesting can produce, the union of ``[ka, kb]`` over ``k`` in ``c..d``, have no gap.

    The nested form builds ``d`` copies of a ``b``-copy automaton whose determinization holds
    ~``(bd)^2/2`` NFA states when ``x{a,b}`` can be empty; the flat form is one linear chain.
    Example: ``(a{0,100}){0,100}`` -> ``a{0,10000}``.  A product past ``max_repeat`` stays
    nested (chunked repeats, such as a long ``maxLength``, are built that way on purpose).
    """
    while isinstance(expr.item, Repeat):
        inner = expr.item
        a, b, c, d = inner.min, inner.max, expr.min, expr.max
        if b == 0 or d == 0:
            break
        # consecutive intervals [ka, kb] and [(k+1)a, (k+1)b] touch iff k(b - a) >= a - 1;
        # the left side grows with k, so the first step (k = c) decides; a fixed outer count
        # (d == c) has one interval
        if b is None:
            if a > 1 and c == 0:
                break
            if c * a > max_repeat:
                break
            expr = Repeat(inner.item, c * a, None)
        else:
            if d != c and c * (b - a) < a - 1:
                break
            if max(c * a, d * b if d is not None else 0) > max_repeat:
                break
            expr = Repeat(inner.item, c * a, None if d is None else d * b)
    return expr


class _Copies:
    """Bounded repeats place ``count`` copies of one item.  The item is built once, as its own
    minimal DFA (so equivalent states are not multiplied by the copy count: a JSON string
    character's UTF-8 and escape paths would otherwise determinize into ~2x the states per
    copy), and each copy is that DFA's states shifted to fresh numbers, entered by an epsilon
    edge and left by epsilon edges from its final states."""

    __slots__ = ("nfa", "item", "rule_index", "count", "template")

    def __init__(self, nfa: NFA, item, rule_index, count: int):
        self.nfa, self.item, self.rule_index, self.count = nfa, item, rule_index, count
        self.template = None

    def _make_template(self):
        frag = NFA(self.nfa.limits, self.nfa.dfa_of, self.nfa.templates,
                   (self.nfa.bodies, self.nfa.sizes))
        s, e = frag.add_rule(self.nfa.rule, self.item, self.rule_index)
        trans, finals, call_src, call_rule, call_dst, byte_class = self.nfa.dfa_of(frag, s, e)
        m, n_classes = trans.shape
        # classes are contiguous byte ranges: first and last byte of each
        first = np.searchsorted(byte_class, np.arange(n_classes), side="left")
        last = np.searchsorted(byte_class, np.arange(n_classes), side="right") - 1
        src, cls = np.nonzero(trans >= 0)
        byte = np.stack([src, first[cls], last[cls], trans[src, cls]], axis=1).astype(np.int32)
        fin = np.nonzero(finals)[0]
        eps = np.stack([fin, np.full(len(fin), m)], axis=1).astype(np.int32)
        calls = np.stack([call_src, call_rule, call_dst], axis=1).astype(np.int32)
        return m + 1, (eps.reshape(-1, 2), byte.reshape(-1, 4), calls.reshape(-1, 3))

    def place(self, cur: int) -> int:
        nfa = self.nfa
        if self.count < 2:
            return nfa.build(self.item, cur, self.rule_index)
        if self.template is None:
            self.template = nfa.templates.get(self.item)
            if self.template is None:
                self.template = nfa.templates[self.item] = self._make_template()
        size, arrays = self.template
        base = nfa._reserve(size)
        nfa.chunks.append((arrays, base))
        nfa.eps.extend((cur, base))
        return base + size - 1


def rule_size(expr, sizes: Dict[str, int], cap: int, memo: Dict[int, int]) -> int:
    """Rough expanded size of ``expr`` (automaton states it adds), saturating at ``cap``.
    ``memo`` (by object id) makes shared sub-expressions cost one visit."""
    if isinstance(expr, Bytes):
        return len(expr.data)
    if isinstance(expr, CharClass):
        return 1 + len(expr.ranges)
    if isinstance(expr, RuleRef):
        return sizes.get(expr.name, 1)
    got = memo.get(id(expr))
    if got is not None:
        return got
    if isinstance(expr, (Seq, Choice)):
        total = 1
        for e in expr.items:
            total += rule_size(e, sizes, cap, memo)
            if total >= cap:
                break
        size = min(cap, total)
    else:  # Repeat
        n = max(expr.min, expr.max if expr.max is not None else 1, 1)
        size = min(cap, 1 + n * rule_size(expr.item, sizes, cap, memo))
    memo[id(expr)] = size
    return size
