"""IR expressions <-> code-point DFAs.

* :func:`dfa_from_expr`: the minimal DFA of an expression without rule references (Thompson
  NFA, then subset construction over code point intervals);
* :func:`dfa_to_expr`: a DFA emitted as IR -- inline where the automaton is a tree with
  self-loops, named rules (in a :class:`~.rule_sink.RuleSink`) for states on longer cycles
  and for large shared states.

Example::

    >>> from xmask.grammar.ir import Bytes, CharClass, Grammar, Repeat, Seq
    >>> d = dfa_from_expr(Seq((Bytes(b"a"), Repeat(CharClass(((0x30, 0x39),)), 0, None))))
    >>> [d.matches(w) for w in ("a", "a42", "4")]
    [True, True, False]
    >>> print(Grammar({"root": dfa_to_expr(d, None)}))
    root ::= "a" [0-9]*
"""

from __future__ import annotations

import re
from typing import Callable, Dict, Hashable, List, Optional, Tuple

from .. import _deadline as deadline
from .._graph import order_if_acyclic, strongly_connected_components
from ..errors import GrammarLimitError
from .code_point_dfa import MAX_DFA_STATES, Dfa, dfa_minimize, memo_fits
from .ir import (Bytes, CharClass, Choice, EPSILON, Expr, Repeat, RuleRef, Seq, WordComplement,
                 make_choice, make_seq)
from ._subset import subset_dfa
from ._word_complement import word_complement_core
from .emission_memo import EmissionMemo
from .rule_sink import RuleSink

__all__ = ["MAX_NFA_STATES", "dfa_from_expr", "dfa_to_expr", "word_complement_expr"]

#: Cap on NFA states while converting an expression to a DFA.
MAX_NFA_STATES = 100_000


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
    """The minimal DFA of ``expr``, an expression without rule references (``ValueError`` for
    one, and for byte-level classes), by subset construction over code point intervals.

    Example::

        >>> d = dfa_from_expr(Repeat(Bytes(b"ab"), 1, None))
        >>> [d.matches(w) for w in ("ab", "abab", "aba", "")]
        [True, True, False, False]
    """
    nfa = _Nfa()
    start = nfa.new()
    end = nfa.build(expr, start)
    # the subset construction in C (_subset.pyx): states numbered and edges fused as
    # dfa_explore numbers and fuses them
    got = subset_dfa(nfa.eps, nfa.sym, start, end, max_states, deadline.check)
    if got is None:
        raise GrammarLimitError(f"regular expression DFA exceeds {max_states} states")
    if got is False:
        raise GrammarLimitError("regular expression DFA too large (its state sets hold too many NFA states)")
    edges, accept = got
    return dfa_minimize(Dfa(edges, accept))



# ---------------------------------------------------------------------------- DFA -> IR

def dfa_to_expr(a: Dfa, sink: Optional[RuleSink], hint: str = "dfa",
                label: Optional[Callable[[Tuple[Tuple[int, int], ...]], Expr]] = None,
                label_key: Hashable = None) -> Optional[Expr]:
    """Emit a (minimized) DFA as IR.  Returns None for the empty language.

    ``label`` maps a code point set to the expression of one symbol (default: a
    :class:`CharClass`).  States on cycles other than self-loops, and states with several
    predecessors whose expansion is large, become rules in ``sink`` (a ``ValueError`` if
    ``sink`` is None and a rule is needed).  ``label_key``: a hashable value that determines
    ``label`` (say, the arguments of the function it calls); with it, or with the default
    label, the emission is memoized across calls (:mod:`.emission_memo`: the same expression
    and rules, replayed).

    Example::

        >>> from xmask.grammar.code_point_dfa import dfa_literals
        >>> dfa_to_expr(dfa_literals(["ab", "ac"]), None)
        Seq(items=(Bytes(data=b'a'), CharClass(ranges=((98, 99),), negated=False, byte_level=False)))
    """
    if label is None:
        label_key = _PLAIN
    if label_key is not None and memo_fits(len(a.accept)):
        return _TO_EXPR_MEMO.run((a.content_key(), label_key), sink,
                                 lambda s: _dfa_to_expr(a, s, hint, label), hint)
    return _dfa_to_expr(a, sink, hint, label)


