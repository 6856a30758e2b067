"""Grammar IR -> flat byte-level pushdown automaton (one deterministic automaton per rule).

Each rule becomes an epsilon-free automaton whose edges are either byte classes (deterministic:
one target per byte) or calls of another rule with a return state.  All states get one global
numbering so the runtime needs only flat arrays:

* ``byte_class[256]``: global byte equivalence classes (bytes no edge distinguishes share one)
* ``trans[state * n_classes + cls]``: target state or -1
* ``flags[state]``: ``FLAG_FINAL | FLAG_HAS_BYTES | FLAG_EXIT_ONLY``
* ``call_offsets[state] .. call_offsets[state+1]`` into ``call_target`` (callee start state) and
  ``call_ret`` (return state, or -1 when the return state is exit-only: a tail call, so the
  callee returns straight to our caller and right recursion does not grow the stack)

Left recursion is rejected with the cycle named; nullable rules and epsilon alternatives are fine.

Example::

    >>> from xmask.grammar.ir import Grammar, Bytes, Repeat, CharClass
    >>> a = build_automaton(Grammar({"root": Repeat(CharClass(((97, 98),)), 1, None)}))
    >>> a.n_states, a.n_classes
    (2, 3)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, List, Optional, Tuple

import numpy as np

from .. import _deadline as deadline
from .._graph import strongly_connected_components
from ..errors import GrammarError, GrammarLimitError
from ..grammar.ir import Bytes, CharClass, Choice, Grammar, Repeat, RuleRef, Seq, iter_refs
from .utf8 import utf8_sequences
from ._partition import refine_round

FLAG_FINAL = 1
FLAG_HAS_BYTES = 2
FLAG_EXIT_ONLY = 4


@dataclass(frozen=True)
class AutomatonLimits:
    """Caps that bound compile work; exceeding one raises ``GrammarLimitError``."""

    max_nfa_states: int = 2_000_000
    max_states: int = 200_000
    max_repeat: int = 10_000
    inline_size: int = 400  # non-recursive rules up to this expanded size are inlined
    max_context_work: int = 20_000_000

    @classmethod
    def from_compile_limits(cls, limits) -> "AutomatonLimits":
        """The automaton caps of a public :class:`xmask.CompileLimits`."""
        return cls(max_nfa_states=limits.max_nfa_states, max_states=limits.max_automaton_states,
                   max_repeat=limits.max_repeat, max_context_work=limits.max_context_work)


@lru_cache(maxsize=4096)
def _utf8_paths(cls: CharClass) -> Tuple[Tuple[Tuple[int, int], ...], ...]:
    """UTF-8 byte-range paths of a code-point class (memoized: long repeats rebuild the same
    JSON-string character class thousands of times)."""
    return tuple(seq for lo, hi in cls.positive_ranges() for seq in utf8_sequences(lo, hi))


class _NFA:
    """Thompson NFA for one rule: epsilon, byte-range and call edges."""

    __slots__ = ("eps", "byte_edges", "calls", "limits", "rule", "templates", "size_memo")

    def __init__(self, limits: AutomatonLimits, rule: str, templates: Optional[dict] = None):
        self.eps: List[List[int]] = []
        self.byte_edges: List[List[Tuple[int, int, int]]] = []
        self.calls: List[List[Tuple[int, int]]] = []
        self.limits = limits
        self.rule = rule
        # repeat item -> its minimal DFA fragment, shared by all rules of one grammar
        self.templates = {} if templates is None else templates
        # expression id -> estimated expansion size (the expressions outlive this NFA)
        self.size_memo: Dict[int, int] = {}

    def new(self) -> int:
        if not len(self.eps) & 4095:
            deadline.check()
        if len(self.eps) >= self.limits.max_nfa_states:
            raise GrammarLimitError(
                f"grammar expands to more than {self.limits.max_nfa_states} NFA states "
                "(CompileLimits.max_nfa_states) "
                "(large repeat counts?)",
                rule=self.rule,
            )
        self.eps.append([])
        self.byte_edges.append([])
        self.calls.append([])
        return len(self.eps) - 1

    def build(self, expr, start: int, rule_index: Dict[str, int], end: Optional[int] = None) -> int:
        """Add ``expr`` starting at ``start``; return its end state (``end`` when given).

        Passing the enclosing construct's ``end`` down to the last piece of a sequence or a
        choice's branches lets nested optionals (``a (b (c)?)?`` as pattern DFAs emit them) all
        finish at one state: otherwise every nesting level adds its own end state and an
        epsilon edge to the next, and each closure walks the whole chain (quadratic).
        """
        if isinstance(expr, Bytes):
            cur = start
            last = len(expr.data) - 1
            for i, b in enumerate(expr.data):
                nxt = end if end is not None and i == last else self.new()
                self.byte_edges[cur].append((b, b, nxt))
                cur = nxt
            return self._finish(cur, end)
        if isinstance(expr, CharClass):
            if end is None:
                end = self.new()
            if expr.byte_level:
                for lo, hi in expr.positive_ranges():
                    self.byte_edges[start].append((lo, hi, end))
                return end
            # paths share their common suffixes (the continuation bytes), so the sub-automaton
            # is already minimal and determinization does not multiply equivalent states
            suffix_state: Dict[tuple, int] = {(): end}
            for seq in _utf8_paths(expr):
                nxt = end
                for k in range(len(seq) - 1, 0, -1):
                    got = suffix_state.get(seq[k:])
                    if got is None:
                        got = suffix_state[seq[k:]] = self.new()
                        self.byte_edges[got].append((seq[k][0], seq[k][1], nxt))
                    nxt = got
                self.byte_edges[start].append((seq[0][0], seq[0][1], nxt))
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
                self.eps[start].append(s)
                self.build(item, s, rule_index, end)
            return end
        if isinstance(expr, RuleRef):
            if end is None:
                end = self.new()
            self.calls[start].append((rule_index[expr.name], end))
            return end
        if isinstance(expr, Repeat):
            return self._finish(self._repeat(expr, start, rule_index), end)
        raise TypeError(f"unknown grammar node {expr!r}")

    def _finish(self, cur: int, end: Optional[int]) -> int:
        """``cur`` if no end was asked for, else ``end`` (joined by an epsilon edge if apart)."""
        if end is None:
            return cur
        if cur != end:
            self.eps[cur].append(end)
        return end

    def _repeat(self, expr: Repeat, start: int, rule_index) -> int:
        expr = _flatten_repeat(expr, self.limits.max_repeat)
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
        size = _rule_size(expr, {}, cap + 1, self.size_memo)
        if len(self.eps) + size > cap:
            raise GrammarLimitError(
                f"a repeat expands to {'more than' if size > cap else 'about'} {min(size, cap)} "
                f"NFA states, which with {len(self.eps)} already built passes the limit {cap} "
                "(CompileLimits.max_nfa_states) (nested repeat counts multiply)", rule=self.rule)
        copies = _Copies(self, expr.item, rule_index, lo + (hi - lo if hi is not None else 0))
        cur = start
        for _ in range(lo):
            cur = copies.place(cur)
        if hi is None:
            # star: loop state with an epsilon back edge
            loop = self.new()
            self.eps[cur].append(loop)
            body_end = self.build(expr.item, loop, rule_index)
            self.eps[body_end].append(loop)
            return loop
        end = self.new()
        for _ in range(hi - lo):
            self.eps[cur].append(end)
            cur = copies.place(cur)
        self.eps[cur].append(end)
        return end

    def _add_shifted(self, eps, byte_edges, calls, delta: int) -> None:
        self.new()
        self.eps[-1] = [t + delta for t in eps]
        self.byte_edges[-1] = [(a, b, t + delta) for a, b, t in byte_edges]
        self.calls[-1] = [(r, t + delta) for r, t in calls]


def _flatten_repeat(expr: Repeat, max_repeat: int) -> Repeat:
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

    def __init__(self, nfa: "_NFA", item, rule_index, count: int):
        self.nfa, self.item, self.rule_index, self.count = nfa, item, rule_index, count
        self.template = None

    def _make_template(self):
        frag = _NFA(self.nfa.limits, self.nfa.rule, self.nfa.templates)
        s = frag.new()
        e = frag.build(self.item, s, self.rule_index)
        byte_class = _byte_classes([frag])
        n_classes = int(byte_class.max()) + 1
        t, c, f = _determinize(frag, s, e, byte_class, self.nfa.limits, 0)
        t, c, f = _minimize(t, c, f, n_classes)
        lo = [256] * n_classes
        hi = [-1] * n_classes
        for b, cls in enumerate(byte_class.tolist()):
            lo[cls] = min(lo[cls], b)
            hi[cls] = max(hi[cls], b)  # classes are contiguous byte ranges
        m = len(t)
        states = [
            ([m] if f[k] else [],
             [(lo[cls], hi[cls], dst) for cls, dst in sorted(t[k].items())],
             sorted(c[k].items()))
            for k in range(m)
        ]
        states.append(([], [], []))  # the copy's end state
        return m, states

    def place(self, cur: int) -> int:
        nfa = self.nfa
        if self.count < 2:
            return nfa.build(self.item, cur, self.rule_index)
        if self.template is None:
            self.template = nfa.templates.get(self.item)
            if self.template is None:
                self.template = nfa.templates[self.item] = self._make_template()
        m, states = self.template
        base = len(nfa.eps)
        for eps, byte_edges, calls in states:
            nfa._add_shifted(eps, byte_edges, calls, base)
        nfa.eps[cur].append(base)
        return base + m


class Automaton:
    """The flat automaton of a whole grammar (see module docstring for the array layout)."""

    def __init__(self, **arrays):
        self.__dict__.update(arrays)

    @property
    def nbytes(self) -> int:
        return int(
            sum(
                getattr(self, k).nbytes
                for k in ("byte_class", "trans", "flags", "call_offsets", "call_target", "call_ret")
            )
        )

    def __repr__(self) -> str:
        return (
            f"<Automaton rules={len(self.rule_names)} states={self.n_states} "
            f"classes={self.n_classes} calls={len(self.call_target)}>"
        )


def _reachable_rules(grammar: Grammar) -> List[str]:
    rules = grammar.rules
    order, seen, stack = [], {grammar.root}, [grammar.root]
    while stack:
        name = stack.pop()
        order.append(name)
        for ref in iter_refs(rules[name]):
            if ref not in seen:
                seen.add(ref)
                stack.append(ref)
    # keep the grammar's own order for readability of dumps
    pos = {n: i for i, n in enumerate(rules)}
    order.sort(key=lambda n: (n != grammar.root, pos[n]))
    return order


def _rule_size(expr, sizes: Dict[str, int], cap: int, memo: Dict[int, int]) -> int:
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
            total += _rule_size(e, sizes, cap, memo)
            if total >= cap:
                break
        size = min(cap, total)
    else:  # Repeat
        n = max(expr.min, expr.max if expr.max is not None else 1, 1)
        size = min(cap, 1 + n * _rule_size(expr.item, sizes, cap, memo))
    memo[id(expr)] = size
    return size


def _substitute(expr, bodies: Dict[str, object], memo: Dict[int, object]):
    """``expr`` with inlined rule bodies in place of their references; unchanged sub-trees are
    returned as they are and shared sub-expressions are rebuilt once (``memo`` by object id)."""
    if isinstance(expr, RuleRef):
        return bodies.get(expr.name, expr)
    if not isinstance(expr, (Seq, Choice, Repeat)):
        return expr
    got = memo.get(id(expr))
    if got is not None:
        return got
    if isinstance(expr, Repeat):
        item = _substitute(expr.item, bodies, memo)
        out = expr if item is expr.item else Repeat(item, expr.min, expr.max)
    else:
        items = tuple(_substitute(e, bodies, memo) for e in expr.items)
        same = all(a is b for a, b in zip(items, expr.items))
        out = expr if same else type(expr)(items)
    memo[id(expr)] = out
    return out


def _recursive_rules(rules: Dict[str, object]) -> set:
    """Rules on a reference cycle."""
    refs = {n: sorted(set(iter_refs(e))) for n, e in rules.items()}
    out: set = set()
    for comp in strongly_connected_components(rules, refs.__getitem__):
        if len(comp) > 1 or comp[0] in refs[comp[0]]:
            out.update(comp)
    return out


def _inline_small_rules(grammar: Grammar, limits: AutomatonLimits) -> Grammar:
    """Inline small non-recursive rules into their callers.

    A call into a tiny rule (a JSON string character, a digit run, whitespace) would otherwise
    make the rule's end a context-dependent point for almost every token; inside the caller the
    same bytes are ordinary transitions and the cache can classify them exactly.
    """
    rules = grammar.rules
    recursive = _recursive_rules(rules)
    cap = limits.inline_size + 1
    bodies: Dict[str, object] = {}
    sizes: Dict[str, int] = {}
    # callees first: depth-first post-order over non-recursive rules (the rest stay calls)
    refs = {n: [d for d in dict.fromkeys(iter_refs(e))] for n, e in rules.items()}
    order: List[str] = []
    seen: set = set()
    for start in rules:
        if start in seen or start in recursive or start == grammar.root:
            continue
        seen.add(start)
        stack = [(start, iter(refs[start]))]
        while stack:
            name, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                order.append(name)
            elif nxt not in seen and nxt not in recursive and nxt != grammar.root:
                seen.add(nxt)
                stack.append((nxt, iter(refs[nxt])))
    # memos are keyed by object id: every key object stays alive in ``rules``/``bodies``/memo
    # values until this function returns
    sub_memo: Dict[int, object] = {}
    size_memo: Dict[int, int] = {}
    for name in order:
        body = _substitute(rules[name], bodies, sub_memo)
        size = _rule_size(body, sizes, cap, size_memo)
        sizes[name] = size
        if size <= limits.inline_size:
            bodies[name] = body
    if not bodies:
        return grammar
    final_memo: Dict[int, object] = {}  # fresh: every body is decided now
    new_rules = {n: _substitute(e, bodies, final_memo) for n, e in rules.items()}
    return Grammar(new_rules, root=grammar.root)


def _byte_classes(nfas: List[_NFA]) -> np.ndarray:
    cuts = {0, 256}
    for nfa in nfas:
        for edges in nfa.byte_edges:
            for lo, hi, _ in edges:
                cuts.add(lo)
                cuts.add(hi + 1)
    bounds = sorted(cuts)
    cls = np.zeros(256, dtype=np.uint8)
    for i in range(len(bounds) - 1):
        cls[bounds[i] : bounds[i + 1]] = i
    return cls


def _determinize(nfa: _NFA, start: int, end: int, byte_class: np.ndarray, limits, total_so_far):
    """Subset construction; returns (trans list of dict cls->dst, calls list of dict rule->dst, finals)."""
    eps = nfa.eps
    cls_of = byte_class.tolist()
    closure_memo: Dict[frozenset, frozenset] = {}

    def closure(states) -> frozenset:
        key = frozenset(states)
        got = closure_memo.get(key)
        if got is not None:
            return got
        seen = set(key)
        stack = list(key)
        while stack:
            s = stack.pop()
            for t in eps[s]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        # only states with outgoing non-epsilon edges (or the end) matter for identity
        res = frozenset(s for s in seen if nfa.byte_edges[s] or nfa.calls[s] or s == end)
        closure_memo[key] = res
        return res

    s0 = closure([start])
    index = {s0: 0}
    todo = [s0]
    # NFA states held by all subsets so far: the memory and time the construction really costs.
    # The DFA can stay small while its subsets grow with it (nested repeats of nullable items:
    # (a{0,100}){0,100} has 10,001 DFA states holding ~50M NFA states), so bound their sum.
    held = len(s0)
    held_cap = limits.max_nfa_states
    trans: List[Dict[int, int]] = []
    calls: List[Dict[int, int]] = []
    finals: List[bool] = []
    while len(trans) < len(todo):
        d = todo[len(trans)]  # states are numbered in discovery order
        if not len(trans) & 255:
            deadline.check()
        by_cls: Dict[int, set] = {}
        by_rule: Dict[int, set] = {}
        for s in d:
            for lo, hi, t in nfa.byte_edges[s]:
                for c in range(cls_of[lo], cls_of[hi] + 1):
                    by_cls.setdefault(c, set()).add(t)
            for r, t in nfa.calls[s]:
                by_rule.setdefault(r, set()).add(t)
        row_t: Dict[int, int] = {}
        target_memo: Dict[frozenset, int] = {}
        for c, ts in by_cls.items():
            key = frozenset(ts)
            dst = target_memo.get(key)
            if dst is None:
                dd = closure(ts)
                dst = index.get(dd)
                if dst is None:
                    dst = index[dd] = len(todo)
                    todo.append(dd)
                    if total_so_far + len(todo) > limits.max_states:
                        raise GrammarLimitError(
                            f"grammar needs more than {limits.max_states} automaton states "
                            "(CompileLimits.max_automaton_states)",
                            rule=nfa.rule,
                        )
                    held += len(dd)
                    if held > held_cap:
                        _subset_limit(held_cap, nfa.rule)
                target_memo[key] = dst
            row_t[c] = dst
        row_c: Dict[int, int] = {}
        for r, ts in by_rule.items():
            dd = closure(ts)
            dst = index.get(dd)
            if dst is None:
                dst = index[dd] = len(todo)
                todo.append(dd)
                held += len(dd)
                if held > held_cap:
                    _subset_limit(held_cap, nfa.rule)
            row_c[r] = dst
        trans.append(row_t)
        calls.append(row_c)
        finals.append(end in d)
    return trans, calls, finals


def _subset_limit(cap: int, rule: str) -> None:
    raise GrammarLimitError(
        f"determinizing the grammar holds more than {cap} NFA states in its state sets "
        "(CompileLimits.max_nfa_states) (nested or ambiguous repeats?)", rule=rule)


def refine_partition(block: np.ndarray, table: np.ndarray) -> np.ndarray:
    """One Moore round (Cython kernel ``_partition.refine_round``): states keep a block iff they
    had one and every column's target (a state index, -1 = none) lies in one block.  Returns
    dense new block ids (int64, 0..m-1); ``refine_partition_reference`` is its numpy twin."""
    table = np.ascontiguousarray(table, dtype=np.int32)
    return refine_round(np.ascontiguousarray(block, dtype=np.int64), table)


def refine_partition_reference(block: np.ndarray, table: np.ndarray) -> np.ndarray:
    """One Moore round: states keep a block iff they had one and every column's target (a state
    index, -1 = none) lies in one block.  Returns dense new block ids (int64, 0..m-1).

    Rows are folded one column at a time through 1-D ``np.unique`` (fast), never hashed, so
    distinct signatures can never collide.
    """
    n_prev = int(block.max()) + 2 if len(block) else 1
    lookup = np.append(block, -1) + 1  # -1 (no target) -> 0
    key = np.unique(block, return_inverse=True)[1].reshape(-1).astype(np.int64)
    n_key = int(key.max()) + 1 if len(key) else 1
    limit = 1 << 62
    col = 0
    while col < table.shape[1]:
        # pack as many columns as fit exactly into one int64 before re-densifying
        while col < table.shape[1] and n_key * n_prev < limit:
            key = key * n_prev + lookup[table[:, col]]
            n_key *= n_prev
            col += 1
        key = np.unique(key, return_inverse=True)[1].reshape(-1).astype(np.int64)
        n_key = int(key.max()) + 1 if len(key) else 1
    return key


def _minimize(trans, calls, finals, n_classes: int, budget: int = 5_000_000):
    """Moore partition refinement, vectorized; returns (trans, calls, finals), start stays 0.

    Refinement needs up to n rounds (a chain of n states splits one state per round), so the
    work is capped: past ``budget`` cell updates the automaton is returned unminimized, which is
    equally correct, only larger.
    """
    n = len(trans)
    callees = sorted({r for row in calls for r in row})
    col_of = {r: nc for nc, r in enumerate(callees, start=n_classes)}
    width = n_classes + len(callees)
    table = np.full((n, width), -1, dtype=np.int32)
    for st in range(n):
        for c, t in trans[st].items():
            table[st, c] = t
        for r, t in calls[st].items():
            table[st, col_of[r]] = t
    block = np.asarray(finals, dtype=np.int64)
    n_blocks = len(set(finals))
    work = 0
    while True:
        new_block = refine_partition(block, table)
        m = int(new_block.max()) + 1
        if m == n_blocks:
            break
        block, n_blocks = new_block, m
        work += n * (width + 1)
        if work > budget:
            return trans, calls, finals
    if n_blocks == n:
        return trans, calls, finals
    # renumber blocks in order of first appearance so the start state stays 0
    order: Dict[int, int] = {}
    for b in block.tolist():
        order.setdefault(b, len(order))
    rep: Dict[int, int] = {}
    for st, b in enumerate(block.tolist()):
        rep.setdefault(order[b], st)
    blk = [order[b] for b in block.tolist()]
    new_trans = [{c: blk[t] for c, t in trans[rep[i]].items()} for i in range(n_blocks)]
    new_calls = [{r: blk[t] for r, t in calls[rep[i]].items()} for i in range(n_blocks)]
    new_finals = [finals[rep[i]] for i in range(n_blocks)]
    return new_trans, new_calls, new_finals


def build_automaton(grammar: Grammar, limits: AutomatonLimits = AutomatonLimits()) -> Automaton:
    """Compile ``grammar`` into an :class:`Automaton` (raises GrammarError on left recursion)."""
    grammar = _inline_small_rules(grammar, limits)
    names = _reachable_rules(grammar)
    rule_index = {n: i for i, n in enumerate(names)}
    rules = grammar.rules
    nfas, bounds = [], []
    templates: dict = {}
    for name in names:
        nfa = _NFA(limits, name, templates)
        s = nfa.new()
        e = nfa.build(rules[name], s, rule_index)
        nfas.append(nfa)
        bounds.append((s, e))
    byte_class = _byte_classes(nfas)
    n_classes = int(byte_class.max()) + 1

    per_rule = []
    total = 0
    for nfa, (s, e) in zip(nfas, bounds):
        t, c, f = _determinize(nfa, s, e, byte_class, limits, total)
        t, c, f = _minimize(t, c, f, n_classes)
        per_rule.append((t, c, f))
        total += len(t)
    if total > limits.max_states:
        raise GrammarLimitError(f"grammar needs {total} automaton states (limit {limits.max_states}, "
                                "CompileLimits.max_automaton_states)")

    rule_start = np.zeros(len(names), dtype=np.int32)
    off = 0
    for r, (t, _, _) in enumerate(per_rule):
        rule_start[r] = off
        off += len(t)
    n_states = off
    trans = np.full(n_states * n_classes, -1, dtype=np.int32)
    flags = np.zeros(n_states, dtype=np.uint8)
    state_rule = np.zeros(n_states, dtype=np.int32)
    raw_calls: List[List[Tuple[int, int]]] = [[] for _ in range(n_states)]
    for r, (t, c, f) in enumerate(per_rule):
        base = int(rule_start[r])
        for i in range(len(t)):
            g = base + i
            state_rule[g] = r
            for cls, dst in t[i].items():
                trans[g * n_classes + cls] = base + dst
            if t[i]:
                flags[g] |= FLAG_HAS_BYTES
            if f[i]:
                flags[g] |= FLAG_FINAL
            raw_calls[g] = sorted((int(rule_start[callee]), base + dst) for callee, dst in c[i].items())
    _prune_unproductive(trans, flags, raw_calls, rule_start, n_classes, names)
    for g in range(n_states):
        if flags[g] & FLAG_FINAL and not flags[g] & FLAG_HAS_BYTES and not raw_calls[g]:
            flags[g] |= FLAG_EXIT_ONLY

    call_offsets = np.zeros(n_states + 1, dtype=np.int32)
    call_target, call_ret = [], []
    for g in range(n_states):
        for callee_start, ret in raw_calls[g]:
            call_target.append(callee_start)
            call_ret.append(-1 if flags[ret] & FLAG_EXIT_ONLY else ret)
        call_offsets[g + 1] = len(call_target)

    auto = Automaton(
        rule_names=names,
        root_start=int(rule_start[0]),
        rule_start=rule_start,
        state_rule=state_rule,
        n_states=n_states,
        n_classes=n_classes,
        byte_class=byte_class,
        trans=trans,
        flags=flags,
        call_offsets=call_offsets,
        call_target=np.asarray(call_target, dtype=np.int32),
        call_ret=np.asarray(call_ret, dtype=np.int32),
        raw_calls=raw_calls,
    )
    _analyze(auto)
    _check_context_work(auto, limits.max_context_work)
    return auto


def _check_context_work(auto: Automaton, cap: int) -> None:
    """Refuse, before any token is classified, an automaton whose token-mask cache would walk
    each byte-reading state of a rule into every place the rule returns to, when that product
    passes ``cap``: a recursive rule called from inside ``{0,10000}`` has 10,000 return
    sites and 20,000 such states, and classifying them takes minutes."""
    n_rules = len(auto.rule_names)
    reads = np.bincount(auto.state_rule[(auto.flags & FLAG_HAS_BYTES) != 0], minlength=n_rules)
    work = 0
    for r in np.nonzero(reads)[0].tolist():
        work += int(reads[r]) * len(auto.rule_ctx_states[r])
        if work > cap:
            raise GrammarLimitError(
                f"the token-mask cache would walk more than {cap} (state, return site) pairs "
                "(CompileLimits.max_context_work): a recursive rule is called from too many "
                "places (inside a large repeat?)", rule=auto.rule_names[r])


def _prune_unproductive(trans, flags, raw_calls, rule_start, n_classes, names) -> None:
    """Drop every edge into a state from which the rule can never finish.

    Such dead ends (``bad ::= "y" bad``) would let the matcher accept bytes after which no
    complete sentence exists; masks must only allow tokens that can still lead to the end.
    Raises GrammarError if the root rule itself can never finish.
    """
    n = len(flags)
    table = trans.reshape(n, n_classes) if n else trans.reshape(0, n_classes)
    # Backward worklist over reversed edges: O(edges), where a round-based fixpoint costs
    # O(states x chain length) on long string chains.
    src_state, src_cls = np.nonzero(table >= 0)
    dst = table[src_state, src_cls]
    order = np.argsort(dst, kind="stable")
    rev_src = src_state[order].tolist()
    rev_off = np.searchsorted(dst[order], np.arange(n + 1)).tolist()
    # call (callee, ret) at st fires once both ends are productive
    call_waiters: Dict[int, List[Tuple[int, int, int]]] = {}
    for st in range(n):
        for c, r in raw_calls[st]:
            call_waiters.setdefault(c, []).append((st, c, r))
            if r != c:
                call_waiters.setdefault(r, []).append((st, c, r))
    prod = ((flags & FLAG_FINAL) != 0).tolist()
    work = [st for st in range(n) if prod[st]]
    while work:
        t = work.pop()
        for k in range(rev_off[t], rev_off[t + 1]):
            s = rev_src[k]
            if not prod[s]:
                prod[s] = True
                work.append(s)
        for s, c, r in call_waiters.get(t, ()):
            if not prod[s] and prod[c] and prod[r]:
                prod[s] = True
                work.append(s)
    productive = np.asarray(prod, dtype=bool)
    if n and not productive[int(rule_start[0])]:
        raise GrammarError("the grammar has no complete sentence (its root can never finish)",
                           rule=names[0])
    if productive.all():
        return
    dead = ~productive
    table[dead, :] = -1
    has = table >= 0
    kill = np.zeros_like(has)
    kill[has] = dead[table[has]]
    table[kill] = -1
    for st in range(n):
        calls = raw_calls[st]
        if calls:
            raw_calls[st] = [(c, r) for c, r in calls if prod[c] and prod[r]]
    flags[~(table >= 0).any(axis=1)] &= ~np.uint8(FLAG_HAS_BYTES)


def _analyze(auto: Automaton) -> None:
    """Nullable states, left-recursion check, FIRST byte sets and per-rule FOLLOW byte sets."""
    n = auto.n_states
    nc = auto.n_classes
    flags = auto.flags
    raw_calls = auto.raw_calls
    rule_start = auto.rule_start.tolist()
    start_rule = {s: r for r, s in enumerate(rule_start)}
    # bytes leaving each state, as a 256-bit int
    cls_bytes = [0] * nc
    for b in range(256):
        cls_bytes[int(auto.byte_class[b])] |= 1 << b
    own = [0] * n
    trans = auto.trans.reshape(n, nc) if n else auto.trans.reshape(0, nc)
    for c in range(nc):
        bits = cls_bytes[c]
        for s in np.nonzero(trans[:, c] >= 0)[0].tolist():
            own[s] |= bits
    # the fixpoints below only change at states that call a rule
    callers = [s for s in range(n) if raw_calls[s]]

    nullable = (flags & FLAG_FINAL).astype(bool).tolist()
    changed = True
    while changed:
        changed = False
        for s in callers:
            if not nullable[s]:
                for callee, ret in raw_calls[s]:
                    if nullable[callee] and nullable[ret]:
                        nullable[s] = changed = True
                        break

    # Left recursion: rule A reaches a call of B without consuming a byte.
    n_rules = len(rule_start)
    left_edges: List[set] = [set() for _ in range(n_rules)]
    for r in range(n_rules):
        seen, stack = {rule_start[r]}, [rule_start[r]]
        while stack:
            s = stack.pop()
            for callee, ret in raw_calls[s]:
                left_edges[r].add(start_rule[callee])
                if nullable[callee] and ret not in seen:
                    seen.add(ret)
                    stack.append(ret)
    _check_left_recursion(left_edges, auto.rule_names)

    first = list(own)
    changed = True
    while changed:
        changed = False
        for s in callers:
            m = first[s]
            for callee, ret in raw_calls[s]:
                m |= first[callee]
                if nullable[callee]:
                    m |= first[ret]
            if m != first[s]:
                first[s] = m
                changed = True

    follow = [0] * n_rules
    changed = True
    state_rule = auto.state_rule.tolist()
    while changed:
        changed = False
        for s in callers:
            p = state_rule[s]
            for callee, ret in raw_calls[s]:
                r = start_rule[callee]
                m = follow[r] | first[ret]
                if nullable[ret]:
                    m |= follow[p]
                if m != follow[r]:
                    follow[r] = m
                    changed = True
    # Return contexts: where each rule's frame can return to (following tail calls upward), and
    # the bytes that can follow those callers once they finish.  The cache builder continues
    # its walk there instead of giving up at the rule's end.
    sites: List[List[Tuple[int, int]]] = [[] for _ in range(n_rules)]
    call_ret = auto.call_ret.tolist()
    call_target = auto.call_target.tolist()
    offsets = auto.call_offsets.tolist()
    for s in range(n):
        for k in range(offsets[s], offsets[s + 1]):
            sites[start_rule[call_target[k]]].append((state_rule[s], call_ret[k]))
    auto.rule_ctx_states = []
    auto.rule_ctx_follow = np.zeros((n_rules, 256), dtype=np.uint8)
    sorted_memo: Dict[int, Tuple[List[int], int]] = {}
    for r, rets in enumerate(_return_contexts(sites)):
        got = sorted_memo.get(id(rets))
        if got is None:
            m = 0
            for rule in {state_rule[ret] for ret in rets}:
                m |= follow[rule]
            got = sorted_memo[id(rets)] = (sorted(rets), m)
        auto.rule_ctx_states.append(got[0])
        auto.rule_ctx_follow[r] = _bits256(got[1])
    auto.nullable = np.asarray(nullable, dtype=np.bool_)
    auto.first_bytes = first
    auto.rule_follow = np.zeros((n_rules, 256), dtype=np.uint8)
    for r in range(n_rules):
        auto.rule_follow[r] = _bits256(follow[r])


def _return_contexts(sites: List[List[Tuple[int, int]]]) -> List[frozenset]:
    """Per rule: the return states its frame can reach, following tail calls (ret -1) up to
    their callers.  Strongly connected components of the tail-caller graph are solved once each,
    callers' components first, so the cost is one pass over the call sites plus the set unions,
    not a search per rule."""
    parents = [sorted({p for p, ret in s if ret < 0}) for s in sites]
    result: List[frozenset] = [frozenset()] * len(sites)
    for comp in strongly_connected_components(range(len(sites)), parents.__getitem__):
        members = set(comp)
        own = {ret for x in comp for _, ret in sites[x] if ret >= 0}
        outer = {id(result[p]): result[p] for x in comp for p in parents[x] if p not in members}
        if not own and len(outer) == 1:
            rets = next(iter(outer.values()))  # share the caller's set
        else:
            rets = frozenset(own.union(*outer.values()))
        for x in comp:
            result[x] = rets
    return result


def _bits256(m: int) -> np.ndarray:
    """A 256-bit int as 256 uint8 flags (bit b -> index b)."""
    return np.unpackbits(np.frombuffer(m.to_bytes(32, "little"), dtype=np.uint8), bitorder="little")


def _check_left_recursion(edges: List[set], names: List[str]) -> None:
    WHITE, GREY, BLACK = 0, 1, 2
    color = [WHITE] * len(edges)
    for root in range(len(edges)):
        if color[root] != WHITE:
            continue
        path = [root]
        iters = [iter(sorted(edges[root]))]
        color[root] = GREY
        while iters:
            nxt = next(iters[-1], None)
            if nxt is None:
                color[path.pop()] = BLACK
                iters.pop()
            elif color[nxt] == GREY:
                cycle = path[path.index(nxt) :] + [nxt]
                raise GrammarError(
                    "left recursion is not supported: " + " -> ".join(names[i] for i in cycle),
                    rule=names[nxt],
                )
            elif color[nxt] == WHITE:
                color[nxt] = GREY
                path.append(nxt)
                iters.append(iter(sorted(edges[nxt])))
