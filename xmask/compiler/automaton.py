"""Grammar IR -> flat byte-level pushdown automaton (one deterministic automaton per rule).

Each rule becomes an epsilon-free automaton whose edges are either byte classes (deterministic:
one target per byte) or calls of another rule with a return state.  All states get one global
numbering so the runtime needs only flat arrays:

* ``byte_class[256]``: global byte equivalence classes (bytes no edge distinguishes share one)
* ``trans[state * n_classes + cls]``: target state or -1
* ``flags[state]``: ``FLAG_FINAL | FLAG_HAS_BYTES | FLAG_EXIT_ONLY | FLAG_TOKEN``
* ``token_set_of[state]`` / ``token_target[state]``: for a ``FLAG_TOKEN`` state (the start of
  a token rule, ``token_rules.py``) the index of its token set and the state its token edge
  leads to; -1 elsewhere.  ``token_bits`` (set by the compiler, which knows the vocabulary):
  one bitset row of allowed ids per token set
* ``call_offsets[state] .. call_offsets[state+1]`` into ``call_target`` (callee start state) and
  ``call_ret`` (return state, or -1 when the return state is exit-only: a tail call, so the
  callee returns straight to our caller and right recursion does not grow the stack)

Left recursion is rejected with the cycle named; nullable rules and epsilon alternatives are fine.

Phases: inlining decisions (here), one NFA for all rules (``_nfa_build``, compiled), a minimal
DFA per rule (``dfa`` -> ``_determinize``, GIL released; ``dfa_reference`` is its pure-Python
twin), assembly, pruning and analysis (``_analysis``, ``_rule_graph``, GIL released).

Example::

    >>> from xmask.grammar.ir import Grammar, Bytes, Repeat, CharClass
    >>> a = build_automaton(Grammar({"root": Repeat(CharClass(((97, 98),)), 1, None)}))
    >>> a.n_states, a.n_classes
    (2, 3)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import numpy as np

from ..errors import GrammarError, GrammarLimitError
from ..grammar.ir import Grammar, RuleRef
from ..grammar.string_format import JSON_CHAR_TAIL
from ._analysis import (analyze, assemble_calls, assemble_states, context_work_over,
                        prune_unproductive)
from ._rule_graph import has_cycle, return_contexts
from ._partition import refine_round
from .dfa import dfa_of_fragment, rule_dfas
from ._nfa_build import NFA
from ._rule_scan import callee_first, distinct_refs, reachable_called, rule_sizes
from .nfa import byte_classes
from .nfa import flatten_repeat as _flatten_repeat  # noqa: F401  (tests import it from here)

FLAG_FINAL = 1
FLAG_HAS_BYTES = 2
FLAG_EXIT_ONLY = 4
FLAG_TOKEN = 8  # start of a token rule: no byte edge, one token edge (see token_rules.py)
FLAG_STUB = 16  # start of a rule not built yet: a top with no edge (see lazy_schema.py)


@dataclass(frozen=True)
class AutomatonLimits:
    """Caps that bound compile work; exceeding one raises ``GrammarLimitError``."""

    max_nfa_states: int = 2_000_000
    max_states: int = 200_000
    max_repeat: int = 10_000
    inline_size: int = 400  # non-recursive rules up to this expanded size are inlined
    max_context_work: int = 20_000_000
    max_memory_bytes: int = 1 << 30  # the NFA's and the determinizer's tables, each

    @classmethod
    def from_compile_limits(cls, limits) -> "AutomatonLimits":
        """The automaton caps of a public :class:`xmask.CompileLimits`."""
        # A compiler passes the same (frozen) limits to every compile: the last conversion is
        # kept (building the frozen dataclass cost ~2 us a compile).  One tuple, read and
        # replaced whole, so concurrent compiles see a consistent pair.
        last = _LAST_LIMITS[0]
        if last is not None and last[0] is limits and last[1] is cls:
            return last[2]
        got = cls(max_nfa_states=limits.max_nfa_states, max_states=limits.max_automaton_states,
                  max_repeat=limits.max_repeat, max_context_work=limits.max_context_work,
                  max_memory_bytes=limits.max_compile_memory_bytes)
        _LAST_LIMITS[0] = (limits, cls, got)
        return got


_LAST_LIMITS: list = [None]  # (CompileLimits, class, AutomatonLimits) of the last conversion


class Automaton:
    """The flat automaton of a whole grammar (see module docstring for the array layout)."""

    def __init__(self, **arrays):
        self.__dict__.update(arrays)

    @property
    def raw_calls(self) -> List[List[Tuple[int, int]]]:
        """Per state, its calls as sorted ``(callee start, return state)`` pairs, the return
        state never -1 (built on first use from the compiler's call arrays)."""
        got = self.__dict__.get("_raw_calls")
        if got is None:
            got = [[] for _ in range(self.n_states)]
            target = self.rule_start[self._call_rule].tolist()
            src = np.repeat(np.arange(self.n_states), np.diff(self.call_offsets)).tolist()
            for s, c, r in zip(src, target, self._call_dst.tolist()):
                got[s].append((c, r))
            self._raw_calls = got
        return got

    @property
    def rule_ctx_states(self) -> List[List[int]]:
        """Per rule, its return contexts (sorted states its frame can return to), as lists;
        built on first use from the flat ``rule_ctx_offsets`` / ``rule_ctx_flat`` arrays."""
        got = self.__dict__.get("_rule_ctx_states")
        if got is None:
            got = self.__dict__.get("rule_ctx_states")  # set by a decoder
        if got is None:
            off, flat = self.rule_ctx_offsets.tolist(), self.rule_ctx_flat.tolist()
            got = [flat[off[r]:off[r + 1]] for r in range(len(off) - 1)]
        self.__dict__["_rule_ctx_states"] = got
        return got

    @property
    def rule_ctx_offsets(self) -> np.ndarray:
        """int64 ``n_rules + 1``: rule ``r``'s return contexts are
        ``rule_ctx_flat[rule_ctx_offsets[r]:rule_ctx_offsets[r + 1]]`` (sorted states)."""
        got = self.__dict__.get("_rule_ctx_offsets", self.__dict__.get("rule_ctx_offsets"))
        if got is None:
            self._flatten_ctx()
            got = self.__dict__["_rule_ctx_offsets"]
        return got

    @property
    def rule_ctx_flat(self) -> np.ndarray:
        """int32: every rule's return contexts, concatenated (see ``rule_ctx_offsets``)."""
        got = self.__dict__.get("_rule_ctx_flat", self.__dict__.get("rule_ctx_flat"))
        if got is None:
            self._flatten_ctx()
            got = self.__dict__["_rule_ctx_flat"]
        return got

    def _flatten_ctx(self) -> None:
        ctx = self.rule_ctx_states
        self._rule_ctx_offsets = np.cumsum([0] + [len(c) for c in ctx], dtype=np.int64)
        self._rule_ctx_flat = np.asarray([x for c in ctx for x in c], dtype=np.int32)

    @property
    def rule_follow(self) -> np.ndarray:
        """uint8 ``n_rules x 256``: per rule, the bytes that can follow it (its FOLLOW set),
        built on first use: only the mask cache of a rule called from many places and the
        serializer read it."""
        got = self.__dict__.get("rule_follow")
        if got is None:
            got = self.__dict__["rule_follow"] = _bit_rows(self._follow_words)
        return got

    @rule_follow.setter
    def rule_follow(self, value) -> None:
        self.__dict__["rule_follow"] = value

    @property
    def first_bytes(self) -> List[int]:
        """Per state, the bytes that can be read first from it (through calls of nullable
        prefixes), as a 256-bit int (bit b = byte b)."""
        words = np.ascontiguousarray(self._first_words, dtype="<u8")
        return [int.from_bytes(row.tobytes(), "little") for row in words]

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


class _Inlined:
    """A grammar with its inlining decided: ``bodies`` maps each inlined rule to its body as
    written (it may reference other inlined rules; the NFA builder expands them in place),
    ``sizes`` their expanded sizes, ``refs`` every rule's distinct references in order."""

    __slots__ = ("rules", "root", "bodies", "sizes", "refs")

    def __init__(self, rules, root, bodies, sizes, refs):
        self.rules, self.root, self.bodies, self.sizes, self.refs = rules, root, bodies, sizes, refs


def _reachable_rules(inl: _Inlined) -> List[str]:
    """The called (not inlined) rules reachable from the root, root first, then in grammar
    order."""
    return reachable_called(inl.refs, inl.bodies, inl.root, inl.rules)


def _inline_small_rules(grammar: Grammar, limits: AutomatonLimits,
                        never: Sequence[str] = (), refs=None) -> _Inlined:
    """Decide which small non-recursive rules are inlined into their callers.

    A call into a tiny rule (a JSON string character, a digit run, whitespace) would otherwise
    make the rule's end a context-dependent point for almost every token; inside the caller the
    same bytes are ordinary transitions and the cache can classify them exactly.  Nothing is
    rewritten here: the NFA builder expands references to inlined rules where it meets them.
    """
    rules = grammar.rules
    root = grammar.root
    if refs is None:
        refs = {n: distinct_refs(e) for n, e in rules.items()}
    cap = limits.inline_size + 1
    bodies: Dict[str, object] = {}
    sizes: Dict[str, int] = {}
    # callees first: depth-first post-order over non-recursive rules (the rest stay calls)
    order = callee_first(refs, root)
    # A reference counts its callee's size, so a body's size is its expanded size.
    for name, size in zip(order, rule_sizes(rules, order, cap, refs)):
        sizes[name] = size
        if size <= limits.inline_size and name not in never and not _kept_called(rules[name]):
            bodies[name] = rules[name]
    return _Inlined(rules, root, bodies, {n: sizes[n] for n in bodies}, refs)


def _kept_called(body) -> bool:
    # The shared tail of long bounded strings' characters stays one called rule: inlined, each
    # character position would get its ~20 states back (json_schema/strings.py).
    # (the converter passes the object itself; an equal copy is compared, after a cheap
    # filter: a deep dataclass comparison of every small rule's body was ~0.5 us each)
    return body is JSON_CHAR_TAIL or (
        type(body) is _TAIL_KIND and len(body.items) == _TAIL_LEN and body == JSON_CHAR_TAIL)


_TAIL_KIND, _TAIL_LEN = type(JSON_CHAR_TAIL), len(JSON_CHAR_TAIL.items)


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


def _build_nfas(inl: _Inlined, names: List[str], limits: AutomatonLimits, reference: bool):
    """One NFA for every rule in ``names``; returns (arrays, starts, ends)."""
    rule_index = {n: i for i, n in enumerate(names)}
    rules = inl.rules
    nfa = NFA(limits, dfa_of_fragment(reference), inline=(inl.bodies, inl.sizes))
    starts, ends = [], []
    for name in names:
        s, e = nfa.add_rule(name, rules[name], rule_index)
        starts.append(s)
        ends.append(e)
    return nfa.arrays(), starts, ends


def _byte_classes(arrays) -> np.ndarray:
    return byte_classes(arrays)


def _build_rule_dfas(arrays, byte_class, starts, ends, names, limits, reference, threads=1):
    return rule_dfas(arrays, byte_class, starts, ends, names, limits, 0, reference, runs=True,
                     threads=threads)


def build_automaton(grammar: Grammar, limits: AutomatonLimits = AutomatonLimits(), *,
                    reference: bool = False, token_rules: Sequence[str] = (),
                    refs=None, threads: int = 1, stubs: Sequence[str] = ()) -> Automaton:
    """Compile ``grammar`` into an :class:`Automaton` (raises GrammarError on left recursion).

    ``reference=True`` determinizes and minimizes with the slow pure-Python twin (tests
    compare the two; the languages are equal, state numbers may differ).  ``token_rules``:
    the names of the grammar's token rules, in token-set order (``token_rules.py``); each
    stays a called rule whose placeholder byte edge becomes a token edge.  ``refs``: every
    rule's ``distinct_refs`` when the caller has them already (``special_literals``' scan).
    ``threads``: how many threads a large grammar's rule DFAs may be built on (the automaton
    does not depend on it).  ``stubs``: rules not built yet (a lazy compile's first part,
    ``lazy_schema.py``), each given as a placeholder body of one ASCII byte: it stays a called
    rule, every pass sees it as that byte (productive, not nullable, FIRST = ASCII), and its
    start state then loses its edge and gets ``FLAG_STUB`` (``has_stubs`` is set).
    """
    budgets = grammar.budgets
    if grammar.root in budgets:
        # the root's budget needs a call (the runtime counts tokens per call of a budgeted rule)
        rules = grammar.rules
        wrapper = _fresh_name(rules, "root_budget")
        rules[wrapper] = RuleRef(grammar.root)
        if refs is not None:
            refs = {**refs, wrapper: [grammar.root]}
        grammar = Grammar(rules, root=wrapper, budgets=budgets)
    inl = _inline_small_rules(grammar, limits,
                              never=tuple(token_rules) + tuple(budgets) + tuple(stubs), refs=refs)
    names = _reachable_rules(inl)
    arrays, starts, ends = _build_nfas(inl, names, limits, reference)
    byte_class = _byte_classes(arrays)
    n_classes = int(byte_class[255]) + 1  # classes are byte ranges numbered in byte order
    rule_base, table, finals, csrc, crule, cdst, runs = _build_rule_dfas(
        arrays, byte_class, starts, ends, names, limits, reference, threads)
    n_states = int(rule_base[-1])
    if n_states > limits.max_states:
        raise GrammarLimitError(f"grammar needs {n_states} automaton states (limit {limits.max_states}, "
                                "CompileLimits.max_automaton_states)")
    table = np.ascontiguousarray(table, dtype=np.int32)
    # FLAG_FINAL here; FLAG_HAS_BYTES is set by the pruning pass (on the edges it keeps)
    rule_start, state_rule, flags, calls_sorted = assemble_states(rule_base, finals, csrc, crule)
    if not calls_sorted:
        # calls sorted by (state, callee start); one return state per (state, callee)
        order = np.lexsort((rule_start[crule], csrc))
        csrc, crule, cdst = csrc[order], crule[order], cdst[order]
    csrc, crule, cdst, runs = _prune_unproductive(table, flags, csrc, crule, cdst, rule_start,
                                                  names, runs)
    token_set_of, token_target = _token_edges(table, flags, byte_class, rule_start, names,
                                              token_rules)
    # a budgeted rule is never tail-called: the runtime keeps a frame that counts its tokens
    rule_budget = np.asarray([budgets.get(n, -1) for n in names], dtype=np.int32)
    call_offsets, call_target, call_ret = assemble_calls(flags, csrc, crule, cdst, rule_start,
                                                         rule_budget)
    auto = Automaton(
        rule_names=names,
        root_start=int(rule_start[0]),
        rule_start=rule_start,
        state_rule=state_rule,
        n_states=n_states,
        n_classes=n_classes,
        byte_class=byte_class,
        trans=table.reshape(-1),
        flags=flags,
        call_offsets=call_offsets,
        call_target=call_target,
        call_ret=call_ret,
        rule_budget=rule_budget,
        _call_rule=crule,
        _call_dst=cdst,
        token_set_of=token_set_of,
        token_target=token_target,
        token_bits=np.zeros((0, 0), dtype=np.uint32),
    )
    _analyze(auto, state_rule[csrc], runs)
    _check_context_work(auto, limits.max_context_work)
    auto.has_stubs = _cut_stubs(auto, stubs) if stubs else False
    return auto


def _cut_stubs(auto: Automaton, stubs: Sequence[str]) -> bool:
    """Remove each stub rule's placeholder edge (after every pass has seen it, so the stubs'
    callers stay productive and their FIRST / FOLLOW sets cover any real body) and flag its
    start; whether any stub is reachable."""
    index = {name: r for r, name in enumerate(auto.rule_names)}
    nc = auto.n_classes
    found = False
    for name in stubs:
        r = index.get(name)
        if r is None:
            continue  # not reachable from the root
        s = int(auto.rule_start[r])
        auto.trans[s * nc:(s + 1) * nc] = -1
        auto.flags[s] |= FLAG_STUB
        found = True
    return found


def _fresh_name(rules, hint: str) -> str:
    name, k = hint, 1
    while name in rules:
        k += 1
        name = f"{hint}_{k}"
    return name


def _token_edges(table, flags, byte_class, rule_start, names, token_rules):
    """Turn each token rule's placeholder byte edge into its token edge (``table`` and
    ``flags`` in place); returns ``(token_set_of, token_target)`` per state."""
    n = len(flags)
    # one allocation for both rows (a compile pays this for every grammar)
    token_set_of, token_target = np.full((2, n), -1, dtype=np.int32)
    if not token_rules:
        return token_set_of, token_target
    index = {name: r for r, name in enumerate(names)}
    cls = int(byte_class[0])  # the placeholder's byte
    for k, name in enumerate(token_rules):
        r = index.get(name)
        if r is None:
            continue  # not reachable from the root
        s = int(rule_start[r])
        target = int(table[s, cls])
        if target < 0:
            raise AssertionError(f"token rule {name!r} lost its placeholder edge")
        table[s, :] = -1
        flags[s] = (int(flags[s]) & ~FLAG_HAS_BYTES) | FLAG_TOKEN
        token_set_of[s] = k
        token_target[s] = target
    return token_set_of, token_target


def _check_context_work(auto: Automaton, cap: int) -> None:
    """Refuse, before any token is classified, an automaton whose token-mask cache would walk
    each byte-reading state of a rule into every place the rule returns to, when that product
    passes ``cap``: a recursive rule called from inside ``{0,10000}`` has 10,000 return
    sites and 20,000 such states, and classifying them takes minutes."""
    r = context_work_over(auto.flags, auto.state_rule, auto.rule_ctx_offsets, cap)
    if r >= 0:
        raise GrammarLimitError(
            f"the token-mask cache would walk more than {cap} (state, return site) pairs "
            "(CompileLimits.max_context_work): a recursive rule is called from too many "
            "places (inside a large repeat?)", rule=auto.rule_names[r])


def _prune_unproductive(table, flags, csrc, crule, cdst, rule_start, names, runs=None):
    """Drop every edge into a state from which the rule can never finish (``table`` and
    ``flags`` in place; sets FLAG_HAS_BYTES on the states left with an edge); returns the
    calls kept ``(src, callee rule, return state)`` and ``runs`` (the table's rows as runs,
    read instead of its dense rows), or None once an edge was dropped.

    Such dead ends (``bad ::= "y" bad``) would let the matcher accept bytes after which no
    complete sentence exists; masks must only allow tokens that can still lead to the end.
    Raises GrammarError if the root rule itself can never finish.
    """
    productive, keep, dropped = prune_unproductive(table, flags, csrc, crule, cdst, rule_start,
                                                   runs)
    if len(flags) and not productive[int(rule_start[0])]:
        raise GrammarError("the grammar has no complete sentence (its root can never finish)",
                           rule=names[0])
    if dropped:
        runs = None
    if np.count_nonzero(keep) == len(keep):  # (a fraction of ``.all()``'s cost on a few calls)
        return csrc, crule, cdst, runs
    keep = keep.view(bool)
    return csrc[keep], crule[keep], cdst[keep], runs


def _analyze(auto: Automaton, caller_rule=None, runs=None) -> None:
    """Nullable states, left-recursion check, FIRST byte sets and per-rule FOLLOW byte sets,
    and each rule's return contexts.  ``caller_rule``: each call's calling rule, when the
    caller has it at hand; ``runs``: the table's rows as runs (see ``_prune_unproductive``)."""
    n = auto.n_states
    n_rules = len(auto.rule_names)
    crule, cdst = auto._call_rule, auto._call_dst
    nullable, first, follow, left = analyze(
        auto.trans.reshape(n, auto.n_classes), auto.flags, auto.byte_class, auto.call_offsets,
        crule, cdst, auto.rule_start, auto.state_rule, runs)
    if has_cycle(left, n_rules):
        left_edges: List[set] = [set() for _ in range(n_rules)]
        for r, callee in left.tolist():
            left_edges[r].add(callee)
        _check_left_recursion(left_edges, auto.rule_names)
    # Return contexts: where each rule's frame can return to (following tail calls upward), and
    # the bytes that can follow those callers once they finish.  The cache builder continues
    # its walk there instead of giving up at the rule's end.
    if caller_rule is None:
        caller_rule = np.repeat(auto.state_rule, np.diff(auto.call_offsets))
    auto._rule_ctx_offsets, auto._rule_ctx_flat, ctx_follow = return_contexts(
        crule, caller_rule, auto.call_ret, auto.state_rule, follow, n)
    auto.rule_ctx_follow = _bit_rows(ctx_follow)
    auto.nullable = nullable.view(np.bool_)
    auto._first_words = first
    auto._follow_words = follow  # rule_follow's words (unpacked on first use)


def _bit_rows(words: np.ndarray) -> np.ndarray:
    """Rows of four uint64 words (bit b of word b >> 6) as rows of 256 uint8 flags."""
    as_bytes = np.ascontiguousarray(words, dtype="<u8").view(np.uint8).reshape(len(words), 32)
    return np.unpackbits(as_bytes, axis=1, bitorder="little")


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