#: the emissions of dfa_to_expr (memoized when the label is known by a key) and of
#: word_complement_expr: pure but for rule names (keys, string formats, number bounds recur
#: across a server's schemas and between the rounds of one conversion)
_TO_EXPR_MEMO = EmissionMemo(512)
_COMPLEMENT_MEMO = EmissionMemo(512)
_PLAIN = ("plain",)  # the label key of the default label


def _dfa_to_expr(a: Dfa, sink: Optional[RuleSink], hint: str,
                 label: Optional[Callable[[Tuple[Tuple[int, int], ...]], Expr]]) -> Optional[Expr]:
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
        out: Expr = RuleRef(name0)
    else:
        out = body(0)
    # body and ref call each other: a reference cycle that would keep this call's tables alive
    # until the cyclic GC runs (and make that collection, which stalls every thread, longer)
    body = ref = None  # noqa: F841
    return out


def word_complement_expr(words, alphabet, sink: Optional[RuleSink], hint: str = "dfa") -> Optional[Expr]:
    """The strings over ``alphabet`` other than ``words`` (the language of
    :func:`~.code_point_dfa.dfa_word_complement`) as ``N | D [alphabet]*``: N the proper
    prefixes of words that are not words, D a prefix of a word followed by a character that
    continues no word, both as tries.  Returns None for the empty language.

    The keys of an object other than its declared names are the automaton a schema emits
    most.  Every string that leaves the trie goes through the one ``[alphabet]*`` loop, so
    the compiler's subset construction makes one accept-all state for all of them (a loop
    per trie node made one per node, merged only by minimization).  The tries are built
    from the words' merged trie (the classes of :func:`~.code_point_dfa.word_classes`) in a
    Cython kernel (:mod:`._word_complement`).  The emission names no rules (``sink`` and
    ``hint`` are accepted for the callers of the other emissions; shared suffixes are shared
    expression objects).

    Over an ASCII alphabet (object keys written literally: the usual case) the result is a
    :class:`~.ir_expr.WordComplement`, which builds that expression only when something
    other than the compiler reads it (the NFA builder makes the trie's automaton from the
    words themselves).

    Example::

        >>> from xmask.grammar.ir import Grammar
        >>> print(Grammar({"root": word_complement_expr(["ab"], [(97, 98)], None)}))
        root ::= "a" | "" | ("a" ("a" | "b" [ab]) | "b") [ab]*
    """
    alphabet = tuple(alphabet)
    words = sorted(set(words))
    if alphabet and alphabet[-1][1] < 0x80 and _within(words, alphabet):
        return WordComplement(tuple(words), alphabet, _expand_complement)
    if not memo_fits(sum(len(w) for w in words) >> 4):  # (records of huge word lists would be large)
        return _complement_emit(words, alphabet)
    key = (tuple(words), alphabet)
    return _COMPLEMENT_MEMO.run(key, sink, lambda s: _complement_emit(words, alphabet), hint)


def _within(words: List[str], alphabet: tuple) -> bool:
    """Whether every character of ``words`` lies in ``alphabet`` (one compiled class per
    alphabet: the keys of every object are checked)."""
    pattern = _ALPHABET_PATTERNS.get(alphabet)
    if pattern is None:
        if len(_ALPHABET_PATTERNS) >= 64:
            _ALPHABET_PATTERNS.clear()
        pattern = _ALPHABET_PATTERNS[alphabet] = re.compile(
            "[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in alphabet) + "]*")
    return all(pattern.fullmatch(w) for w in words)


_ALPHABET_PATTERNS: Dict[tuple, "re.Pattern"] = {}


def _expand_complement(words: Tuple[str, ...], alphabet: tuple) -> Expr:
    # a WordComplement's expression (its alphabet is not empty: the language is not either)
    return _complement_emit(list(words), alphabet)


def _complement_emit(words, alphabet: tuple) -> Optional[Expr]:
    if len(_PLAIN_LABELS) > 8192:
        _PLAIN_LABELS.clear()
        _PLAIN_SIZES.clear()
    gaps_memo = _GAPS.get(alphabet)
    if gaps_memo is None:
        if len(_GAPS) >= 64:
            _GAPS.clear()
        gaps_memo = _GAPS[alphabet] = {}
    return word_complement_core(words, alphabet, _PLAIN_LABELS, _plain_label, gaps_memo)


_GAPS: Dict[tuple, Dict[tuple, tuple]] = {}


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
    return order_if_acyclic([[t for t, _ in g] for g in grouped])




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
