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
from typing import Dict, List, Tuple

import numpy as np

from .._graph import strongly_connected_components
from ..errors import GrammarError, GrammarLimitError
from ..grammar.ir import Choice, Grammar, Repeat, RuleRef, Seq, iter_refs
from ._partition import refine_round
from .dfa import dfa_of_fragment, rule_dfas
from .nfa import NFA, byte_classes, rule_size
from .nfa import flatten_repeat as _flatten_repeat  # noqa: F401  (tests import it from here)

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
        size = rule_size(body, sizes, cap, size_memo)
        sizes[name] = size
        if size <= limits.inline_size:
            bodies[name] = body
    if not bodies:
        return grammar
    final_memo: Dict[int, object] = {}  # fresh: every body is decided now
    new_rules = {n: _substitute(e, bodies, final_memo) for n, e in rules.items()}
    return Grammar(new_rules, root=grammar.root)


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


def _build_nfas(grammar: Grammar, names: List[str], limits: AutomatonLimits, reference: bool):
    """One NFA for every rule in ``names``; returns (arrays, starts, ends)."""
    rule_index = {n: i for i, n in enumerate(names)}
    rules = grammar.rules
    nfa = NFA(limits, dfa_of_fragment(reference))
    starts, ends = [], []
    for name in names:
        s, e = nfa.add_rule(name, rules[name], rule_index)
        starts.append(s)
        ends.append(e)
    return nfa.arrays(), starts, ends


def _byte_classes(arrays) -> np.ndarray:
    return byte_classes(arrays)


def _build_rule_dfas(arrays, byte_class, starts, ends, names, limits, reference):
    return rule_dfas(arrays, byte_class, starts, ends, names, limits, 0, reference)


def build_automaton(grammar: Grammar, limits: AutomatonLimits = AutomatonLimits(), *,
                    reference: bool = False) -> Automaton:
    """Compile ``grammar`` into an :class:`Automaton` (raises GrammarError on left recursion).

    ``reference=True`` determinizes and minimizes with the slow pure-Python twin (tests
    compare the two; the languages are equal, state numbers may differ).
    """
    grammar = _inline_small_rules(grammar, limits)
    names = _reachable_rules(grammar)
    arrays, starts, ends = _build_nfas(grammar, names, limits, reference)
    byte_class = _byte_classes(arrays)
    n_classes = int(byte_class.max()) + 1
    rule_base, table, finals, csrc, crule, cdst = _build_rule_dfas(
        arrays, byte_class, starts, ends, names, limits, reference)
    total = int(rule_base[-1])
    if total > limits.max_states:
        raise GrammarLimitError(f"grammar needs {total} automaton states (limit {limits.max_states}, "
                                "CompileLimits.max_automaton_states)")
    n_states = total
    rule_start = np.ascontiguousarray(rule_base[:-1], dtype=np.int32)
    trans = np.ascontiguousarray(table, dtype=np.int32).reshape(-1)
    flags = np.zeros(n_states, dtype=np.uint8)
    flags[finals != 0] |= FLAG_FINAL
    if n_states:
        flags[(table >= 0).any(axis=1)] |= FLAG_HAS_BYTES
    state_rule = np.repeat(np.arange(len(names), dtype=np.int32), np.diff(rule_base))
    raw_calls: List[List[Tuple[int, int]]] = [[] for _ in range(n_states)]
    if len(csrc):
        callee_start = rule_start[crule]
        order = np.lexsort((cdst, callee_start, csrc))
        for g, c, r in zip(csrc[order].tolist(), callee_start[order].tolist(),
                           cdst[order].tolist()):
            raw_calls[g].append((c, r))
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
