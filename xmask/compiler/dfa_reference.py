"""Pure-Python twin of the Cython determinizer/minimizer (``_determinize.build_rule_dfas``).

The original implementation, kept as the reference the tests compare the kernel with (same
language per rule; state numbering may differ) and as the home of the limit errors both raise.
Slow: dicts and frozensets per DFA state.

Example::

    >>> from xmask.grammar.ir import Bytes
    >>> from xmask.compiler._nfa_build import NFA
    >>> from xmask.compiler.nfa import AutomatonLimitsLike, byte_classes
    >>> nfa = NFA(AutomatonLimitsLike(), dfa_of=None)
    >>> s, e = nfa.add_rule("root", Bytes(b"ab"), {})
    >>> arr = nfa.arrays()
    >>> out = rule_dfas_reference(arr, byte_classes(arr), [s], [e], ["root"], AutomatonLimitsLike())
    >>> out[0].tolist(), out[2].tolist()
    ([0, 3], [0, 0, 1])
"""

from __future__ import annotations

from typing import Dict, List

import numpy as np

from .. import _deadline as deadline
from ..errors import GrammarLimitError
from ._partition import refine_round

MINIMIZE_BUDGET = 5_000_000  # cell updates before minimization gives up (result stays correct)


def states_limit(max_states: int, rule: str) -> None:
    raise GrammarLimitError(
        f"grammar needs more than {max_states} automaton states "
        "(CompileLimits.max_automaton_states)",
        rule=rule,
    )


def subset_limit(cap: int, rule: str) -> None:
    raise GrammarLimitError(
        f"determinizing the grammar holds more than {cap} NFA states in its state sets "
        "(CompileLimits.max_nfa_states) (nested or ambiguous repeats?)", rule=rule)


def _determinize(eps, byte_edges, calls, has_out, start: int, end: int, limits, total_so_far,
                 rule: str):
    """Subset construction; returns (trans list of dict cls->dst, calls list of dict rule->dst, finals)."""
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
        res = frozenset(s for s in seen if has_out[s] or s == end)
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
    call_rows: List[Dict[int, int]] = []
    finals: List[bool] = []
    while len(trans) < len(todo):
        d = todo[len(trans)]  # states are numbered in discovery order
        if not len(trans) & 255:
            deadline.check()
        by_cls: Dict[int, set] = {}
        by_rule: Dict[int, set] = {}
        for s in d:
            for lo, hi, t in byte_edges[s]:
                for c in range(lo, hi + 1):
                    by_cls.setdefault(c, set()).add(t)
            for r, t in calls[s]:
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
                        states_limit(limits.max_states, rule)
                    held += len(dd)
                    if held > held_cap:
                        subset_limit(held_cap, rule)
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
                    subset_limit(held_cap, rule)
            row_c[r] = dst
        trans.append(row_t)
        call_rows.append(row_c)
        finals.append(end in d)
    return trans, call_rows, finals


def _minimize(trans, calls, finals, n_classes: int, budget: int = MINIMIZE_BUDGET):
    """Moore partition refinement; returns (trans, calls, finals), start stays 0.

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
        new_block = refine_round(block, table)
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


def rule_dfas_reference(arr, byte_class, starts, ends, names, limits, total_so_far: int = 0):
    """Same contract as ``dfa.rule_dfas`` (minimal DFA per rule, one global numbering)."""
    n_classes = int(byte_class.max()) + 1
    cls_lo = byte_class[arr.b_lo].tolist()
    cls_hi = byte_class[arr.b_hi].tolist()
    b_dst = arr.b_dst.tolist()
    eps_off, eps_dst = arr.eps_off.tolist(), arr.eps_dst.tolist()
    b_off, c_off = arr.b_off.tolist(), arr.c_off.tolist()
    c_rule, c_dst = arr.c_rule.tolist(), arr.c_dst.tolist()
    n = arr.n
    eps = [eps_dst[eps_off[s]:eps_off[s + 1]] for s in range(n)]
    byte_edges = [[(cls_lo[k], cls_hi[k], b_dst[k]) for k in range(b_off[s], b_off[s + 1])]
                  for s in range(n)]
    calls = [[(c_rule[k], c_dst[k]) for k in range(c_off[s], c_off[s + 1])] for s in range(n)]
    has_out = [bool(byte_edges[s] or calls[s]) for s in range(n)]
    rule_base = [0]
    trans_rows, finals_all, csrc, crule, cdst = [], [], [], [], []
    for r, (s, e) in enumerate(zip(starts, ends)):
        t, c, f = _determinize(eps, byte_edges, calls, has_out, s, e, limits, total_so_far,
                               names[r])
        t, c, f = _minimize(t, c, f, n_classes)
        base = rule_base[-1]
        for i in range(len(t)):
            row = [-1] * n_classes
            for cls, dst in t[i].items():
                row[cls] = base + dst
            trans_rows.append(row)
            finals_all.append(bool(f[i]))
            for callee, dst in sorted(c[i].items()):
                csrc.append(base + i)
                crule.append(callee)
                cdst.append(base + dst)
        rule_base.append(base + len(t))
        total_so_far += len(t)
    i32 = np.int32
    return (np.asarray(rule_base, dtype=i32),
            np.asarray(trans_rows, dtype=i32).reshape(-1, n_classes),
            np.asarray(finals_all, dtype=np.uint8), np.asarray(csrc, dtype=i32),
            np.asarray(crule, dtype=i32), np.asarray(cdst, dtype=i32))
